//! mem-eval health: the state of the memory, exit 1 naming what needs doing.

use std::io::Write;

use crate::cli::{Format, Io, Outcome};
use crate::{Error, Result};

#[derive(Debug, clap::Args)]
pub struct HealthArgs {
    /// Days the per-day figures cover, today included.
    #[arg(long, value_name = "N", default_value_t = 7)]
    pub days: u32,
}

pub fn run(a: HealthArgs, io: &mut Io) -> Result<Outcome> {
    if a.days == 0 {
        return Err(Error::Usage("--days takes a number above 0".into()));
    }
    let Some((home, cfg, conn)) = super::shared::open_store(io)? else {
        return Ok(Outcome::NothingFound);
    };
    let h = memkit_eval::health::check(&home, &cfg, &conn, a.days)?;
    match io.format() {
        Format::Jsonl | Format::Json => io.record(&h)?,
        fmt => {
            // One row per figure: the record's fields, nested ones as compact JSON.
            let v = serde_json::to_value(&h)?;
            let rows: Vec<Vec<String>> = v
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, _)| !matches!(k.as_str(), "type" | "v"))
                .map(|(k, v)| {
                    let text = match v {
                        serde_json::Value::String(s) => s.clone(),
                        serde_json::Value::Null => "-".into(),
                        serde_json::Value::Array(a) if k == "problems" || k == "pipeline_log" => a
                            .iter()
                            .filter_map(|x| x.as_str())
                            .collect::<Vec<_>>()
                            .join("\n"),
                        v => v.to_string(),
                    };
                    vec![k.clone(), text]
                })
                .collect();
            io.out
                .write_all(crate::cli::render_table(&["figure", "value"], &rows, fmt).as_bytes())?;
        }
    }
    if h.problems.is_empty() {
        return Ok(Outcome::Ok);
    }
    if !io.quiet {
        for p in &h.problems {
            eprintln!("{}: problem: {p}", io.prog);
        }
    }
    Ok(Outcome::NothingFound)
}
