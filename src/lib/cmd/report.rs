//! mem-report: memories shown in full for people and for Claude (`--obs ID`, what the context
//! block's index lines point to).

use std::io::Write;

use clap::{CommandFactory, Parser};

use crate::cli::{Common, Format, Io, Outcome};
use crate::config::{self, Config};
use crate::record::Observation;
use crate::store::{self, observations};
use crate::{Error, Result};

pub const TOOL: super::Tool = super::Tool {
    name: "mem-report",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
        ("mem-report --obs 12", "Show observation #12 in full."),
        (
            "mem-report --obs 12,15 --format jsonl | jq -r .summary",
            "Read two observations as records.",
        ),
        (
            "mem-report --file app/auth.py",
            "The functions of a Python file and how sessions changed them (mem-ast's map).",
        ),
        (
            "mem-report --mermaid > change.mmd",
            "The last session's changed functions and their calls as a Mermaid flowchart.",
        ),
    ],
};

const DETAILS: &str = r#"
--obs prints each observation whole: its summary, detail, facts, concepts, tags, files read and
modified, functions changed, session and time. On a terminal (or with --format md or text) as
markdown; in a pipe as observation records. Ids are the numbers mem-search and mem-context show (#12
or 12). An id that does not exist is reported on stderr; the exit status is 1 when none of them
exists.

--file PATH (the path as stored or its ending, such as app/auth.py) lists every change mem-ast
recorded for a Python file, oldest first: session, time, qualified name, signature and change
(new, modified, deleted), as function_change records in a pipe. --mermaid prints a Mermaid
flowchart of the changed definitions of a session (--session, default the latest one mem-ast
mapped) and their calls; --all adds the unchanged ones. Exit status 1 when nothing is recorded.
"#;

/// Show stored memories in full.
#[derive(Debug, Parser)]
#[command(name = "mem-report", version, long_about = None)]
pub struct Args {
    /// Observation ids to show (#12 or 12; comma-separated or repeated).
    #[arg(long, value_name = "ID", value_delimiter = ',', num_args = 1.., required_unless_present_any = ["file", "mermaid"])]
    pub obs: Vec<String>,
    /// A Python file's change history from mem-ast's function map.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["obs", "mermaid"])]
    pub file: Option<String>,
    /// A session's changed functions and their calls as a Mermaid flowchart.
    #[arg(long, conflicts_with = "obs")]
    pub mermaid: bool,
    /// With --mermaid: the session (default: the latest one mapped).
    #[arg(long, value_name = "ID", requires = "mermaid")]
    pub session: Option<String>,
    /// With --mermaid: unchanged definitions too.
    #[arg(long, requires = "mermaid")]
    pub all: bool,
    #[command(flatten)]
    pub common: Common,
}

pub fn run(args: Args, io: &mut Io) -> Result<Outcome> {
    if args.file.is_some() || args.mermaid {
        return code_map(&args, io);
    }
    let ids: Vec<i64> = args
        .obs
        .iter()
        .map(|s| {
            s.trim()
                .trim_start_matches('#')
                .parse()
                .map_err(|_| Error::Usage(format!("--obs: not an observation id: {s:?}")))
        })
        .collect::<Result<_>>()?;
    let cfg = Config::load(&config::data_home())?;
    let path = cfg.db_path();
    let Some(conn) = store::open_if_present(&path)? else {
        return Ok(io.no_memories(&path));
    };
    let mut found = 0;
    for id in ids {
        let Some(o) = observations::get(&conn, id)? else {
            io.warn(format!("no observation #{id}"));
            continue;
        };
        found += 1;
        match io.format() {
            Format::Jsonl | Format::Json => io.record(&o)?,
            _ => io.out.write_all(markdown(&o).as_bytes())?,
        }
    }
    Ok(if found == 0 {
        Outcome::NothingFound
    } else {
        Outcome::Ok
    })
}

/// One observation as markdown.
pub fn markdown(o: &Observation) -> String {
    let mut s = format!("## #{} {}: {}\n", o.id.unwrap_or_default(), o.kind, o.title);
    let meta: Vec<String> = [
        o.project.as_deref().map(crate::project::name_of),
        o.session_id.as_ref().map(|x| format!("session {x}")),
        o.created_at.clone(),
    ]
    .into_iter()
    .flatten()
    .collect();
    s.push_str(&format!("{}\n\n", meta.join(" · ")));
    if !o.summary.trim().is_empty() {
        s.push_str(&format!("{}\n\n", o.summary.trim()));
    }
    if let Some(d) = o.detail.as_deref().filter(|d| !d.trim().is_empty()) {
        s.push_str(&format!("{}\n\n", d.trim()));
    }
    for (label, list) in [
        ("Facts", &o.facts),
        ("Concepts", &o.concepts),
        ("Tags", &o.tags),
        ("Files modified", &o.files_modified),
        ("Files read", &o.files_read),
        ("Functions changed", &o.functions_changed),
    ] {
        if !list.is_empty() {
            s.push_str(&format!("{label}:\n"));
            for x in list {
                s.push_str(&format!("- {x}\n"));
            }
        }
    }
    s.push('\n');
    s
}

#[derive(serde::Serialize)]
struct FunctionChange<'a> {
    r#type: &'static str,
    v: u32,
    file_path: &'a str,
    session_id: &'a str,
    created_at: &'a str,
    qualname: &'a str,
    signature: &'a str,
    change: &'a str,
}

/// --file and --mermaid: mem-ast's function map.
fn code_map(args: &Args, io: &mut Io) -> Result<Outcome> {
    let cfg = Config::load(&config::data_home())?;
    let path = cfg.db_path();
    let Some(conn) = store::open_if_present(&path)? else {
        return Ok(io.no_memories(&path));
    };
    if let Some(file) = &args.file {
        let rows = store::functions::history(&conn, file)?;
        let recs: Vec<FunctionChange> = rows
            .iter()
            .map(|r| FunctionChange {
                r#type: "function_change",
                v: 1,
                file_path: &r.file_path,
                session_id: &r.session_id,
                created_at: &r.created_at,
                qualname: &r.qualname,
                signature: &r.signature,
                change: &r.change,
            })
            .collect();
        io.listing(
            &recs,
            &[
                "created_at",
                "session_id",
                "change",
                "qualname",
                "signature",
            ],
        )?;
        return Ok(if recs.is_empty() {
            Outcome::NothingFound
        } else {
            Outcome::Ok
        });
    }
    match crate::codemap::diagram(&conn, args.session.as_deref(), args.all)? {
        Some(m) => {
            io.out.write_all(m.as_bytes())?;
            Ok(Outcome::Ok)
        }
        None => Ok(Outcome::NothingFound),
    }
}
