//! Man pages, shell completions and `mem help`'s listing, generated from the clap definitions so
//! they cannot drift. Each is handed the registry of the tools it speaks of.

use clap_mangen::Man;

use crate::cli::Tool;
use crate::config::SETTINGS;

const EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0",
        "Success (also when stdout was closed early, as by `| head`).",
    ),
    (
        "1",
        "Nothing found, or a result below the requested threshold.",
    ),
    (
        "2",
        "Usage error: unknown flag, bad value, or a setting (MEM_* variable or config.toml) out of its range; a hook logs a bad setting and uses its default instead.",
    ),
    (
        "3",
        "Bad input: a record or file that cannot be read; the message names it and its line. A bad line of JSONL input (FILE or -) is warned about as FILE:LINE and skipped, the other lines are processed, and the tool then exits 3.",
    ),
    (
        "4",
        "Store error: the database cannot be opened, migrated or written.",
    ),
    ("5", "Any other failure."),
];

fn esc(s: &str) -> String {
    s.replace('\\', "\\e").replace('-', "\\-")
}

fn section(out: &mut String, title: &str, items: &[(&str, &str)]) {
    out.push_str(&format!(".SH \"{title}\"\n"));
    for (k, v) in items {
        out.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", esc(k), esc(v)));
    }
}

fn cmd_has_subcommands(tool: &Tool) -> bool {
    (tool.command)()
        .get_subcommands()
        .any(|c| !c.is_hide_set() && c.get_name() != "help")
}

/// The whole man page of one tool of `tools`, as roff.
pub fn render(tool: &Tool, tools: &[Tool]) -> String {
    let cmd = (tool.command)();
    let man = Man::new(cmd).section("1").manual("memkit");
    let mut buf = Vec::new();
    man.render_title(&mut buf).expect("write to vec");
    man.render_name_section(&mut buf).expect("write to vec");
    man.render_synopsis_section(&mut buf).expect("write to vec");
    man.render_description_section(&mut buf)
        .expect("write to vec");
    man.render_options_section(&mut buf).expect("write to vec");
    // clap_mangen writes the heading even for a tool without subcommands.
    if cmd_has_subcommands(tool) {
        man.render_subcommands_section(&mut buf)
            .expect("write to vec");
    }
    let mut out = String::from_utf8(buf).expect("roff is utf-8");
    if !tool.details.is_empty() {
        out.push_str(".SH DETAILS\n");
        // Paragraphs are wrapped in the source (raw strings that review well); roff fills
        // lines itself, so each becomes one line again.
        for para in tool.details.trim().split("\n\n") {
            let text: Vec<&str> = para.lines().map(str::trim).collect();
            out.push_str(&format!(".PP\n{}\n", esc(&text.join(" "))));
        }
    }
    section(&mut out, "EXIT STATUS", EXIT_STATUS);
    let env: Vec<(&str, String)> = SETTINGS.iter().map(|s| (s.var, s.describe())).collect();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    section(&mut out, "ENVIRONMENT", &env);
    section(
        &mut out,
        "FILES",
        &[
            ("$MEM_HOME/mem.db", "The SQLite store every tool shares."),
            (
                "$MEM_HOME/config.toml",
                "Settings; MEM_* variables and flags override them. Its [redact] table adds redaction patterns and an allow-list (see mem-capture(1)).",
            ),
            ("$MEM_HOME/logs/", "What hooks could not report on stdout."),
            (
                "$MEM_HOME/spool/",
                "Hook payloads kept while the database was unavailable.",
            ),
        ],
    );
    section(&mut out, "EXAMPLES", tool.examples);
    out.push_str(".SH \"SEE ALSO\"\n");
    let see: Vec<String> = tools
        .iter()
        .filter(|t| t.name != tool.name)
        .map(|t| format!("\\fB{}\\fR(1)", esc(t.name)))
        .collect();
    out.push_str(&see.join(", "));
    out.push('\n');
    out
}

/// Completions for every tool in one script, for shells that accept several definitions.
pub fn completions(tools: &[Tool], shell: clap_complete::Shell) -> Vec<u8> {
    tools.iter().flat_map(|t| completion(t, shell)).collect()
}

/// One tool's completions.
pub fn completion(tool: &Tool, shell: clap_complete::Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut (tool.command)(), tool.name, &mut out);
    out
}

/// `mem help`: the tools of `tools` that `installed` says are there, each with its one-line
/// description.
pub fn listing(tools: &[Tool], installed: impl Fn(&str) -> bool) -> String {
    let rows: Vec<Vec<String>> = tools
        .iter()
        .filter(|t| t.name != "mem" && installed(t.name))
        .map(|t| {
            let about = (t.command)()
                .get_about()
                .map(|a| a.to_string())
                .unwrap_or_default();
            vec![t.name.trim_start_matches("mem-").to_string(), about]
        })
        .collect();
    let mut text = String::from("usage: mem TOOL [ARGS…]   (runs mem-TOOL)\n\ntools:\n");
    for r in &rows {
        text += &format!("  {:<10} {}\n", r[0], r[1]);
    }
    text += "\nalso: mem help TOOL · mem version · mem completions SHELL · man mem-TOOL\n";
    text += "upkeep: mem pipeline [--detach] · mem backup FILE · mem forget … · mem prune\n";
    text += "sharing: mem sync [--dry-run | --status]\n";
    text
}
