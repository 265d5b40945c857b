//! `mem-eval redaction`: the redactor's precision and recall in one run. Precision: a benign
//! corpus (code-heavy text with no real secret: documentation, examples, transcripts) is
//! redacted message by message, and every marker in it is a false positive, counted per 1,000
//! messages by family, with what each took beyond a value (markup, a quote, a bracket, a URL
//! host, words). Recall: the secrets corpus (one format a line), each secret gone and its
//! marker naming its kind. The redactor runs with its built-in rules only (no `[redact]`).

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use memkit_capture::redact;
use memkit_core::{Error, Result};

const MARK: &str = "[REDACTED:";

/// One message of the benign corpus: a note's text, or a transcript line's JSON value.
pub struct Message {
    pub source: String,
    pub file: String,
    pub value: Value,
}

/// One line of the secrets corpus.
pub struct Secret {
    pub kind: String,
    pub secret: String,
    pub value: Value,
}

/// A family's figures on a set (`"type":"eval_redaction"`); `family` "all" sums the row's
/// source, `source` "all" the set.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub v: u32,
    /// The redactor's version (`redact::VERSION`).
    pub redactor: u32,
    pub set: &'static str,
    pub source: String,
    pub family: String,
    /// Messages read (benign), or formats (secrets).
    pub messages: usize,
    pub redactions: usize,
    pub per_1000: f64,
    /// Redactions that took more than a value, and what they took (`markup 2, host 1`).
    pub eaten: usize,
    pub eaten_what: String,
    /// Secrets only: formats whose secret is gone with a marker of its kind, their share, and
    /// the kinds missed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missed: Option<Vec<String>>,
}

/// One redaction (`"type":"eval_redaction_hit"`): in a benign message, a false positive; in
/// the secrets corpus, what a secret's marker took.
#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub v: u32,
    pub set: &'static str,
    pub source: String,
    pub file: String,
    pub family: String,
    /// What the marker replaced, and up to 40 characters either side of it.
    pub removed: String,
    pub before: String,
    pub after: String,
    pub eaten: Vec<&'static str>,
}

pub struct Report {
    pub figures: Vec<Figure>,
    pub hits: Vec<Hit>,
}

/// Reads benign messages: `.jsonl` files (or folders of them) of notes, one
/// `{"text", "source"?, "file"?}` a line, or Claude Code transcripts, read as the import reads
/// them: one message per event it stores (a prompt, a tool call with its result, a turn's end).
pub fn read_benign(paths: &[PathBuf]) -> Result<Vec<Message>> {
    let mut files = Vec::new();
    for p in paths {
        collect(p, &mut files)?;
    }
    let mut out = Vec::new();
    for f in files {
        let bytes = std::fs::read(&f)?;
        let text = String::from_utf8_lossy(&bytes);
        let notes: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v.get("text").is_some_and(Value::is_string) && v.get("message").is_none())
            .collect();
        if notes.is_empty() {
            let parsed = memkit_capture::transcript::parse(&f, &bytes);
            out.extend(parsed.events.into_iter().map(|(p, _)| Message {
                source: "transcripts".into(),
                file: f.display().to_string(),
                value: Value::Object(p.raw),
            }));
            continue;
        }
        let dir = f
            .parent()
            .and_then(Path::file_name)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        for v in notes {
            let named = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
            out.push(Message {
                source: named("source").unwrap_or_else(|| dir.clone()),
                file: named("file").unwrap_or_else(|| f.display().to_string()),
                value: v["text"].clone(),
            });
        }
    }
    Ok(out)
}

fn collect(p: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    if p.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(p)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for e in entries {
            if e.is_dir() || e.extension().is_some_and(|x| x == "jsonl") {
                collect(&e, out)?;
            }
        }
    } else if p.is_file() {
        out.push(p.to_path_buf());
    } else {
        return Err(Error::Usage(format!("{}: no such file", p.display())));
    }
    Ok(())
}

/// Reads the secrets corpus: `{"kind", "secret", "text"}` or `{"kind", "secret", "json"}`.
pub fn read_secrets(path: &Path) -> Result<Vec<Secret>> {
    let text = std::fs::read_to_string(path)?;
    let mut out = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: Value = serde_json::from_str(line)
            .map_err(|e| Error::Usage(format!("{}:{}: {e}", path.display(), i + 1)))?;
        let field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let (Some(kind), Some(secret)) = (field("kind"), field("secret")) else {
            return Err(Error::Usage(format!(
                "{}:{}: needs kind and secret",
                path.display(),
                i + 1
            )));
        };
        let value = match (v.get("text"), v.get("json")) {
            (Some(t @ Value::String(_)), _) => t.clone(),
            (_, Some(j)) => j.clone(),
            _ => {
                return Err(Error::Usage(format!(
                    "{}:{}: needs text or json",
                    path.display(),
                    i + 1
                )));
            }
        };
        out.push(Secret {
            kind,
            secret,
            value,
        });
    }
    Ok(out)
}

/// Redacts a message as memkit stores it: a text as a note's, a JSON value as a capture's.
pub fn redacted(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(redact::redact_str(s).into_owned()),
        _ => {
            let mut r = v.clone();
            redact::redact_value(&mut r);
            r
        }
    }
}

/// One redaction in a string: the marker's kind and the input range it replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub kind: String,
    pub range: Range<usize>,
}

/// The redactions that turned `input` into `output`, found by aligning the text between the
/// markers (the redactor only replaces ranges with markers).
pub fn spans(input: &str, output: &str) -> Vec<Span> {
    let mut out = Vec::new();
    let (mut i, mut o) = (0, 0);
    while let Some(m) = output[o..].find(MARK).map(|m| o + m) {
        // The literal text before the marker is the input's, from i.
        i += m - o;
        let Some(close) = output[m..].find(']').map(|c| m + c) else {
            break;
        };
        let kind = output[m + MARK.len()..close].to_string();
        o = close + 1;
        let next = output[o..].find(MARK).map_or(output.len(), |n| o + n);
        let seg = &output[o..next];
        let end = if next == output.len() {
            // The last literal ends the input.
            input.len().checked_sub(seg.len()).filter(|e| *e >= i)
        } else if seg.is_empty() {
            // Two markers side by side: the split between them is not known; the first takes
            // the next token character run.
            Some(
                i + input[i..]
                    .find(|c: char| !(c.is_ascii_alphanumeric() || "+/_-=.".contains(c)))
                    .unwrap_or(input.len() - i),
            )
        } else {
            input[i.min(input.len())..]
                .char_indices()
                .skip(1)
                .map(|(k, _)| i + k)
                .find(|&j| input[j..].starts_with(seg))
        };
        let Some(end) = end.filter(|e| *e <= input.len() && input.is_char_boundary(*e)) else {
            break;
        };
        out.push(Span {
            kind,
            range: i.min(end)..end,
        });
        i = end;
    }
    out
}

/// What a redaction of `r` in `text` took beyond a value: markup (`<input`), a quote or a
/// bracket it did not close, whitespace (words), or part of a URL host.
pub fn eaten(
    text: &str,
    r: &Range<usize>,
    kind: &str,
    hosts: &[Range<usize>],
) -> Vec<&'static str> {
    let s = &text[r.clone()];
    let mut out = Vec::new();
    // A quoted literal replaced whole took its own characters only; a `<private>` span is
    // the user's own markup.
    let quoted = ['"', '\'', '`']
        .iter()
        .any(|q| text[..r.start].ends_with(*q) && text[r.end..].starts_with(*q));
    if !quoted && kind != "private" {
        if s.contains(['<', '>']) {
            out.push("markup");
        }
        let unbalanced = |o: char, c: char| s.matches(o).count() != s.matches(c).count();
        if ['"', '\'', '`']
            .iter()
            .any(|q| s.matches(*q).count() % 2 == 1)
        {
            out.push("quote");
        }
        if unbalanced('(', ')') || unbalanced('[', ']') || unbalanced('{', '}') {
            out.push("bracket");
        }
    }
    // A key block, a `<private>` span or an Authorization value spans words by nature.
    if s.contains(char::is_whitespace)
        && !matches!(kind, "private" | "private_key" | "password_hash")
    {
        out.push("words");
    }
    if hosts.iter().any(|h| h.start < r.end && r.start < h.end) {
        out.push("host");
    }
    out
}

/// Pairs every string of `input` with its redacted form in `output` (same shape but for a
/// scalar the redactor replaced whole).
fn strings<'a>(input: &'a Value, output: &'a Value, f: &mut impl FnMut(String, &'a str)) {
    match (input, output) {
        (Value::String(i), Value::String(o)) if i != o => f(i.clone(), o),
        (Value::String(_), Value::String(_)) => {}
        (Value::Array(a), Value::Array(b)) => {
            for (x, y) in a.iter().zip(b) {
                strings(x, y, f);
            }
        }
        (Value::Object(a), Value::Object(b)) => {
            for (k, x) in a {
                if let Some(y) = b.get(k) {
                    strings(x, y, f);
                }
            }
        }
        (x, Value::String(o)) => f(x.to_string(), o),
        _ => {}
    }
}

/// Every redaction of `input` (as `redacted` makes it), as a hit.
fn redactions(set: &'static str, source: &str, file: &str, input: &Value) -> Vec<Hit> {
    let output = redacted(input);
    let mut out = Vec::new();
    strings(input, &output, &mut |text, o| {
        let hosts = redact::url_hosts(&text);
        for s in spans(&text, o) {
            let r = s.range;
            out.push(Hit {
                kind: "eval_redaction_hit",
                v: memkit_core::record::VERSION,
                set,
                source: source.into(),
                file: file.into(),
                eaten: eaten(&text, &r, &s.kind, &hosts),
                family: s.kind,
                removed: text[r.clone()].to_string(),
                before: clip(&text, r.start.saturating_sub(40), r.start).into(),
                after: clip(&text, r.end, r.end + 40).into(),
            });
        }
    });
    out
}

fn clip(s: &str, from: usize, to: usize) -> &str {
    let mut a = from.min(s.len());
    while !s.is_char_boundary(a) {
        a += 1;
    }
    let mut b = to.min(s.len()).max(a);
    while !s.is_char_boundary(b) {
        b -= 1;
    }
    &s[a..b]
}

#[derive(Default)]
struct Tally {
    redactions: usize,
    eaten: usize,
    what: BTreeMap<&'static str, usize>,
}

impl Tally {
    fn add(&mut self, eaten: &[&'static str]) {
        self.redactions += 1;
        if !eaten.is_empty() {
            self.eaten += 1;
        }
        for e in eaten {
            *self.what.entry(e).or_default() += 1;
        }
    }

    fn figure(&self, set: &'static str, source: &str, family: &str, messages: usize) -> Figure {
        Figure {
            kind: "eval_redaction",
            v: memkit_core::record::VERSION,
            redactor: redact::VERSION,
            set,
            source: source.into(),
            family: family.into(),
            messages,
            redactions: self.redactions,
            per_1000: if messages == 0 {
                0.0
            } else {
                (self.redactions as f64 * 1000.0 / messages as f64 * 100.0).round() / 100.0
            },
            eaten: self.eaten,
            eaten_what: self
                .what
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            removed: None,
            recall: None,
            missed: None,
        }
    }
}

/// Measures both corpora: the benign figures (every source and family, then each source's
/// total), then the secrets' recall.
pub fn run(benign: &[Message], secrets: &[Secret]) -> Report {
    let mut hits = Vec::new();
    let mut by_family: BTreeMap<String, Tally> = BTreeMap::new();
    let mut by_source: BTreeMap<String, (usize, Tally)> = BTreeMap::new();
    let mut all = Tally::default();
    for m in benign {
        by_source.entry(m.source.clone()).or_default().0 += 1;
        for h in redactions("benign", &m.source, &m.file, &m.value) {
            all.add(&h.eaten);
            by_family.entry(h.family.clone()).or_default().add(&h.eaten);
            by_source
                .entry(m.source.clone())
                .or_default()
                .1
                .add(&h.eaten);
            hits.push(h);
        }
    }
    let n = benign.len();
    let mut figures: Vec<Figure> = by_family
        .iter()
        .map(|(k, t)| t.figure("benign", "all", k, n))
        .collect();
    figures.push(all.figure("benign", "all", "all", n));
    for (source, (count, t)) in &by_source {
        figures.push(t.figure("benign", source, "all", *count));
    }
    if !secrets.is_empty() {
        let mut t = Tally::default();
        let mut missed = Vec::new();
        for (i, s) in secrets.iter().enumerate() {
            let out = redacted(&s.value);
            let text = match &out {
                Value::String(x) => x.clone(),
                v => v.to_string(),
            };
            if text.contains(&s.secret) || !text.contains(&format!("{MARK}{}]", s.kind)) {
                missed.push(s.kind.clone());
            }
            for h in redactions("secrets", &s.kind, &format!("line {}", i + 1), &s.value) {
                t.add(&h.eaten);
                hits.push(h);
            }
        }
        let mut f = t.figure("secrets", "all", "all", secrets.len());
        let removed = secrets.len() - missed.len();
        f.removed = Some(removed);
        f.recall = Some((removed as f64 / secrets.len() as f64 * 1000.0).round() / 1000.0);
        f.missed = Some(missed);
        figures.push(f);
    }
    Report { figures, hits }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_found_back_in_the_input() {
        let input = "a password=hunter22 and token ghp_0123456789abcdefghijABCDEFGHIJ012345 end";
        let output = "a password=[REDACTED:password] and token [REDACTED:github_token] end";
        let s = spans(input, output);
        assert_eq!(s.len(), 2);
        assert_eq!(&input[s[0].range.clone()], "hunter22");
        assert_eq!(s[0].kind, "password");
        assert_eq!(
            &input[s[1].range.clone()],
            "ghp_0123456789abcdefghijABCDEFGHIJ012345"
        );
        let s = spans("x secret", "x [REDACTED:k]");
        assert_eq!(&"x secret"[s[0].range.clone()], "secret");
        let s = spans("secret x", "[REDACTED:k] x");
        assert_eq!(&"secret x"[s[0].range.clone()], "secret");
    }

    #[test]
    fn what_a_redaction_ate_is_named() {
        let text = "Password: <input type=\"password\"> at https://api.formspree.io/f/x";
        let hosts = redact::url_hosts(text);
        assert_eq!(&text[hosts[0].clone()], "api.formspree.io");
        let at = text.find("<input").unwrap();
        assert_eq!(eaten(text, &(at..at + 6), "password", &hosts), ["markup"]);
        let at = text.find("io/f").unwrap();
        assert_eq!(
            eaten(text, &(at..text.len()), "high_entropy", &hosts),
            ["host"]
        );
        let t = "- Password: [Your Password]";
        assert_eq!(eaten(t, &(12..17), "password", &[]), ["bracket"]);
    }
}
