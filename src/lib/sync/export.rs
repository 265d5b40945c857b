//! What leaves this machine: the new and changed observations, notes, session summaries and
//! learnings of the opted-in projects, each redacted again by the current redactor (a record
//! in which it still finds something is held back), and a tombstone for each record the remote
//! holds whose row is gone here. Never captures, tool responses, the queue or vectors: only
//! these tables' text is read.

use std::borrow::Cow;
use std::collections::BTreeSet;

use rusqlite::Connection;
use serde::Serialize;
use serde_json::Value;

use crate::Result;
use crate::capture::redact;
use crate::store::sync::{self as st, Exported, Gone, Put};

use super::projects::Projects;
use super::wire::{self, LearningBody, Line, Me, ObservationBody, SessionBody};

/// One record that would leave, or is held back (what `mem sync --dry-run` prints).
#[derive(Debug, Clone, Serialize)]
#[serde(remote = "Self")]
pub struct Item {
    /// `put` (new or changed) or `forget` (a tombstone).
    pub op: &'static str,
    pub kind: String,
    /// Its ref here (`o17`, `l3`) or session id.
    #[serde(rename = "ref")]
    pub handle: String,
    /// The project key it is shared under.
    pub project: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub title: String,
    /// What the redactor still finds in it: it stays here until that is gone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_back: Option<String>,
}
memkit_core::record!(Item = "sync_item");

/// A line to append, with what to record of it once committed.
#[derive(Debug, Clone)]
pub struct Planned {
    pub file: String,
    pub text: String,
    pub item: Item,
    pub kind: &'static str,
    pub gid: String,
    pub local: String,
    pub born: String,
    /// The row's stamp; `None` for a tombstone.
    pub stamp: Option<String>,
    pub hash: Option<String>,
}

/// Everything an export would do.
#[derive(Debug, Default)]
pub struct Plan {
    pub lines: Vec<Planned>,
    /// Rows held back, with the row's bookkeeping.
    pub held: Vec<(Item, HeldRow)>,
    /// (gid, stamp) of rows whose content is what the remote holds already.
    pub unchanged: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
pub struct HeldRow {
    pub gid: String,
    pub kind: &'static str,
    pub local: String,
    pub born: String,
    pub project: String,
}

impl Plan {
    /// The lines a run appends (a record held back from the start has none to write).
    pub fn written(&self) -> impl Iterator<Item = &Planned> {
        self.lines.iter().filter(|l| !l.text.is_empty())
    }

    pub fn puts(&self) -> usize {
        self.lines.iter().filter(|l| l.item.op == "put").count()
    }

    /// Tombstones written (a record held back from the start needs none).
    pub fn forgets(&self) -> usize {
        self.written().filter(|l| l.item.op == "forget").count()
    }

    /// Records what was written and held back: in the transaction that also moves the own
    /// files' offsets past the lines, so a run killed before it reads them back next time.
    pub fn record(&self, conn: &Connection) -> Result<()> {
        for l in &self.lines {
            match (&l.hash, l.item.op) {
                (Some(h), "put") => st::put(
                    conn,
                    &Put {
                        gid: &l.gid,
                        kind: l.kind,
                        local: &l.local,
                        born: &l.born,
                        project: &l.item.project,
                        stamp: l.stamp.as_deref(),
                        hash: h,
                    },
                )?,
                _ => st::unexport(conn, &l.gid)?,
            }
        }
        for (item, h) in &self.held {
            let p = Put {
                gid: &h.gid,
                kind: h.kind,
                local: &h.local,
                born: &h.born,
                project: &h.project,
                stamp: None,
                hash: "",
            };
            st::hold(conn, &p, item.held_back.as_deref().unwrap_or("?"))?;
        }
        for (gid, stamp) in &self.unchanged {
            st::restamp(conn, gid, stamp)?;
        }
        Ok(())
    }
}

/// What would leave now, from the store alone.
pub fn plan(conn: &Connection, me: &Me, projects: &Projects, now: &str) -> Result<Plan> {
    let mut plan = Plan::default();
    for g in st::gone(conn)? {
        tombstone(&mut plan, me, g, now);
    }
    let roots = projects.shared_roots();
    let key_of = |root: Option<&str>| {
        root.and_then(|r| projects.shared.iter().find(|(x, _)| x == r))
            .map(|(r, k)| (r.as_str(), k.as_str()))
    };
    for o in st::observations_to_export(conn, &roots)? {
        let Some((root, key)) = key_of(o.obs.project.as_deref()) else {
            continue;
        };
        let local = o.obs.id.unwrap_or_default().to_string();
        let born = o.obs.created_at.clone().unwrap_or_default();
        let body = ObservationBody {
            session_id: o.obs.session_id.clone(),
            kind: o.obs.kind.clone(),
            title: o.obs.title.clone(),
            summary: o.obs.summary.clone(),
            detail: o.obs.detail.clone(),
            facts: o.obs.facts.clone(),
            concepts: o.obs.concepts.clone(),
            tags: o.obs.tags.clone(),
            files_read: o.obs.files_read.clone(),
            files_modified: o.obs.files_modified.clone(),
            functions_changed: o.obs.functions_changed.clone(),
            is_manual: o.obs.is_manual,
            created_at: born.clone(),
        };
        let check = to_value(&body);
        let mut body = body;
        relative(&mut body.files_read, root);
        relative(&mut body.files_modified, root);
        let body = without_root(to_value(&body), root);
        let row = Row {
            kind: "observation",
            handle: crate::ids::obs(o.obs.id.unwrap_or_default()),
            local,
            born,
            key,
            title: o.obs.title.clone(),
            stamp: o.stamp,
            was: o.was,
        };
        add(&mut plan, me, row, &check, body, now);
    }
    for s in st::sessions_to_export(conn, &roots)? {
        let Some((root, key)) = key_of(Some(&s.project)) else {
            continue;
        };
        let body = SessionBody {
            session_id: s.session_id.clone(),
            branch: s.branch.clone(),
            title: s.title.clone(),
            summary: s.summary.clone(),
            key_files: s.key_files.clone(),
            key_decisions: s.key_decisions.clone(),
            started_at: s.started_at.clone(),
            ended_at: s.ended_at.clone(),
        };
        let check = to_value(&body);
        let mut body = body;
        relative(&mut body.key_files, root);
        let body = without_root(to_value(&body), root);
        let title = s
            .title
            .clone()
            .unwrap_or_else(|| s.summary.lines().next().unwrap_or("").to_string());
        let row = Row {
            kind: "session",
            handle: s.session_id.clone(),
            local: s.session_id.clone(),
            born: s.started_at.clone().unwrap_or_default(),
            key,
            title,
            stamp: s.stamp,
            was: s.was,
        };
        add(&mut plan, me, row, &check, body, now);
    }
    for l in st::learnings_to_export(conn, &roots)? {
        let Some((root, key)) = key_of(l.learning.project.as_deref()) else {
            continue;
        };
        let x = &l.learning;
        let body = LearningBody {
            content: x.content.clone(),
            category: x.category.clone(),
            confidence: x.confidence,
            evidence: x.evidence.clone(),
            is_manual: x.is_manual,
            is_active: x.is_active,
            created_at: x.created_at.clone(),
        };
        let check = to_value(&body);
        let body = without_root(check.clone(), root);
        let row = Row {
            kind: "learning",
            handle: x.handle.clone(),
            local: x.id.to_string(),
            born: x.created_at.clone(),
            key,
            title: x.content.clone(),
            stamp: x.updated_at.clone(),
            was: l.was,
        };
        add(&mut plan, me, row, &check, body, now);
    }
    Ok(plan)
}

/// A row looked at, before it is judged.
struct Row<'a> {
    kind: &'static str,
    handle: String,
    local: String,
    born: String,
    key: &'a str,
    title: String,
    stamp: String,
    was: Option<Exported>,
}

fn add(plan: &mut Plan, me: &Me, row: Row, check: &Value, body: Value, now: &str) {
    let gid = row
        .was
        .as_ref()
        .map(|w| w.gid.clone())
        .unwrap_or_else(|| wire::gid(&me.origin, row.kind, &row.local, &row.born));
    let mut item = Item {
        op: "put",
        kind: row.kind.to_string(),
        handle: row.handle,
        project: row.key.to_string(),
        title: memkit_core::clip(&memkit_core::text::flatten(&row.title), 100),
        held_back: None,
    };
    if let Some(found) = still_secret(check) {
        item.held_back = Some(found);
        let held = HeldRow {
            gid,
            kind: row.kind,
            local: row.local,
            born: row.born,
            project: row.key.to_string(),
        };
        plan.held.push((item, held));
        return;
    }
    let hash = wire::hash(row.kind, &body);
    if row.was.as_ref().and_then(|w| w.hash.as_deref()) == Some(hash.as_str()) {
        plan.unchanged.push((gid, row.stamp));
        return;
    }
    let line = Line {
        op: "put".into(),
        gid: gid.clone(),
        origin: me.origin.clone(),
        name: me.name.clone(),
        project: row.key.to_string(),
        kind: row.kind.to_string(),
        local: Some(row.local.clone()),
        at: now.to_string(),
        body: Some(body),
    };
    plan.lines.push(Planned {
        file: wire::file_of(row.key, &me.name, now),
        text: serde_json::to_string(&line).expect("a line serializes"),
        item,
        kind: row.kind,
        gid,
        local: row.local,
        born: row.born,
        stamp: Some(row.stamp),
        hash: Some(hash),
    });
}

fn tombstone(plan: &mut Plan, me: &Me, g: Gone, now: &str) {
    let kind = match g.kind.as_str() {
        "observation" => "observation",
        "session" => "session",
        _ => "learning",
    };
    let handle = match kind {
        "observation" => format!("o{}", g.local),
        "learning" => format!("l{}", g.local),
        _ => g.local.clone(),
    };
    let item = Item {
        op: "forget",
        kind: kind.to_string(),
        handle,
        project: g.project.clone(),
        title: String::new(),
        held_back: None,
    };
    let text = if g.written {
        let line = Line {
            op: "forget".into(),
            gid: g.gid.clone(),
            origin: me.origin.clone(),
            name: me.name.clone(),
            project: g.project.clone(),
            kind: kind.to_string(),
            local: Some(g.local.clone()),
            at: now.to_string(),
            body: None,
        };
        serde_json::to_string(&line).expect("a line serializes")
    } else {
        // Held back from the start: the remote never had it; only the bookkeeping goes.
        String::new()
    };
    plan.lines.push(Planned {
        file: wire::file_of(&g.project, &me.name, now),
        text,
        item,
        kind,
        gid: g.gid,
        local: g.local,
        born: String::new(),
        stamp: None,
        hash: None,
    });
}

fn to_value<T: Serialize>(body: &T) -> Value {
    serde_json::to_value(body).expect("a body serializes")
}

/// Paths under `root` relative to it: a clone elsewhere joins them to its own root.
fn relative(files: &mut [String], root: &str) {
    for f in files.iter_mut() {
        let r = crate::project::relative(f, root);
        if r.len() < f.len() {
            *f = r.to_string();
        }
    }
}

/// A body with the project's root left out of its text (`<root>/src/a.rs` → `src/a.rs`): a
/// path here means nothing on another machine, and often holds a person's name.
fn without_root(mut body: Value, root: &str) -> Value {
    let prefix = format!("{}/", root.trim_end_matches('/'));
    fn each(v: &mut Value, prefix: &str) {
        match v {
            Value::String(s) if s.contains(prefix) => *s = s.replace(prefix, ""),
            Value::Array(a) => a.iter_mut().for_each(|x| each(x, prefix)),
            Value::Object(o) => o.values_mut().for_each(|x| each(x, prefix)),
            _ => {}
        }
    }
    each(&mut body, &prefix);
    body
}

/// What the current redactor still finds in a body's text (its kinds, comma-separated).
pub fn still_secret(body: &Value) -> Option<String> {
    let mut kinds = BTreeSet::new();
    walk(body, &mut |s| {
        if let Cow::Owned(r) = redact::redact_str(s) {
            let (before, after) = (markers(s), markers(&r));
            let new: Vec<&String> = after
                .iter()
                .filter(|k| {
                    after.iter().filter(|x| x == k).count()
                        > before.iter().filter(|x| x == k).count()
                })
                .collect();
            if new.is_empty() {
                kinds.insert("secret".to_string());
            }
            kinds.extend(new.into_iter().cloned());
        }
    });
    (!kinds.is_empty()).then(|| kinds.into_iter().collect::<Vec<_>>().join(","))
}

fn walk(v: &Value, f: &mut dyn FnMut(&str)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter().for_each(|x| walk(x, f)),
        Value::Object(o) => o.values().for_each(|x| walk(x, f)),
        _ => {}
    }
}

/// The kinds of `[REDACTED:<kind>]` markers in `s`, with repeats.
fn markers(s: &str) -> Vec<String> {
    s.match_indices("[REDACTED:")
        .filter_map(|(i, m)| {
            let rest = &s[i + m.len()..];
            rest.find(']').map(|j| rest[..j].to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_redactor_still_finds_is_named() {
        let clean = serde_json::json!({"title": "use pnpm", "facts": ["[REDACTED:github_token] was rotated"]});
        assert_eq!(still_secret(&clean), None);
        let token = format!("ghp_{}", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8");
        let dirty = serde_json::json!({"title": "ok", "facts": [format!("token {token}")]});
        assert_eq!(still_secret(&dirty).as_deref(), Some("github_token"));
    }
}
