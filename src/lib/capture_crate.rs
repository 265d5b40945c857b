//! memkit-capture: the modules `mem-capture` is built from, compiled a second time as their own
//! crate so the hook binary links none of the search side (tantivy, usearch and its C++ runtime,
//! ort, tokenizers). Every hook pays for what its binary links: a C++ runtime alone costs more
//! than half a millisecond of start-up per process.
//!
//! The files are the library's own (src/lib/…); nothing here is a copy. Rule for those modules:
//! they may use each other, never `embed`, `index`, `search`, `compress`, `llm` or the other tools.

pub mod capture;
pub mod cli;
pub mod config;
pub mod error;
pub mod hook;
pub mod project;
pub mod record;
pub mod store;
pub mod transcript;

pub use error::{Error, Result};

/// The tools this crate carries (the full registry, `cmd::ALL`, lives in the library).
pub mod cmd {
    pub mod capture;

    pub use crate::cli::Tool;
}

/// `record::Hit` names search's score breakdown; capture never builds or reads hits, so an empty
/// stand-in keeps record.rs one file for both crates.
pub mod search {
    #[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
    pub struct Explain {}
}
