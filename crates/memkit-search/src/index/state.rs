//! How far each index was brought up to date, and where the index files are: below `index`,
//! which writes the state after a run, and the indexes, which read it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use memkit_core::Result;

/// How far each index was brought up to date (`index/state.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct State {
    pub version: u32,
    /// `store::database_id` of the database indexed: a state of another database (or of none
    /// recorded) is not this database's, whatever its keys say.
    #[serde(default)]
    pub database_id: Option<String>,
    /// Largest `observations.updated_at` indexed into BM25.
    #[serde(default)]
    pub obs_updated_at: Option<String>,
    /// Session rowid → hash of the indexed summary text.
    #[serde(default)]
    pub sessions: BTreeMap<i64, String>,
    /// Documents in the BM25 index.
    #[serde(default)]
    pub docs: u64,
    /// Every distinct tag of the indexed records (lowercase), for fuzzy tag filters.
    #[serde(default)]
    pub tags: Vec<String>,
    /// One entry per vector index.
    #[serde(default)]
    pub vectors: Vec<VectorState>,
    #[serde(default)]
    pub updated_at: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct VectorState {
    pub model: String,
    pub dim: usize,
    /// `f32`, `f16` or `i8`.
    pub quantization: String,
    pub count: u64,
    /// Largest `embeddings.created_at` indexed.
    pub upto: Option<String>,
    /// File name under index/.
    pub file: String,
    /// The vectors added since `file` was written, in a file of their own beside it (its keys
    /// in a `.keys` sidecar, and the keys of `file` they replace or remove in `file`'s `.dead`
    /// sidecar): a run after one session writes this small file, not the whole index. Merged
    /// into `file` once it holds more than [`super::vectors::DELTA_SHARE`] of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<String>,
}

pub const STATE_VERSION: u32 = 1;

/// Why an index is not used when its state names another database.
pub const FOREIGN: &str = "index of another database";

/// Paths of the index directory.
#[derive(Debug, Clone)]
pub struct Layout {
    pub dir: PathBuf,
}

impl Layout {
    pub fn new(home: &Path) -> Layout {
        Layout {
            dir: memkit_core::Home::new(home).index(),
        }
    }
    pub fn bm25(&self) -> PathBuf {
        self.dir.join("bm25")
    }
    pub fn state(&self) -> PathBuf {
        self.dir.join("state.json")
    }
    /// `vectors-<model>-<dim>.vec`, the model name made file-safe.
    pub fn vector_file(model: &str, dim: usize) -> String {
        let safe: String = model
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        format!("vectors-{safe}-{dim}.vec")
    }

    /// Reads the state; `None` when missing or unreadable (then nothing is trusted).
    pub fn load_state(&self) -> Option<State> {
        let text = std::fs::read(self.state()).ok()?;
        let s: State = serde_json::from_slice(&text).ok()?;
        (s.version == STATE_VERSION).then_some(s)
    }

    /// The state when it belongs to the database `conn`; otherwise why not (the indexes are
    /// then another database's, or their state is missing or unreadable, and none is trusted).
    pub fn state_for(&self, conn: &Connection) -> Result<std::result::Result<State, String>> {
        let Some(s) = self.load_state() else {
            return Ok(Err("no index state".into()));
        };
        let id = memkit_core::store::database_id(conn)?;
        Ok(if id.is_some() && s.database_id == id {
            Ok(s)
        } else {
            Err(FOREIGN.into())
        })
    }

    pub fn save_state(&self, s: &State) -> Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let tmp = self.dir.join("state.json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(s)?)?;
        std::fs::rename(&tmp, self.state())?;
        Ok(())
    }
}
