//! The data home's layout: every file and directory memkit keeps there, named here once.

use std::ops::Deref;
use std::path::{Path, PathBuf};

const DB: &str = "mem.db";
const DB_WAL: &str = "mem.db-wal";
const DB_SHM: &str = "mem.db-shm";
const CONFIG: &str = "config.toml";
const INDEX: &str = "index";
const LOGS: &str = "logs";
const SPOOL: &str = "spool";
const BIN: &str = "bin";
const PIPELINE_LOCK: &str = "pipeline.lock";
const PIPELINE_WANTED: &str = "pipeline.wanted";
const RECALL: &str = "recall";
const EVAL: &str = "eval";
const SYNC: &str = "sync";

/// A data home (`$MEM_HOME`): a directory and the names of what memkit keeps in it. It derefs
/// to its path, so it goes wherever a `&Path` does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Home(PathBuf);

impl Home {
    /// What memkit keeps in a data home, tightened with it (see `store::ensure_home`). Only
    /// these: MEM_HOME may name a directory that holds other things (even $HOME), which are
    /// the user's business.
    pub const ENTRIES: &[&str] = &[
        DB,
        DB_WAL,
        DB_SHM,
        CONFIG,
        INDEX,
        LOGS,
        SPOOL,
        BIN,
        PIPELINE_LOCK,
        PIPELINE_WANTED,
        SYNC,
    ];

    pub fn new(path: impl Into<PathBuf>) -> Home {
        Home(path.into())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The database, `mem.db`.
    pub fn db(&self) -> PathBuf {
        self.0.join(DB)
    }

    /// The database and its WAL and shared-memory files.
    pub fn db_files(&self) -> [PathBuf; 3] {
        [DB, DB_WAL, DB_SHM].map(|f| self.0.join(f))
    }

    pub fn config_file(&self) -> PathBuf {
        self.0.join(CONFIG)
    }

    /// The BM25 and vector indexes' directory.
    pub fn index(&self) -> PathBuf {
        self.0.join(INDEX)
    }

    /// Where hooks and runs log what they cannot say on stdout.
    pub fn logs(&self) -> PathBuf {
        self.0.join(LOGS)
    }

    /// `logs/<prog>.log`.
    pub fn log(&self, prog: &str) -> PathBuf {
        self.logs().join(format!("{prog}.log"))
    }

    /// Events a hook could not store yet.
    pub fn spool(&self) -> PathBuf {
        self.0.join(SPOOL)
    }

    /// The lock every pipeline run takes turns on.
    pub fn pipeline_lock(&self) -> PathBuf {
        self.0.join(PIPELINE_LOCK)
    }

    /// Left by a pipeline run that found the lock taken: the run holding it goes again for
    /// the work that run came for once it has let the lock go.
    pub fn pipeline_wanted(&self) -> PathBuf {
        self.0.join(PIPELINE_WANTED)
    }

    pub fn pipeline_log(&self) -> PathBuf {
        self.log("pipeline")
    }

    /// What each session was told by recall, one small file per session.
    pub fn recall(&self) -> PathBuf {
        self.0.join(RECALL)
    }

    /// mem sync's working clone of the sync remote (its own files, everyone's, and git's).
    pub fn sync(&self) -> PathBuf {
        self.0.join(SYNC)
    }

    /// Each measuring mode's last figures.
    pub fn eval(&self) -> PathBuf {
        self.0.join(EVAL)
    }

    /// Marks when mem-embed last pruned the embedding cache (it does so once a day).
    pub fn embed_prune_marker(&self) -> PathBuf {
        self.0.join(".embed-cache-pruned")
    }

    /// Marks when mem-compress last dropped old raw tool responses (once a day).
    pub fn raw_drop_marker(&self) -> PathBuf {
        self.0.join(".raw-dropped")
    }

    /// A copy of the database that process `pid` works on before swapping it in.
    pub fn scratch_db(&self, tool: &str, pid: u32) -> PathBuf {
        self.0.join(format!(".{tool}-{pid}.db"))
    }

    /// Where memkit writes when this home cannot be written: `<temp dir>/memkit-<uid>/<hash of
    /// home>`, so two data homes never mix their spooled events or logs.
    pub fn fallback(&self) -> Home {
        use sha2::Digest;
        let hash = hex::encode(&sha2::Sha256::digest(self.0.as_os_str().as_encoded_bytes())[..6]);
        // SAFETY: getuid has no preconditions and cannot fail.
        let uid = unsafe { libc::getuid() };
        Home(
            std::env::temp_dir()
                .join(format!("memkit-{uid}"))
                .join(hash),
        )
    }
}

impl Deref for Home {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Home {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl From<PathBuf> for Home {
    fn from(p: PathBuf) -> Home {
        Home(p)
    }
}

impl From<&Path> for Home {
    fn from(p: &Path) -> Home {
        Home(p.to_path_buf())
    }
}
