//! The page's full records: every observation's summary, detail, lists and meta, as one
//! deflate-compressed, base64 JSON text in a `<script type="application/octet-stream">`, which
//! page.js inflates with the browser's `DecompressionStream` on the first expand or search.
//! The DOM keeps only each observation's line (ref, type, title, files, time): a page of
//! 10,000 observations holds their full text in a few MB, not the tens it took inline.
//!
//! The JSON is `{"labels": [...], "strings": [...], "records": {"o12": [...], ...}}`. A
//! record is its summary's lines, its detail's lines, its lists (in `labels`' order, as
//! `model::lists` shows them) and its meta, each an array of parts. A part seen more than once
//! (a file read again, a fact, a prompt, a line of tool output that recurs further apart than
//! deflate's 32 KB window sees) is shipped once in `strings` and given as its index there.

use std::collections::HashMap;
use std::io::Write;

use base64::Engine;
use serde_json::json;

use crate::ids;
use crate::record::Observation;

use super::model;

/// Parts this short cost less inline than as an index.
const SHORTEST_SHARED: usize = 8;

/// The element holding the records of `obs`.
pub fn script<'a>(obs: impl Iterator<Item = &'a Observation>) -> String {
    let parts: Vec<(String, Vec<Vec<String>>)> = obs
        .map(|o| (ids::obs(o.id.unwrap_or_default()), fields(o)))
        .collect();
    let mut seen: HashMap<&str, u32> = HashMap::new();
    for p in parts.iter().flat_map(|(_, f)| f.iter().flatten()) {
        if p.len() >= SHORTEST_SHARED {
            *seen.entry(p.as_str()).or_default() += 1;
        }
    }
    // Written as it goes: a tree of JSON values would copy every part once more.
    let mut strings: Vec<&str> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut records = String::with_capacity(parts.len() * 512);
    for (i, (r, f)) in parts.iter().enumerate() {
        records.push_str(if i == 0 { "" } else { "," });
        push_json(&mut records, r);
        records.push_str(":[");
        for (j, field) in f.iter().enumerate() {
            records.push_str(if j == 0 { "[" } else { ",[" });
            for (k, p) in field.iter().enumerate() {
                records.push_str(if k == 0 { "" } else { "," });
                match seen.get(p.as_str()) {
                    Some(n) if *n > 1 => {
                        let at = *index.entry(p.as_str()).or_insert_with(|| {
                            strings.push(p);
                            strings.len() - 1
                        });
                        records.push_str(&at.to_string());
                    }
                    _ => push_json(&mut records, p),
                }
            }
            records.push(']');
        }
        records.push(']');
    }
    let text = format!(
        "{{\"labels\":{},\"strings\":{},\"records\":{{{records}}}}}",
        json!(model::LABELS),
        json!(strings)
    );
    format!(
        "<script id=\"records\" type=\"application/octet-stream\">{}</script>",
        base64::engine::general_purpose::STANDARD.encode(deflate(text.as_bytes()))
    )
}

/// An observation's summary lines, detail lines, lists and meta.
fn fields(o: &Observation) -> Vec<Vec<String>> {
    let lines = |s: &str| -> Vec<String> {
        let s = s.trim();
        if s.is_empty() {
            Vec::new()
        } else {
            s.split('\n').map(str::to_string).collect()
        }
    };
    let mut f = vec![lines(&o.summary), lines(o.detail.as_deref().unwrap_or(""))];
    f.extend(model::lists(o).map(|(_, l)| l.to_vec()));
    f.push(model::meta(o));
    f
}

fn push_json(out: &mut String, s: &str) {
    out.push_str(&serde_json::to_string(s).expect("a string is JSON"));
}

fn deflate(bytes: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(bytes).expect("deflate into memory");
    z.finish().expect("deflate into memory")
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use serde_json::Value;

    use super::*;

    fn obs(id: i64, detail: &str, facts: &[&str]) -> Observation {
        Observation {
            id: Some(id),
            summary: "the same summary, twice".into(),
            detail: Some(detail.into()),
            facts: facts.iter().map(|f| f.to_string()).collect(),
            session_id: Some("sess-1".into()),
            ..Observation::default()
        }
    }

    /// The script's text inflated and parsed, each part resolved.
    fn decoded(script: &str) -> serde_json::Map<String, Value> {
        let b64 = script
            .strip_prefix("<script id=\"records\" type=\"application/octet-stream\">")
            .and_then(|s| s.strip_suffix("</script>"))
            .unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        let mut text = String::new();
        flate2::read::DeflateDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["labels"], json!(model::LABELS));
        let strings = v["strings"].as_array().unwrap().clone();
        let resolve = |p: &Value| {
            p.as_u64()
                .map_or(p.clone(), |i| strings[i as usize].clone())
        };
        v["records"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(r, f)| {
                let f: Vec<Value> = f
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_array().unwrap().iter().map(resolve).collect())
                    .collect();
                (r.clone(), Value::Array(f))
            })
            .collect()
    }

    #[test]
    fn records_round_trip_with_repeated_parts_shipped_once() {
        let a = obs(
            1,
            "line one\nshared line of output",
            &["ran: cargo test", "x"],
        );
        let b = obs(2, "shared line of output", &["ran: cargo test"]);
        let script = script([&a, &b].into_iter());
        let r = decoded(&script);
        assert_eq!(
            r["o1"],
            json!([
                ["the same summary, twice"],
                ["line one", "shared line of output"],
                ["ran: cargo test", "x"],
                [],
                [],
                [],
                [],
                [],
                ["session sess-1"]
            ])
        );
        assert_eq!(r["o2"][1], json!(["shared line of output"]));
        assert_eq!(r["o2"][2], json!(["ran: cargo test"]));
    }
}
