//! Store options and the `sqlite://` address syntax.

use std::path::PathBuf;

use crate::error::SqliteError;

/// How hard SQLite works to make each commit durable (`PRAGMA synchronous`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// The write-ahead log is synced after every group commit, before the commit
    /// is answered or shown to any read: an acknowledged write survives a process
    /// kill, an OS crash and a power loss.
    #[default]
    Full,
    /// No sync at commit (only at checkpoints, every 4 MiB of log): an acknowledged
    /// write survives a process kill, but an OS crash or power loss takes every
    /// commit since the last checkpoint (a few hundred tasks at most), and reads
    /// may show commits before they are durable.
    Normal,
}

impl Synchronous {
    pub(crate) fn pragma_value(self) -> &'static str {
        match self {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        }
    }
}

/// Options of [`SqliteStore::open_with`](crate::SqliteStore::open_with).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// Commit durability; `Full` by default.
    pub synchronous: Synchronous,
    /// Most write requests run in one group-commit transaction (1..; default 1024).
    pub max_batch: usize,
    /// Read-only connections used concurrently for reads (1..; default 4).
    pub readers: usize,
    /// How many task snapshots the in-memory read cache keeps at most (0 turns it
    /// off; default 8192).
    pub cache_tasks: usize,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            synchronous: Synchronous::Full,
            max_batch: 1024,
            readers: 4,
            cache_tasks: 8192,
        }
    }
}

/// Splits a store address (`sqlite://relative.db`, `sqlite:///abs.db`, `sqlite:x.db`
/// or a bare path, each with an optional `?synchronous=full|normal`) into a path and options.
pub(crate) fn parse_url(url: &str) -> Result<(PathBuf, SqliteOptions), SqliteError> {
    let bad = |reason: &str| SqliteError::InvalidUrl {
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let (location, query) = match url.split_once('?') {
        Some((l, q)) => (l, Some(q)),
        None => (url, None),
    };
    let path = if let Some(rest) = location.strip_prefix("sqlite://") {
        rest
    } else if let Some(rest) = location.strip_prefix("sqlite:") {
        rest
    } else if location.contains("://") {
        return Err(bad("not a sqlite:// address"));
    } else {
        location
    };
    if path.is_empty() {
        return Err(bad("no database path"));
    }
    if path == ":memory:" || path.starts_with("file:") {
        return Err(bad(
            "in-memory and URI databases are not supported; use memory:// for an in-memory store",
        ));
    }
    let mut options = SqliteOptions::default();
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "synchronous" => {
                options.synchronous = match value.to_ascii_lowercase().as_str() {
                    "full" => Synchronous::Full,
                    "normal" => Synchronous::Normal,
                    _ => return Err(bad("synchronous must be full or normal")),
                }
            }
            _ => return Err(bad(&format!("unknown option {key:?} (known: synchronous)"))),
        }
    }
    Ok((PathBuf::from(path), options))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse() {
        let (p, o) = parse_url("sqlite://taskwire.db").unwrap();
        assert_eq!(p, PathBuf::from("taskwire.db"));
        assert_eq!(o.synchronous, Synchronous::Full);
        let (p, _) = parse_url("sqlite://data/x.db").unwrap();
        assert_eq!(p, PathBuf::from("data/x.db"));
        let (p, _) = parse_url("sqlite:///var/lib/taskwire/x.db").unwrap();
        assert_eq!(p, PathBuf::from("/var/lib/taskwire/x.db"));
        let (p, o) = parse_url("/tmp/x.db?synchronous=normal").unwrap();
        assert_eq!(p, PathBuf::from("/tmp/x.db"));
        assert_eq!(o.synchronous, Synchronous::Normal);
        let (p, o) = parse_url("sqlite:rel.db?synchronous=FULL").unwrap();
        assert_eq!(p, PathBuf::from("rel.db"));
        assert_eq!(o.synchronous, Synchronous::Full);
    }

    #[test]
    fn bad_addresses_are_refused() {
        for bad in [
            "",
            "sqlite://",
            "sqlite://x.db?synchronous=off",
            "sqlite://x.db?cache=big",
            "postgres://host/db",
            "sqlite://:memory:",
        ] {
            assert!(
                matches!(parse_url(bad), Err(SqliteError::InvalidUrl { .. })),
                "{bad:?} should be refused"
            );
        }
    }
}
