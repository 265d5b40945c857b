//! The one reader of JSON Lines input (docs/ARCHITECTURE.md, "Data flow" and "Command-line conventions"): every tool that takes FILE
//! or `-` reads it through [`Input`], so all of them number lines, stream and treat a bad line
//! the same way.
//!
//! The bad-line policy: a line that is not a JSON object (or that its tool cannot use, reported
//! through [`Input::bad`]) gets a warning `prog: warning: FILE:LINE: why`, is counted and
//! skipped, and the rest is processed; at the end [`Input::finish`] turns a non-zero count into
//! an input error (`prog: error: FILE: N bad line(s) skipped`, exit 3), so a pipeline notices
//! while the good lines still did their work.

use std::io::BufRead;
use std::path::Path;

use serde_json::Value;

use super::io::Io;
use crate::{Error, Result};

/// A JSONL input: a file, or stdin for `-`, read one line at a time.
pub struct Input {
    name: String,
    reader: Box<dyn BufRead>,
    /// 1-based number of the last line read.
    line: usize,
    bad: u64,
    buf: Vec<u8>,
}

impl Input {
    /// Opens `path`, or stdin when it is `-` (named `<stdin>` in messages). A file that cannot
    /// be opened is an input error naming it.
    pub fn open(path: &Path) -> Result<Input> {
        if path.as_os_str() == "-" {
            return Ok(Input::from_reader(
                "<stdin>",
                Box::new(std::io::stdin().lock()),
            ));
        }
        let name = path.display().to_string();
        let f = std::fs::File::open(path).map_err(|e| Error::input(&name, None, e))?;
        Ok(Input::from_reader(
            name,
            Box::new(std::io::BufReader::new(f)),
        ))
    }

    /// An input over any reader, named `name` in messages.
    pub fn from_reader(name: impl Into<String>, reader: Box<dyn BufRead>) -> Input {
        Input {
            name: name.into(),
            reader,
            line: 0,
            bad: 0,
            buf: Vec::new(),
        }
    }

    /// The input's name in messages: the path as given, or `<stdin>`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The next record: (line number, a JSON object), skipping blank lines and reporting bad
    /// ones; `None` at the end. Invalid UTF-8 is replaced (one bad byte never loses a record),
    /// and a lone UTF-16 surrogate escape is tolerated as in hook payloads. Only a read error
    /// ends the input early (an input error naming the line).
    pub fn next(&mut self, io: &Io) -> Result<Option<(usize, Value)>> {
        loop {
            self.buf.clear();
            let n = self
                .reader
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| Error::input(&self.name, Some(self.line + 1), e))?;
            if n == 0 {
                return Ok(None);
            }
            self.line += 1;
            let text = crate::utf8_lossy(&self.buf);
            let text = text.trim_end_matches(['\n', '\r']);
            if text.trim().is_empty() {
                continue;
            }
            let no = self.line;
            match crate::hook::parse_json(text) {
                Ok(v) if v.is_object() => return Ok(Some((no, v))),
                Ok(_) => self.bad(io, no, "not a JSON object"),
                Err(e) => self.bad(io, no, format!("invalid JSON: {e}")),
            }
        }
    }

    /// Reports line `line` as bad: a warning naming the input and the line, and one more to
    /// the count [`Input::finish`] reports. For lines that parse but that the tool cannot use.
    pub fn bad(&mut self, io: &Io, line: usize, why: impl std::fmt::Display) {
        io.warn(Error::input(&self.name, Some(line), why));
        self.bad += 1;
    }

    /// How many bad lines were skipped so far.
    pub fn bad_lines(&self) -> u64 {
        self.bad
    }

    /// Ends the input: `Ok` when every line was good, else the input error (exit 3) that says
    /// how many were skipped. Call it after the good lines' output is written.
    pub fn finish(&self) -> Result<()> {
        match self.bad {
            0 => Ok(()),
            n => Err(Error::input(
                &self.name,
                None,
                format!("{n} bad line(s) skipped; the others were processed"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io() -> Io {
        Io::std("test", &super::super::Common::default())
    }

    #[test]
    fn numbers_lines_skips_blank_ones_and_counts_bad_ones() {
        let text = b"{\"a\":1}\n\n  \nnot json\r\n[1]\n{\"b\":\"\xff\"}\r\n{\"c\":3}";
        let mut input = Input::from_reader("t.jsonl", Box::new(&text[..]));
        let io = io();
        let mut got = Vec::new();
        while let Some((no, v)) = input.next(&io).unwrap() {
            got.push((no, v));
        }
        let nos: Vec<usize> = got.iter().map(|(n, _)| *n).collect();
        assert_eq!(nos, [1, 6, 7]);
        assert_eq!(got[1].1["b"], "\u{fffd}");
        assert_eq!(input.bad_lines(), 2);
        let e = input.finish().unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(
            e.to_string().starts_with("t.jsonl: 2 bad line(s) skipped"),
            "{e}"
        );
    }

    #[test]
    fn a_clean_input_finishes_ok() {
        let mut input = Input::from_reader("t", Box::new(&b"{}\n"[..]));
        let io = io();
        assert!(input.next(&io).unwrap().is_some());
        assert!(input.next(&io).unwrap().is_none());
        assert!(input.finish().is_ok());
    }
}
