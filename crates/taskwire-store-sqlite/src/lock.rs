//! One store per database file: the writer thread's in-memory state (the snapshot
//! cache, the queue's FIFO counter) is only right while no one else writes the file.
//! An advisory lock on `<database>-lock`, held for the store's lifetime and released
//! by the kernel when the process dies, keeps a second store (in this process or
//! another) from opening it.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use crate::error::SqliteError;

/// Holds the lock until dropped.
#[derive(Debug)]
pub(crate) struct FileLock {
    _file: File,
}

/// The lock file of a database.
pub(crate) fn lock_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-lock");
    PathBuf::from(name)
}

/// Takes the lock of `db`, failing at once if someone holds it.
pub(crate) fn acquire(db: &Path) -> Result<FileLock, SqliteError> {
    let path = lock_path(db);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)?;
    try_lock(&file, db)?;
    Ok(FileLock { _file: file })
}

#[cfg(unix)]
fn try_lock(file: &File, db: &Path) -> Result<(), SqliteError> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock only reads the descriptor, which `file` keeps open for the call.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if err.kind() == std::io::ErrorKind::WouldBlock {
        Err(SqliteError::InUse(db.to_path_buf()))
    } else {
        Err(SqliteError::Io(err))
    }
}

#[cfg(not(unix))]
fn try_lock(_file: &File, _db: &Path) -> Result<(), SqliteError> {
    // No advisory lock on this platform: running two stores on one file is on the operator.
    Ok(())
}
