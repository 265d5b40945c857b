//! The page's full records: every observation's summary, detail, lists and meta and every
//! session's summary and files (a session's card shows its title, an observation its line), as one
//! deflate-compressed text in a `<script type="application/octet-stream">`, which page.js
//! inflates with the browser's `DecompressionStream` on the first expand or search. The
//! compressed bytes are written 7 bits to a character (`seven`): 8/7 of their size where
//! base64 took 4/3.
//! The DOM keeps only each observation's line (ref, type, title, files, time): a page of
//! 10,000 observations holds their full text in a few MB, not the tens it took inline.
//!
//! The text is plain, not JSON: the search lowercases it whole and splits it into a string per
//! record, with no parse and no object per part (JSON.parse and a Map of arrays were most of a
//! first search on 10,000 records). Records are separated by RS (U+1E), a record's fields by
//! US (U+1F), a list's items by GS (U+1D); none of them can be typed in the search box, so no
//! word typed there spans two parts, and in stored text they (and FS) become spaces.
//!
//! The first record is the lists' labels, the second the shared parts; each next one is its
//! ref, its line's text (an observation's type and title: the search reads records from here,
//! not from ten thousand elements), its summary, its detail, its lists (in the labels' order,
//! as `model::lists` shows them) and its meta's parts. A part (a line of a summary or detail, an item) seen more than
//! once, such as a file read again, a fact, a prompt or a line of tool output that recurs
//! further apart than deflate's 32 KB window sees, is shipped once among the shared parts and
//! written as FS (U+1C) and its index there: without it the synthetic 10k page's records were
//! 3.5 times the size.

use std::collections::{HashMap, HashSet};
use std::io::Write;

use crate::ids;
use crate::record::Observation;
use crate::store::report::SessionRow;

use super::model::{self, Timeline};

const FS: char = '\u{1c}';
const GS: char = '\u{1d}';
const RS: char = '\u{1e}';
const US: char = '\u{1f}';

/// Parts this short cost less inline than as an index.
const SHORTEST_SHARED: usize = 8;

/// A record's fields, each its parts and what separates them.
type Fields<'a> = Vec<(Vec<&'a str>, char)>;

/// The element holding the records of `t`'s sessions and observations; `mapped` are the
/// sessions whose changed definitions the page draws from mem-ast's map.
pub fn script(t: &Timeline, mapped: &HashSet<String>) -> String {
    let metas: Vec<(String, &Observation, Vec<String>)> = t
        .observations()
        .map(|o| (ids::obs(o.id.unwrap_or_default()), o, model::meta(o)))
        .collect();
    let sessions: Vec<[String; 1]> = t
        .sessions
        .iter()
        .map(|(s, _)| [format!("session {}", s.session_id)])
        .collect();
    let records: Vec<(&str, Fields)> = t
        .sessions
        .iter()
        .zip(&sessions)
        .map(|((s, obs), meta)| {
            let named = !mapped.contains(&s.session_id);
            (s.handle.as_str(), session(s, obs, named, meta))
        })
        .chain(
            metas
                .iter()
                .map(|(r, o, meta)| (r.as_str(), fields(o, meta))),
        )
        .collect();
    let mut seen: HashMap<&str, u32> = HashMap::new();
    for (_, f) in &records {
        for p in f.iter().flat_map(|(parts, _)| parts) {
            if p.len() >= SHORTEST_SHARED {
                *seen.entry(p).or_default() += 1;
            }
        }
    }
    let mut shared: Vec<&str> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut body = String::with_capacity(records.len() * 512);
    for (r, f) in &records {
        body.push(RS);
        body.push_str(r);
        for (parts, sep) in f {
            body.push(US);
            for (i, p) in parts.iter().enumerate() {
                if i > 0 {
                    body.push(*sep);
                }
                if seen.get(p).is_some_and(|n| *n > 1) {
                    let at = *index.entry(p).or_insert_with(|| {
                        shared.push(p);
                        shared.len() - 1
                    });
                    body.push(FS);
                    body.push_str(&at.to_string());
                } else {
                    push_clean(&mut body, p);
                }
            }
        }
    }
    let mut text = model::LABELS.join("\u{1f}");
    text.push(RS);
    for (i, p) in shared.iter().enumerate() {
        if i > 0 {
            text.push(US);
        }
        push_clean(&mut text, p);
    }
    text.push_str(&body);
    format!(
        "<script id=records type=application/octet-stream>{}</script>",
        seven(&deflate(text.as_bytes()))
    )
}

/// A text's lines; none when it is blank.
fn lines(s: &str) -> Vec<&str> {
    let s = s.trim();
    if s.is_empty() {
        Vec::new()
    } else {
        s.split('\n').collect()
    }
}

/// A session's record, in an observation's shape: no line (its card is searched as shown),
/// its summary, the files its observations modified, the functions they name (`named`: when
/// the card does not list them from mem-ast's map), and its id.
fn session<'a>(
    s: &'a SessionRow,
    obs: &'a [Observation],
    named: bool,
    meta: &'a [String],
) -> Fields<'a> {
    let mut f: Fields = vec![
        (Vec::new(), '\n'),
        (lines(s.summary.as_deref().unwrap_or("")), '\n'),
        (Vec::new(), '\n'),
    ];
    f.extend(model::LABELS.iter().map(|_| (Vec::new(), GS)));
    f[3 + model::FILES_MODIFIED].0 = s.files_modified.iter().map(String::as_str).collect();
    if named {
        let mut seen = HashSet::new();
        f[3 + model::FUNCTIONS_CHANGED].0 = obs
            .iter()
            .flat_map(|o| &o.functions_changed)
            .map(String::as_str)
            .filter(|f| seen.insert(*f))
            .collect();
    }
    f.push((meta.iter().map(String::as_str).collect(), GS));
    f
}

/// An observation's type and title (what its line shows, for the search), summary and detail
/// (a part per line), lists and meta.
fn fields<'a>(o: &'a Observation, meta: &'a [String]) -> Fields<'a> {
    let mut f = vec![
        (vec![o.kind.as_str(), o.title.as_str()], '\n'),
        (lines(&o.summary), '\n'),
        (lines(o.detail.as_deref().unwrap_or("")), '\n'),
    ];
    f.extend(model::lists(o).map(|(_, l)| (l.iter().map(String::as_str).collect(), GS)));
    f.push((meta.iter().map(String::as_str).collect(), GS));
    f
}

/// Stored text with the separators made spaces.
fn push_clean(out: &mut String, s: &str) {
    out.extend(s.chars().map(|c| {
        if matches!(c, FS | GS | RS | US) {
            ' '
        } else {
            c
        }
    }));
}

/// What the HTML parser would not keep as is in a script's text: NUL (made U+FFFD), CR (made
/// LF) and `<` (which could start `</script>`).
const UNSAFE: [u8; 3] = [0, b'\r', b'<'];

/// Bytes as text that a `<script>` element holds unchanged: each 7 bits (most significant
/// first, the last padded with zeros) is the ASCII character of that code; one that is
/// `UNSAFE[k]` is written, with the next 7 bits `w`, as the one character U+0080 + 128k + w
/// (two bytes of UTF-8, so 7 bits a byte still), or as U+0200 + k when it is the last. The
/// bytes are the first ⌊7n/8⌋ of the n codes' bits.
fn seven(bytes: &[u8]) -> String {
    let mut codes: Vec<u8> = Vec::with_capacity(bytes.len() * 8 / 7 + 1);
    let (mut acc, mut bits) = (0u32, 0);
    for &b in bytes {
        acc = ((acc << 8) | u32::from(b)) & 0x7fff;
        bits += 8;
        while bits >= 7 {
            bits -= 7;
            codes.push(((acc >> bits) & 0x7f) as u8);
        }
    }
    if bits > 0 {
        codes.push(((acc << (7 - bits)) & 0x7f) as u8);
    }
    let mut out = String::with_capacity(codes.len() + 64);
    let mut i = 0;
    while i < codes.len() {
        let c = codes[i];
        match UNSAFE.iter().position(|u| *u == c) {
            None => out.push(char::from(c)),
            Some(k) => {
                let code = match codes.get(i + 1) {
                    Some(w) => {
                        i += 1;
                        0x80 + 128 * k as u32 + u32::from(*w)
                    }
                    None => 0x200 + k as u32,
                };
                out.push(char::from_u32(code).expect("below U+0203"));
            }
        }
        i += 1;
    }
    out
}

fn deflate(bytes: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(bytes).expect("deflate into memory");
    z.finish().expect("deflate into memory")
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn obs(id: i64, detail: &str, facts: &[&str]) -> Observation {
        Observation {
            id: Some(id),
            kind: "change".into(),
            title: format!("title {id}"),
            summary: "the same summary, twice".into(),
            detail: Some(detail.into()),
            facts: facts.iter().map(|f| f.to_string()).collect(),
            session_id: Some("sess-1".into()),
            ..Observation::default()
        }
    }

    /// `seven`'s text back to bytes, as page.js reads it.
    fn unseven(s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        let (mut acc, mut bits) = (0u32, 0);
        let mut put = |v: u32| {
            acc = ((acc << 7) | v) & 0x7fff;
            bits += 7;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
            }
        };
        for c in s.chars().map(u32::from) {
            if c < 0x80 {
                put(c);
            } else if c < 0x200 {
                put(u32::from(UNSAFE[((c - 0x80) >> 7) as usize]));
                put((c - 0x80) & 0x7f);
            } else {
                put(u32::from(UNSAFE[(c - 0x200) as usize]));
            }
        }
        out
    }

    #[test]
    fn seven_bits_a_character_round_trip_with_nothing_the_parser_changes() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for len in [0, 1, 2, 6, 7, 8, 9, 15, 16, 255, 256, 4099] {
            let mut bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            // The unsafe codes in every position, the last among them.
            bytes.extend([0, 0, 0x0d, 0x3c, 0xff, 0x00, 0x78]);
            let text = seven(&bytes);
            assert!(!text.contains(['\0', '\r', '<']), "{text:?}");
            assert!(text.chars().all(|c| u32::from(c) < 0x203));
            assert_eq!(unseven(&text), bytes, "{len}");
            assert!(
                text.len() <= bytes.len() * 8 / 7 + 2,
                "{len}: {}",
                text.len()
            );
        }
        // Bytes whose last code is unsafe with none after it: NUL, CR, `<`.
        for bytes in [
            vec![0xfe],
            [vec![0xff; 6], vec![13]].concat(),
            [vec![0xff; 6], vec![60]].concat(),
        ] {
            let text = seven(&bytes);
            assert!(
                text.ends_with(|c: char| (0x200..0x203).contains(&u32::from(c))),
                "{text:?}"
            );
            assert_eq!(unseven(&text), bytes);
        }
    }

    /// The script's text, inflated.
    fn inflated(script: &str) -> String {
        let text = script
            .strip_prefix("<script id=records type=application/octet-stream>")
            .and_then(|s| s.strip_suffix("</script>"))
            .unwrap();
        let bytes = unseven(text);
        let mut text = String::new();
        flate2::read::DeflateDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .unwrap();
        text
    }

    /// Each record's fields with its shared parts resolved, as page.js reads them.
    fn decoded(script: &str) -> HashMap<String, Vec<String>> {
        let text = inflated(script);
        let mut recs = text.split(RS);
        assert_eq!(recs.next().unwrap(), model::LABELS.join("\u{1f}"));
        let shared: Vec<&str> = recs.next().unwrap().split(US).collect();
        recs.map(|r| {
            let mut f = r.split(US).map(|field| {
                let mut out = String::new();
                let mut rest = field;
                while let Some(at) = rest.find(FS) {
                    out.push_str(&rest[..at]);
                    rest = &rest[at + 1..];
                    let end = rest
                        .find(|c: char| !c.is_ascii_digit())
                        .unwrap_or(rest.len());
                    out.push_str(shared[rest[..end].parse::<usize>().unwrap()]);
                    rest = &rest[end..];
                }
                out.push_str(rest);
                out
            });
            (f.next().unwrap(), f.collect())
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
        let b = obs(2, "shared line of output", &["ran: cargo test", "x\u{1e}y"]);
        let script = script(
            &Timeline {
                sessions: Vec::new(),
                loose: vec![a, b],
            },
            &HashSet::new(),
        );
        let r = decoded(&script);
        let gs = |items: &[&str]| items.join("\u{1d}");
        assert_eq!(
            r["o1"],
            [
                "change\ntitle 1",
                "the same summary, twice",
                "line one\nshared line of output",
                &gs(&["ran: cargo test", "x"]),
                "",
                "",
                "",
                "",
                "",
                "session sess-1"
            ]
        );
        assert_eq!(r["o2"][2], "shared line of output");
        // A separator in stored text is a space.
        assert_eq!(r["o2"][3], gs(&["ran: cargo test", "x y"]));
        // Shared parts travel once.
        let text = inflated(&script);
        assert_eq!(text.matches("shared line of output").count(), 1);
        assert_eq!(text.matches("the same summary, twice").count(), 1);
    }
}
