//! One module per tool: its clap `Args` and `run(args, io)`. `ALL` is the one registry of tools
//! (the `mem` dispatcher, man pages and completions all read it).

pub mod capture;
pub mod compress;
pub mod context;
pub mod embed;
pub mod index;
pub mod install;
pub mod mem;
pub mod report;
pub mod search;

/// A tool as the registry knows it.
pub struct Tool {
    /// Binary name (`mem-capture`).
    pub name: &'static str,
    /// Its clap definition.
    pub command: fn() -> clap::Command,
    /// Extra man page text (paragraphs separated by blank lines).
    pub details: &'static str,
    /// (command, what it does) pairs for the EXAMPLES section.
    pub examples: &'static [(&'static str, &'static str)],
}

/// Every tool that works, in the order `mem help` lists them.
pub const ALL: &[Tool] = &[
    mem::TOOL,
    capture::TOOL,
    compress::TOOL,
    embed::TOOL,
    index::TOOL,
    search::TOOL,
    context::TOOL,
    report::TOOL,
    install::TOOL,
];

pub fn find(name: &str) -> Option<&'static Tool> {
    ALL.iter()
        .find(|t| t.name == name || t.name.strip_prefix("mem-") == Some(name))
}
