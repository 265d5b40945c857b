//! memkit: a memory for Claude Code built from small Unix filters over one SQLite file.
//!
//! Domain modules never print, exit or read argv; `cmd` and `cli` do the talking.

pub mod capture;
pub mod cli;
pub mod cmd;
pub mod compress;
pub mod config;
pub mod context;
pub mod embed;
pub mod error;
pub mod hook;
pub mod index;
pub mod llm;
pub mod pipeline;
pub mod project;
pub mod record;
pub mod search;
pub mod store;
pub mod tokens;
pub mod transcript;

pub use error::{Error, Result};
