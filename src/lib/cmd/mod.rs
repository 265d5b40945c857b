//! One module per tool: its clap `Args` and `run(args, io)`. `ALL` is the one registry of tools
//! (the `mem` dispatcher, man pages and completions all read it). The tools that speak of the
//! others (`mem`, `mem-install`) are handed it by their binaries: a tool's module never names
//! this one, which names them all.

pub mod ast;
pub mod compress;
pub mod context;
pub mod doctor;
pub mod embed;
pub mod eval;
pub mod forget;
pub mod index;
pub mod install;
pub mod learn;
pub mod mem;
pub mod prune;
pub mod redact;
pub mod report;
pub mod search;
pub mod status;
pub mod sync;

use crate::cli::Tool;
pub use memkit_capture::tool as capture;
pub use memkit_mcp::tool as mcp;

/// Every tool that works, in the order `mem help` lists them.
pub const ALL: &[Tool] = &[
    mem::TOOL,
    capture::TOOL,
    compress::TOOL,
    embed::TOOL,
    index::TOOL,
    search::TOOL,
    context::TOOL,
    ast::TOOL,
    learn::TOOL,
    report::TOOL,
    mcp::TOOL,
    eval::TOOL,
    prune::TOOL,
    redact::TOOL,
    install::TOOL,
];

pub fn find(name: &str) -> Option<&'static Tool> {
    ALL.iter()
        .find(|t| t.name == name || t.name.strip_prefix("mem-") == Some(name))
}
