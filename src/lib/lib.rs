//! memkit: the command-line tools over the memkit crates. `cmd` holds one module per tool
//! (parse, one domain call, print); `pipeline` drives the stages after a session.
//!
//! The domain crates are re-exported under their old module names, so tests, benches and
//! scripts reach every part through `memkit::…`.

pub mod cmd;
pub mod doctor;
pub mod forget;
pub mod install;
pub mod pipeline;
pub mod prune;
pub mod render;
pub mod report;
pub mod reredact;
pub mod sync;
pub mod tools;

pub use memkit_ast as ast;
pub use memkit_capture as capture;
pub use memkit_capture::transcript;
pub use memkit_codemap as codemap;
pub use memkit_compress as compress;
pub use memkit_compress::llm;
pub use memkit_context as context;
pub use memkit_core::{
    Context, Error, Home, Result, cli, config, error, errsig, hook, ids, notice, programs, project,
    record, store, tokens,
};
pub use memkit_search::{embed, index, search};

#[doc(hidden)]
pub use mimalloc as __mimalloc;

/// A batch program's allocator: mimalloc, with freed memory kept for the process's life.
/// mem-ast's parser allocates a node per expression and frees each file's tree: glibc's
/// malloc was a sixth of its profile over a tree of Python, and the pages it handed back to
/// the kernel were zeroed again on the next fault. A batch run that exits would hold its
/// high-water mark anyway. `memkit::batch_allocator!();` at a program's top level, then
/// `batch_allocator_setup()` first thing in `main`.
#[macro_export]
macro_rules! batch_allocator {
    () => {
        #[global_allocator]
        static ALLOC: $crate::__mimalloc::MiMalloc = $crate::__mimalloc::MiMalloc;

        unsafe extern "C" {
            fn mi_option_set(option: ::std::ffi::c_int, value: ::std::ffi::c_long);
        }

        fn batch_allocator_setup() {
            /// mimalloc.h's `mi_option_purge_delay` (v2 and v3): milliseconds before freed
            /// memory goes back to the OS; -1 never.
            const MI_OPTION_PURGE_DELAY: ::std::ffi::c_int = 15;
            // SAFETY: one of mimalloc's documented options, set before any other thread runs.
            unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
        }
    };
}
