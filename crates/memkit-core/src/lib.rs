//! memkit-core: what every memkit tool shares, light enough for a hook to link.
//!
//! Errors, settings (`config`), project identity, the hook payload, the records on the wire
//! (`record`, the JSONL contract), the SQLite store (`store`: the only place SQL is written) and
//! the CLI conventions (`cli`: formats, diagnostics, exit codes, the input reader). Nothing here
//! depends on the search side (tantivy, usearch, ONNX Runtime) or on any other memkit crate.

pub mod cli;
pub mod config;
pub mod error;
pub mod hook;
pub mod project;
pub mod record;
pub mod store;
pub mod tokens;

pub use error::{Context, Error, Result};
