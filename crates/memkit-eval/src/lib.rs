//! mem-eval's measurements. `retrieval`: a benchmark's corpus loaded into a scratch memory the
//! way a user would bring notes, searched per scope by each retriever, and scored next to a
//! textbook BM25 over the same text in the same run. `compression`: stored observations scored
//! against the captures they came from. `health`: the checks of a memory's state that
//! `mem-eval health` (and a future `mem status`/`mem doctor`) report. `title`: the title rubric.
//! `qag`: an LLM judge of observations (`compression --qag`). `benchmark`: two backends compared
//! on the same captures, each in a scratch copy.

pub mod benchmark;
pub mod compression;
pub mod context;
pub mod health;
pub mod qag;
pub mod retrieval;
pub mod title;
