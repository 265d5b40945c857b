//! Golden tests: the serialized form of every record type is a contract.

use memkit::record::{Capture, Context, ContextItem, Observation, Session, Summary};
use serde_json::json;

#[test]
fn capture_record_is_pinned() {
    let c = Capture {
        id: 7,
        session_id: "s".into(),
        project: Some("/p".into()),
        event: "PostToolUse".into(),
        tool_name: Some("Edit".into()),
        tool_use_id: None,
        files: vec!["/p/a.rs".into()],
        priority: "high".into(),
        status: "raw".into(),
        payload: json!({"k": 1}),
        created_at: "2026-02-21T14:30:00.000Z".into(),
    };
    assert_eq!(
        serde_json::to_string(&c).unwrap(),
        r#"{"type":"capture","v":1,"id":7,"session_id":"s","project":"/p","event":"PostToolUse","tool_name":"Edit","files":["/p/a.rs"],"priority":"high","status":"raw","payload":{"k":1},"created_at":"2026-02-21T14:30:00.000Z"}"#
    );
    let back: Capture = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
    assert_eq!(back, c);
}

#[test]
fn session_and_summary_records_are_pinned() {
    let s = Session {
        session_id: "s".into(),
        project: None,
        branch: Some("main".into()),
        started_at: None,
        files: 1,
        prompts: 2,
        tool_calls: 3,
        queued: 4,
        duplicates: 0,
        skipped: 1,
    };
    assert_eq!(
        serde_json::to_string(&s).unwrap(),
        r#"{"type":"session","v":1,"session_id":"s","branch":"main","files":1,"prompts":2,"tool_calls":3,"queued":4,"duplicates":0,"skipped":1}"#
    );
    let mut sum = Summary {
        tool: "mem-capture".into(),
        elapsed_ms: 5,
        ..Default::default()
    };
    sum.counts.insert("queued".into(), 4);
    assert_eq!(
        serde_json::to_string(&sum).unwrap(),
        r#"{"type":"summary","v":1,"tool":"mem-capture","counts":{"queued":4},"elapsed_ms":5}"#
    );
}

#[test]
fn observation_record_is_pinned_and_readers_ignore_unknown_fields() {
    let o = Observation {
        id: Some(3),
        kind: "bugfix".into(),
        title: "Fix token refresh race".into(),
        summary: "why".into(),
        files_modified: vec!["/p/auth.rs".into()],
        ..Default::default()
    };
    assert_eq!(
        serde_json::to_string(&o).unwrap(),
        r#"{"type":"observation","v":1,"id":3,"kind":"bugfix","title":"Fix token refresh race","summary":"why","facts":[],"concepts":[],"tags":[],"files_read":[],"files_modified":["/p/auth.rs"],"functions_changed":[],"tokens_raw":0,"tokens_compressed":0}"#
    );
    let manual = Observation {
        kind: "decision".into(),
        title: "t".into(),
        summary: "s".into(),
        is_manual: true,
        sources: vec![4, 5],
        ..Default::default()
    };
    assert_eq!(
        serde_json::to_string(&manual).unwrap(),
        r#"{"type":"observation","v":1,"kind":"decision","title":"t","summary":"s","facts":[],"concepts":[],"tags":[],"files_read":[],"files_modified":[],"functions_changed":[],"tokens_raw":0,"tokens_compressed":0,"is_manual":true,"sources":[4,5]}"#
    );
    let with_extra = r#"{"type":"observation","v":1,"kind":"change","title":"t","summary":"s","future_field":{"x":1}}"#;
    let parsed: Observation = serde_json::from_str(with_extra).unwrap();
    assert_eq!(parsed.kind, "change");
}

#[test]
fn hit_and_index_records_are_pinned() {
    use memkit::record::{Hit, IndexReport};
    let h = Hit {
        query_id: Some(json!("q1")),
        rank: 1,
        id: 42,
        source: "observation".into(),
        handle: "o42".into(),
        score: 1.25,
        mode: "hybrid".into(),
        project: Some("/w/beta".into()),
        project_name: Some("beta".into()),
        other_project: true,
        kind: "decision".into(),
        title: "Use WAL".into(),
        external_id: None,
        origin: Some("desktop".into()),
        line: Some("Readers never block".into()),
        session_id: None,
        summary: None,
        detail: None,
        facts: None,
        concepts: None,
        tags: None,
        files: None,
        created_at: "2026-02-21T14:30:00.000Z".into(),
        explain: None,
    };
    assert_eq!(
        serde_json::to_string(&h).unwrap(),
        r#"{"type":"hit","v":1,"query_id":"q1","rank":1,"id":42,"source":"observation","ref":"o42","score":1.25,"mode":"hybrid","project":"/w/beta","project_name":"beta","other_project":true,"kind":"decision","title":"Use WAL","origin":"desktop","line":"Readers never block","created_at":"2026-02-21T14:30:00.000Z"}"#
    );
    let back: Hit = serde_json::from_str(&serde_json::to_string(&h).unwrap()).unwrap();
    assert_eq!(back, h);
    let r = IndexReport {
        index: "bm25".into(),
        docs: 10,
        added: 2,
        rebuilt: true,
        reason: Some("missing".into()),
        ..Default::default()
    };
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        r#"{"type":"index","v":1,"index":"bm25","docs":10,"added":2,"updated":0,"removed":0,"rebuilt":true,"reason":"missing"}"#
    );
}

#[test]
fn context_record_is_pinned() {
    let c = Context {
        event: "SessionStart".into(),
        project: Some("/w/alpha".into()),
        project_name: Some("alpha".into()),
        source: Some(memkit::context::Source::Compact),
        text: "# memkit\n".into(),
        tokens: 4,
        budget: 2000,
        layers: vec![memkit::context::LayerReport {
            name: "learnings".into(),
            cap: 300,
            tokens: 0,
            items: 0,
            included: false,
            reason: Some("no data".into()),
        }],
        items: vec![ContextItem {
            source: "observation".into(),
            id: 7,
            project_name: Some("beta".into()),
            other_project: true,
            origin: None,
        }],
        build_ms: 3,
    };
    let text = serde_json::to_string(&c).unwrap();
    assert_eq!(
        text,
        r##"{"type":"context","v":1,"event":"SessionStart","project":"/w/alpha","project_name":"alpha","source":"compact","text":"# memkit\n","tokens":4,"budget":2000,"layers":[{"name":"learnings","cap":300,"tokens":0,"items":0,"included":false,"reason":"no data"}],"items":[{"source":"observation","id":7,"project_name":"beta","other_project":true}],"build_ms":3}"##
    );
    let back: Context = serde_json::from_str(&text).unwrap();
    assert_eq!(back, c);
}

#[test]
fn sync_lines_are_pinned() {
    use memkit::sync::wire::{Line, Machine};
    let put = Line {
        op: "put".into(),
        gid: "71ca3ca4d4774e2f:o1-370a3c75".into(),
        origin: "71ca3ca4d4774e2f".into(),
        name: "laptop".into(),
        project: "github.com/acme/app".into(),
        kind: "observation".into(),
        local: Some("1".into()),
        at: "2026-12-03T21:07:51.186Z".into(),
        body: Some(json!({"type": "discovery", "title": "t"})),
    };
    assert_eq!(
        serde_json::to_string(&put).unwrap(),
        r#"{"type":"memory","v":1,"op":"put","gid":"71ca3ca4d4774e2f:o1-370a3c75","origin":"71ca3ca4d4774e2f","name":"laptop","project":"github.com/acme/app","kind":"observation","local":"1","at":"2026-12-03T21:07:51.186Z","body":{"type":"discovery","title":"t"}}"#
    );
    let forget = Line {
        op: "forget".into(),
        body: None,
        ..put
    };
    assert!(
        serde_json::to_string(&forget)
            .unwrap()
            .ends_with(r#""local":"1","at":"2026-12-03T21:07:51.186Z"}"#)
    );
    let m = Machine {
        name: "laptop".into(),
        origin: "71ca3ca4d4774e2f".into(),
        since: "2026-12-03T21:07:51.184Z".into(),
    };
    assert_eq!(
        serde_json::to_string(&m).unwrap(),
        r#"{"type":"machine","v":1,"name":"laptop","origin":"71ca3ca4d4774e2f","since":"2026-12-03T21:07:51.184Z"}"#
    );
}
