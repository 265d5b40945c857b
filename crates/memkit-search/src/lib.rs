//! memkit-search: the search side. `embed` turns text into vectors with a local ONNX model,
//! `index` keeps the BM25 (tantivy) and vector indexes beside the store, and `search`
//! fuses both into ranked hits. Hooks never link this crate (it carries a C++ runtime and
//! ONNX Runtime).

pub mod embed;
pub mod index;
pub mod search;
pub mod text;
pub mod textbook;
