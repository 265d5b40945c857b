//! memkit-core: what every memkit tool shares, light enough for a hook to link.
//!
//! Errors, settings (`config`), project identity, the hook payload, the records on the wire
//! (`record`, the JSONL contract), the SQLite store (`store`: the only place SQL is written) and
//! the CLI conventions (`cli`: formats, diagnostics, exit codes, the input reader; `notice`: the
//! warnings domain code hands the tools to print). Nothing here
//! depends on the search side (tantivy, the vector index, ONNX Runtime) or on any other memkit crate.

pub mod cli;
pub mod config;
pub mod discover;
pub mod error;
pub mod errsig;
pub mod home;
pub mod hook;
pub mod ids;
pub mod log;
pub mod notice;
pub mod programs;
pub mod project;
pub mod recall;
pub mod record;
pub mod store;
pub mod text;
pub mod tokens;

pub use error::{Context, Error, Result};
pub use home::Home;

/// `s` cut to at most `max` characters, the last of them an ellipsis marking the cut.
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
    t.push('…');
    t
}

/// The first `n` hex digits of the SHA-256 of `bytes`: a file name for any text.
pub fn short_hash(bytes: &[u8], n: usize) -> String {
    use sha2::Digest;
    let mut h = hex::encode(sha2::Sha256::digest(bytes));
    h.truncate(n);
    h
}

/// Text of bytes that should be UTF-8, with U+FFFD for what is not. Validates first: on valid
/// input `String::from_utf8_lossy` walks byte by byte (7M instructions for a 1 MB payload, a
/// quarter of what a hook spends on it).
pub fn utf8_lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}
