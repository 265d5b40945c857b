//! memkit: the command-line tools over the memkit crates. `cmd` holds one module per tool
//! (parse, one domain call, print); `pipeline` drives the stages after a session.
//!
//! The domain crates are re-exported under their old module names, so tests, benches and
//! scripts reach every part through `memkit::…`.

pub mod cmd;
pub mod install;
pub mod pipeline;
pub mod render;
pub mod report;
pub mod reredact;
pub mod tools;

pub use memkit_ast as ast;
pub use memkit_capture as capture;
pub use memkit_capture::transcript;
pub use memkit_codemap as codemap;
pub use memkit_compress as compress;
pub use memkit_compress::llm;
pub use memkit_context as context;
pub use memkit_core::{
    Context, Error, Result, cli, config, error, errsig, hook, ids, project, record, store, tokens,
};
pub use memkit_search::{embed, index, search};
