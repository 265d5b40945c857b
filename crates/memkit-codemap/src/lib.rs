//! memkit-codemap: the side of mem-ast that touches the file system and the store, so that
//! memkit-ast stays a pure library. `files`: filter mode's walk, reads and parse; `database`:
//! the function map kept per session from the files Claude wrote or edited (mem-pipeline's
//! stage); `records`: what mem-ast prints.

pub mod database;
pub mod files;
pub mod records;
