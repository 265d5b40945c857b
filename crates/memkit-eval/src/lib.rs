//! mem-eval's measurements. `retrieval`: a benchmark's corpus loaded into a scratch memory the
//! way a user would bring notes, searched per scope by each retriever, and scored next to a
//! textbook BM25 over the same text in the same run.

pub mod context;
pub mod retrieval;
