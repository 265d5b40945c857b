//! The database without its WAL: the checkpoint that ends each pipeline run and `mem backup`.
//!
//! Connections skip the checkpoint on close (see `configure`), so committed captures can sit in
//! `mem.db-wal` for a long time: a copy of `mem.db` alone would miss them.

use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::{Error, Result};

/// What a checkpoint achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// The whole WAL is in the database file and the WAL is empty.
    pub complete: bool,
    /// Frames in the WAL, and how many of them reached the database file.
    pub frames: i64,
    pub copied: i64,
}

fn open_plain(db: &Path, wait: Duration) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| Error::Store(format!("cannot open {}: {e}", db.display())))?;
    conn.busy_timeout(wait)?;
    Ok(conn)
}

/// Copies the WAL into the database file (synced) and truncates it, waiting at most `wait` for
/// other connections' locks. Best effort: while a reader or writer stays busy past `wait` the
/// result says so and the WAL keeps what is left for the next checkpoint.
pub fn checkpoint(db: &Path, wait: Duration) -> Result<Checkpoint> {
    let conn = open_plain(db, wait)?;
    let (busy, frames, copied): (i64, i64, i64) =
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
    Ok(Checkpoint {
        complete: busy == 0,
        frames,
        copied,
    })
}

/// Whether `dir/name` is the database at `db` or one of its companion files. Renaming a copy
/// over the live database would pair it with a WAL that is not its own: corruption. Compared
/// by canonical directory, as the two paths may be spelt differently.
fn is_live_file(db: &Path, dir: &Path, name: &std::ffi::OsStr) -> bool {
    let canon = |d: &Path| {
        let d = if d.as_os_str().is_empty() {
            Path::new(".")
        } else {
            d
        };
        d.canonicalize().unwrap_or_else(|_| d.to_path_buf())
    };
    let (Some(db_dir), Some(db_name)) = (db.parent(), db.file_name()) else {
        return false;
    };
    let db_name = db_name.to_string_lossy();
    canon(db_dir) == canon(dir)
        && ["", "-wal", "-shm", "-journal"]
            .iter()
            .any(|suffix| name.to_string_lossy() == format!("{db_name}{suffix}"))
}

/// Writes a consistent copy of the database, including what only the WAL holds, to `dest`
/// (mode 0600, synced, replacing `dest` in one rename). Returns its size in bytes.
pub fn backup(db: &Path, dest: &Path) -> Result<u64> {
    let conn = open_plain(db, super::BUSY_TIMEOUT)?;
    let name = dest
        .file_name()
        .ok_or_else(|| Error::Usage(format!("{}: not a file name", dest.display())))?;
    let dir = match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    if is_live_file(db, dir, name) {
        return Err(Error::Usage(format!(
            "{}: that is the database itself; back up to another file",
            dest.display()
        )));
    }
    let tmp = dir.join(tmp_name);
    let tmp_text = tmp
        .to_str()
        .ok_or_else(|| Error::Usage(format!("{}: not a UTF-8 path", dest.display())))?
        .to_string();
    // Created empty and private first: VACUUM INTO fills an empty file in place, so the copy is
    // never readable by others, not even while it is written.
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| Error::other(format!("cannot create {}: {e}", tmp.display())))?;
    let written = (|| -> Result<u64> {
        conn.execute("VACUUM INTO ?1", [&tmp_text])?;
        let f = std::fs::OpenOptions::new().append(true).open(&tmp)?;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        f.sync_all()?;
        let len = f.metadata()?.len();
        std::fs::rename(&tmp, dest)
            .map_err(|e| Error::other(format!("cannot write {}: {e}", dest.display())))?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(len)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
