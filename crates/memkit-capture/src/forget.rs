//! What `mem forget` forgets of what capture keeps outside the store: events a hook spooled
//! while the database was busy, which the next hook would otherwise store again. The store's
//! rows are `store::forget`'s; the run end to end is the memkit package's `forget`.

use serde_json::Value;

use memkit_core::Result;
use memkit_core::store::forget::Target;

use crate::spool::Spool;

/// Deletes (with `dry_run`, counts) the spooled events `target` names; `sessions` are the
/// session ids the store forgot whole. Returns how many.
pub fn spooled(
    spool: &Spool,
    target: &Target,
    sessions: &[String],
    dry_run: bool,
) -> Result<usize> {
    spool.forget(dry_run, |v, text| names(target, sessions, v, text))
}

/// Whether a spooled payload (`v`, its text `text`) is among what `target` forgets.
fn names(target: &Target, sessions: &[String], v: &Value, text: &str) -> bool {
    let session = v["session_id"].as_str().unwrap_or("");
    match target {
        Target::Obs(_) => false,
        Target::Session(_) => sessions.iter().any(|s| s == session),
        Target::Project(roots) => {
            let cwd = v["cwd"].as_str().unwrap_or("");
            sessions.iter().any(|s| s == session)
                || roots.iter().any(|r| {
                    cwd == r
                        || cwd
                            .strip_prefix(r.as_str())
                            .is_some_and(|x| x.starts_with('/'))
                })
        }
        Target::Match(t) => {
            let (lower, t) = (text.to_lowercase(), t.to_lowercase());
            let esc = serde_json::to_string(&t).unwrap_or_default();
            lower.contains(&t) || lower.contains(esc.trim_matches('"'))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_is_named_by_its_session_its_directory_or_its_text() {
        let v = serde_json::json!({"session_id": "s-1", "cwd": "/work/app/src"});
        let text = v.to_string();
        let sessions = ["s-1".to_string()];
        assert!(!names(&Target::Obs(vec![1]), &sessions, &v, &text));
        assert!(names(&Target::Session("s-1".into()), &sessions, &v, &text));
        assert!(!names(&Target::Session("s-2".into()), &[], &v, &text));
        let root = |r: &str| Target::Project(vec![r.into()]);
        assert!(names(&root("/work/app"), &[], &v, &text));
        assert!(
            !names(&root("/work/ap"), &[], &v, &text),
            "a prefix is not a parent"
        );
        assert!(names(&Target::Match("WORK/APP".into()), &[], &v, &text));
        assert!(!names(&Target::Match("elsewhere".into()), &[], &v, &text));
    }
}
