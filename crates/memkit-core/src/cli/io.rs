//! The process's streams and the formats a result is written in. Below `cli` so that `input`,
//! which warns through [`Io`], does not take from its parent.

use std::io::{BufWriter, IsTerminal, Write};

use clap::{Args, ValueEnum};
use comfy_table::{ContentArrangement, Table, presets};
use serde::Serialize;

use crate::Result;
use crate::notice::{Notice, Said};

/// How a tool ended when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0.
    Ok,
    /// Exit 1: nothing found, or below a threshold.
    NothingFound,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// One JSON object per line (the default when stdout is not a terminal).
    Jsonl,
    /// One JSON document: the array of all the records (streamed: `[` before the first, `]`
    /// after the last; `[]` when there is none), or the record itself for a tool whose output is
    /// one record (mem-context).
    Json,
    /// An aligned table (the default on a terminal).
    Table,
    /// A Markdown table.
    Md,
    /// Plain text, one item per line.
    Text,
}

/// Flags every tool takes.
#[derive(Debug, Clone, Args, Default)]
pub struct Common {
    /// Output format (default: table on a terminal, jsonl otherwise; json: one JSON array of the records, or mem-context's one record).
    #[arg(long, value_enum, global = true)]
    pub format: Option<Format>,
    /// Silence warnings and progress.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// More detail on stderr (repeat for more).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
}

/// The process's streams, with the conventions applied: stdout carries data only, stderr
/// carries `prog: …` diagnostics.
pub struct Io {
    pub prog: &'static str,
    pub out: BufWriter<Box<dyn Write>>,
    pub stdout_tty: bool,
    pub stderr_tty: bool,
    pub quiet: bool,
    pub verbose: u8,
    format: Option<Format>,
    /// Records written so far, for `--format json`'s array.
    written: usize,
    /// `--format json`'s document was one record, written whole ([`Io::document`]).
    document: bool,
}

impl Io {
    pub fn std(prog: &'static str, common: &Common) -> Io {
        Io {
            prog,
            out: BufWriter::new(Box::new(std::io::stdout().lock())),
            stdout_tty: std::io::stdout().is_terminal(),
            stderr_tty: std::io::stderr().is_terminal(),
            quiet: common.quiet,
            verbose: common.verbose,
            format: common.format,
            written: 0,
            document: false,
        }
    }

    /// The format for listings: the flag, else table on a terminal and JSONL in a pipe.
    pub fn format(&self) -> Format {
        self.format.unwrap_or(if self.stdout_tty {
            Format::Table
        } else {
            Format::Jsonl
        })
    }

    pub fn warn(&self, msg: impl std::fmt::Display) {
        if !self.quiet {
            eprintln!("{}: warning: {msg}", self.prog);
        }
    }

    /// Tells the user what happened or what to do next (stderr; silenced by --quiet).
    /// Asks a yes/no question on the terminal; no (false) when stdin is not one.
    pub fn confirm(&self, question: &str) -> Result<bool> {
        use std::io::BufRead;
        if !std::io::stdin().is_terminal() {
            return Ok(false);
        }
        eprint!("{}: {question} [y/N] ", self.prog);
        std::io::stderr().flush()?;
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        Ok(matches!(line.trim(), "y" | "Y" | "yes"))
    }

    pub fn tell(&self, msg: impl std::fmt::Display) {
        if !self.quiet {
            eprintln!("{}: {msg}", self.prog);
        }
    }

    /// What a reader says and returns when the database at `db` does not exist yet.
    pub fn no_memories(&self, db: &std::path::Path) -> Outcome {
        self.warn(format!("no memories yet ({} does not exist)", db.display()));
        Outcome::NothingFound
    }

    pub fn info(&self, msg: impl std::fmt::Display) {
        if self.verbose > 0 && !self.quiet {
            eprintln!("{}: {msg}", self.prog);
        }
    }

    /// Prints what a domain call had to say: a warning, or with `--verbose` a step.
    pub fn notice(&self, n: &Notice) {
        match n {
            Notice::Warn(m) => self.warn(m),
            Notice::Info(m) => self.info(m),
        }
    }

    pub fn notices<'a>(&self, ns: impl IntoIterator<Item = &'a Notice>) {
        for n in ns {
            self.notice(n);
        }
    }

    /// Writes a record a streaming call handed over, or prints its notice.
    pub fn said<R: Serialize>(&mut self, s: Said<R>) -> Result<()> {
        match s {
            Said::Record(r) => self.record(&r),
            Said::Notice(n) => {
                self.notice(&n);
                Ok(())
            }
        }
    }

    /// Writes one record: a JSON line, or with `--format json` the next element of the array
    /// [`Io::finish`] closes.
    pub fn record<T: Serialize>(&mut self, rec: &T) -> Result<()> {
        if self.format == Some(Format::Json) {
            self.out
                .write_all(if self.written == 0 { b"[" } else { b",\n" })?;
            serde_json::to_writer(&mut self.out, rec)?;
        } else {
            serde_json::to_writer(&mut self.out, rec)?;
            self.out.write_all(b"\n")?;
        }
        self.written += 1;
        Ok(())
    }

    /// Writes records already serialized as [`Io::record`] writes them in JSONL, one a line
    /// (serialized elsewhere, on other threads), in the format asked.
    pub fn record_lines(&mut self, lines: &[u8]) -> Result<()> {
        if self.format == Some(Format::Json) {
            for line in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                self.out
                    .write_all(if self.written == 0 { b"[" } else { b",\n" })?;
                self.out.write_all(line)?;
                self.written += 1;
            }
        } else {
            self.out.write_all(lines)?;
            self.written += memchr::memchr_iter(b'\n', lines).count();
        }
        Ok(())
    }

    /// Writes records as JSONL, or as a table of `columns` (record field names) otherwise.
    pub fn listing<T: Serialize>(&mut self, recs: &[T], columns: &[&str]) -> Result<()> {
        match self.format() {
            Format::Jsonl | Format::Json => {
                for r in recs {
                    self.record(r)?;
                }
            }
            fmt => {
                let rows: Vec<Vec<String>> = recs
                    .iter()
                    .map(|r| {
                        let v = serde_json::to_value(r).unwrap_or_default();
                        columns.iter().map(|c| cell(v.get(*c))).collect()
                    })
                    .collect();
                let text = render_table(columns, &rows, fmt);
                self.out.write_all(text.as_bytes())?;
            }
        }
        Ok(())
    }

    /// Ends a bulk run: its totals as a `summary` record in JSONL, else one line on stderr.
    pub fn summary(
        &mut self,
        counts: std::collections::BTreeMap<String, u64>,
        start: std::time::Instant,
    ) -> Result<()> {
        let summary = crate::record::Summary {
            tool: self.prog.into(),
            counts,
            elapsed_ms: start.elapsed().as_millis() as u64,
        };
        if matches!(self.format(), Format::Jsonl | Format::Json) {
            self.record(&summary)?;
        } else if !self.quiet {
            let parts: Vec<String> = summary
                .counts
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            eprintln!(
                "{}: {} in {} ms",
                self.prog,
                parts.join(", "),
                summary.elapsed_ms
            );
        }
        Ok(())
    }

    pub fn flush(&mut self) -> Result<()> {
        self.out.flush()?;
        Ok(())
    }

    /// Writes the one record a tool outputs (mem-context's block): as a JSON line, or with
    /// `--format json` as the whole document, not an array of one.
    pub fn document<T: Serialize>(&mut self, rec: &T) -> Result<()> {
        if self.format == Some(Format::Json) && self.written == 0 {
            serde_json::to_writer(&mut self.out, rec)?;
            self.out.write_all(b"\n")?;
            self.document = true;
            Ok(())
        } else {
            self.record(rec)
        }
    }

    /// Writes one record of named figures (mem status, mem sync --status): the document in
    /// JSON, else a table of what and value, a row a field.
    pub fn figures<T: Serialize>(&mut self, rec: &T) -> Result<()> {
        if matches!(self.format(), Format::Jsonl | Format::Json) {
            return self.document(rec);
        }
        let v = serde_json::to_value(rec)?;
        let rows: Vec<serde_json::Value> = v
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !matches!(k.as_str(), "type" | "v"))
            .map(|(k, v)| serde_json::json!({"what": k, "value": v}))
            .collect();
        self.listing(&rows, &["what", "value"])
    }

    /// Ends the output: closes `--format json`'s array (also after an error, so what was
    /// written stays one valid document; a run that failed before writing a record writes
    /// nothing), then flushes.
    pub fn finish(&mut self, ok: bool) -> Result<()> {
        if self.format == Some(Format::Json) && !self.document {
            match self.written {
                0 if ok => self.out.write_all(b"[]\n")?,
                0 => {}
                _ => self.out.write_all(b"]\n")?,
            }
        }
        self.flush()
    }
}

fn cell(v: Option<&serde_json::Value>) -> String {
    match v {
        None | Some(serde_json::Value::Null) => String::new(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| x.to_string())
            })
            .collect::<Vec<_>>()
            .join(", "),
        Some(v) => v.to_string(),
    }
}

/// Renders rows as a terminal table, a Markdown table, or tab-separated text.
pub fn render_table(headers: &[&str], rows: &[Vec<String>], fmt: Format) -> String {
    match fmt {
        Format::Text => rows.iter().map(|r| r.join("\t") + "\n").collect(),
        _ => {
            let mut t = Table::new();
            let style = if fmt == Format::Md {
                presets::ASCII_MARKDOWN
            } else {
                presets::UTF8_FULL_CONDENSED
            };
            t.load_style(style)
                .set_content_arrangement(ContentArrangement::Dynamic)
                .set_header(headers.to_vec());
            for r in rows {
                t.add_row(r.clone());
            }
            if fmt == Format::Table {
                // A terminal's width is found by itself; $COLUMNS is what a pager or a
                // script asks for.
                if let Some(w) = std::env::var("COLUMNS")
                    .ok()
                    .and_then(|c| c.trim().parse::<u16>().ok())
                    .filter(|w| *w >= 20)
                {
                    t.set_width(w);
                }
                // Times never wrap: titles and paths take the squeeze.
                for (i, h) in headers.iter().enumerate() {
                    if (h.ends_with("_at") || *h == "at" || *h == "when")
                        && let Some(c) = t.column_mut(i)
                    {
                        c.set_constraint(comfy_table::ColumnConstraint::ContentWidth);
                    }
                }
            }
            format!("{t}\n")
        }
    }
}
