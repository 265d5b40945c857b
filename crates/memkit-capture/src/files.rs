//! Which files a tool call touched, from its input.

use serde_json::Value;

/// Keys of tool inputs that name a file or directory.
const PATH_KEYS: &[&str] = &["file_path", "path", "notebook_path"];

/// Files named by a tool call's input (relative paths resolved against `cwd`), deduplicated in
/// order of appearance.
pub fn touched(input: Option<&Value>, cwd: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let Some(input) = input.and_then(Value::as_object) else {
        return out;
    };
    let mut add = |p: &str| {
        let p = resolve(p, cwd);
        if !p.is_empty() && !out.contains(&p) {
            out.push(p);
        }
    };
    for key in PATH_KEYS {
        if let Some(p) = input.get(*key).and_then(Value::as_str) {
            add(p);
        }
    }
    // MultiEdit (and batch-style edits): each edit may name its own file.
    if let Some(edits) = input.get("edits").and_then(Value::as_array) {
        for e in edits {
            for key in PATH_KEYS {
                if let Some(p) = e.get(*key).and_then(Value::as_str) {
                    add(p);
                }
            }
        }
    }
    out
}

pub use memkit_core::project::is_absolute;

pub use memkit_core::project::resolve;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn collects_and_resolves_paths() {
        let input = json!({"file_path": "src/a.rs", "edits": [{"old_string": "x"}, {"file_path": "/abs/b.rs"}]});
        assert_eq!(
            touched(Some(&input), Some("/repo")),
            vec!["/repo/src/a.rs", "/abs/b.rs"]
        );
        let grep = json!({"pattern": "fn main", "path": "./src"});
        assert_eq!(touched(Some(&grep), Some("/repo/")), vec!["/repo/src"]);
        let win = json!({"file_path": "lib\\x.py"});
        assert_eq!(
            touched(Some(&win), Some("C:\\Users\\me\\proj")),
            vec!["C:\\Users\\me\\proj\\lib\\x.py"]
        );
        let winabs = json!({"file_path": "C:\\Users\\me\\proj\\y.py"});
        assert_eq!(
            touched(Some(&winabs), Some("/repo")),
            vec!["C:\\Users\\me\\proj\\y.py"]
        );
    }
}
