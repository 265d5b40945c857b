//! mem-mcp: memkit's memories as an MCP server on stdio, for Claude Code, Claude Desktop,
//! Cursor or any MCP client. The client starts it per session and it ends when its stdin does.

use clap::{CommandFactory, Parser};

use memkit_core::cli::{Common, Outcome};
use memkit_core::config;
use memkit_core::{Error, Result};

use crate::memory::Memory;

pub const TOOL: memkit_core::cli::Tool = memkit_core::cli::Tool {
    name: "mem-mcp",
    command: || Args::command(),
    details: DETAILS,
    examples: &[
        (
            "claude mcp add -s user memkit -- mem-mcp",
            "Let Claude Code call memkit's tools in every project (mem-install --mcp does the same).",
        ),
        (
            "mem-install --mcp --project",
            "Declare the server in this project's .mcp.json instead.",
        ),
        (
            "npx @modelcontextprotocol/inspector mem-mcp",
            "Try the tools by hand in the MCP Inspector.",
        ),
    ],
};

const DETAILS: &str = r#"
mem-mcp speaks the Model Context Protocol (JSON-RPC 2.0, one message per line) on stdin and
stdout; it is started by the client, serves one session and exits 0 when the client closes stdin.
There is no daemon: each call opens the SQLite store, answers and closes it, so the pipeline and
the hooks work beside it as always. Logs and errors go to stderr.

Tools (each with a JSON schema and a description for the model):
search (query, project, all_projects, type, since, until, files, limit) ranks like mem-search and
returns refs (o17 an observation, s4 a session, l3 a learning), titles, scores and one line each;
get (refs) returns those records in full; timeline (project, around: a ref or a date, before,
after) lists a project's observations around that moment with their sessions; save (text, tags,
project) stores a note exactly like mem-capture --note (redacted, MEM_EXCLUDE respected) and starts
`mem pipeline --detach` so that it becomes searchable; context (prompt, project) returns the
SessionStart block, or with prompt the memories that text would bring in; file_history (path)
returns the observations that changed or read a file, the functions changed in it, and as recall
the text the PreToolUse hook prints before an edit of it.

The project is the one of the directory the server was started in (as mem-capture resolves it)
unless a call names one. Another project's memories appear only when a call passes all_projects
or MEM_CONTEXT_OTHER_PROJECTS=1 is set, and are then labelled (other_project, project_name).
A memory taken from another machine by mem sync carries from (that machine's sync.name).
An excluded project (MEM_EXCLUDE) is neither shown nor stored; with MEM_DISABLE=1 every call is
refused. Arguments that cannot be right (a bad date, a malformed ref, an unknown type, a missing
field) are JSON-RPC errors (-32602, invalid params); a well-formed call with no answer (an unknown
ref, no memories yet, an excluded project) is a tool result with isError and the reason.

Register it with mem-install --mcp (user scope: ~/.claude.json; --project: the project's
.mcp.json), with claude mcp add -s user memkit -- mem-mcp, or in Claude Desktop's or Cursor's
mcpServers JSON ({"memkit": {"command": "/path/to/mem-mcp"}}); the plugin declares it in its
.mcp.json. mem doctor checks the registration.
"#;

/// Serve memkit's memories to an MCP client on stdin and stdout (search, get, timeline, save,
/// context, file_history).
#[derive(Debug, Parser)]
#[command(name = "mem-mcp", version, long_about = None)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
}

/// The whole of mem-mcp: not `cli::main`, whose buffered stdout holds the lock the transport
/// writes through.
pub fn main() -> ! {
    // Like every memkit tool: a database or log this creates is the user's alone.
    // SAFETY: umask only sets the process's file mode mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
    let args = Args::parse();
    memkit_core::cli::exit_with("mem-mcp", run(args))
}

/// Serves one session on stdin and stdout; returns when the client closes stdin.
pub fn run(_args: Args) -> Result<Outcome> {
    let home = config::data_home();
    let dir = memkit_core::project::current_dir();
    let memory = Memory::open(&home, dir)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime
        .block_on(crate::server::serve(memory))
        .map_err(|e| Error::other(format!("MCP session: {e}")))?;
    Ok(Outcome::Ok)
}
