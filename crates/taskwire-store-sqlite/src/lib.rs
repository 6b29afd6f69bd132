//! The embedded default store of taskwire: a [`TaskStore`] on one SQLite file.
//!
//! ```
//! use std::sync::Arc;
//! use taskwire_core::{Caller, CreateTask, Message, TaskService, TaskState};
//! use taskwire_store_sqlite::SqliteStore;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # std::env::set_current_dir(dir.path())?;
//! // `sqlite://PATH` (relative) or `sqlite:///abs/path`; missing directories are made.
//! let store = SqliteStore::open("sqlite://data/tasks.db?synchronous=full")?;
//! let service = TaskService::new(Arc::new(store), "scripted");
//! let me = Caller::local();
//! let created = service.create(&me, CreateTask::new(Message::user_text("hi"))).await?;
//! // Durable once create returns; a restart finds it submitted, ready to be claimed.
//! let task = service.get(&me, &created.task.id).await?;
//! assert_eq!(task.state, TaskState::Submitted);
//! # Ok(())
//! # }
//! ```
//!
//! - **WAL mode**: readers never block the writer nor each other. Reads run on a
//!   small pool of read-only connections on tokio's blocking thread pool; the
//!   latest committed snapshots of hot tasks are also kept in a bounded in-memory
//!   cache that the writer updates after each commit, so most `get`s never reach SQLite.
//! - **Listings in memory**: each owner's tasks in both list orders are kept on the
//!   heap (about 190 bytes per task, built from the `tasks` table at open), so that
//!   creates and state changes do not rewrite a page of a per-owner index each.
//!   Idempotency keys live in the task rows and are found through a hash map the
//!   writer builds at open, so a create writes no page at a random place for its
//!   key; task ids are mapped to row ids in memory the same way. One scan of the
//!   `tasks` table at open builds these maps.
//! - **One store per file**: an advisory lock on `<database>-lock` keeps a second
//!   store, in this process or another, from opening the same database.
//! - **Group commit**: every write (create, commit, claim, renew, release,
//!   drop_claim, reap, sweep) goes over a channel to one writer thread, which runs
//!   all pending requests (up to [`SqliteOptions::max_batch`]) in one
//!   `BEGIN IMMEDIATE … COMMIT`, then publishes the wakes and answers each request.
//!   Throughput is therefore not bounded by one disk sync per task.
//! - **Durability**: a write is answered only after its transaction committed; with
//!   the default `synchronous=full` the write-ahead log is synced after that commit
//!   before the write is answered, so an acknowledged create survives `kill -9` and
//!   power loss alike. Nothing is shown before that sync either: reads (the cache,
//!   the read pool, the in-memory indexes) wait until what they may have seen is
//!   durable, and wake-ups are published after it.
//! - **Closing**: dropping the store closes the read connections, lets the writer
//!   answer what was sent, checkpoints the log into the database file and closes
//!   it, so that SQLite removes the `-wal` and `-shm` files.
//! - **Versioned migrations**: the schema is a list of SQL migrations applied in
//!   order and counted by `PRAGMA user_version`.
//!
//! The semantics are exactly those of [`taskwire_core::MemoryStore`], and the
//! shared store suite checks them.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use async_trait::async_trait;
use taskwire_core::event::Event;
use taskwire_core::record::{PutOutcome, Quota, Record, RecordKind, RecordLease, RecordScope};
use taskwire_core::store::{
    Claim, Commit, CreateOutcome, IdempotencyKey, ListPage, ListQuery, TaskStore,
};
use taskwire_core::{StoreError, Task, TaskId, TaskState, Timestamp, WakeHub};
use tokio::sync::oneshot;

mod cache;
mod durable;
mod error;
mod idem;
mod ids;
mod listing;
mod lock;
mod options;
mod queue;
mod read;
mod records;
mod row;
mod schema;
#[cfg(test)]
mod visibility_tests;
mod writer;

pub use error::SqliteError;
pub use options::{SqliteOptions, Synchronous};

use cache::SnapshotCache;
use durable::Durability;
use ids::TaskIds;
use listing::Listings;
use read::Readers;
use records::{RecordDone, RecordOp};
use row::{dur_ns, event_rows, limit, ns, TaskRow};
use writer::{Op, Reply, Writer};

fn mismatch(done: RecordDone) -> StoreError {
    StoreError::Backend(format!("sqlite writer: unexpected record answer {done:?}"))
}

/// The SQLite store. Cheap to share behind an `Arc`; dropping it lets the writer
/// thread finish the requests already sent and close the database.
pub struct SqliteStore {
    path: PathBuf,
    hub: Arc<WakeHub>,
    cache: Arc<SnapshotCache>,
    durability: Arc<Durability>,
    tx: Option<mpsc::Sender<Op>>,
    writer: Option<JoinHandle<()>>,
    readers: Arc<Readers>,
    listings: Arc<Listings>,
    ids: Arc<TaskIds>,
    /// Released last, once the writer thread has closed the database.
    _lock: lock::FileLock,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn stopped() -> StoreError {
    StoreError::Backend("the sqlite writer thread has stopped".into())
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `url`: `sqlite://relative/path.db`,
    /// `sqlite:///absolute/path.db` or a bare path, optionally followed by
    /// `?synchronous=full` (the default) or `?synchronous=normal`.
    pub fn open(url: &str) -> Result<SqliteStore, SqliteError> {
        let (path, options) = options::parse_url(url)?;
        Self::open_with(path, options)
    }

    /// Opens (creating if needed) the store at a file path with explicit options.
    /// Creates the file's directory if it is missing, switches the database to WAL
    /// mode, applies pending migrations (a new schema is checkpointed and synced
    /// before this returns; a file that exists without a schema is recreated with a
    /// warning in the log) and starts the writer thread.
    pub fn open_with(
        path: impl AsRef<Path>,
        options: SqliteOptions,
    ) -> Result<SqliteStore, SqliteError> {
        let path = path.as_ref();
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() && !dir.exists() {
                std::fs::create_dir_all(dir)?;
            }
        }
        let file_lock = lock::acquire(path)?;
        let conn = schema::open_writer(path, &options)?;
        // Readers open lazily; pin the path so that a later change of the working
        // directory cannot point them at another file.
        let path = std::fs::canonicalize(path)?;
        let hub = Arc::new(WakeHub::new());
        let cache = Arc::new(SnapshotCache::new(options.cache_tasks));
        let durability = Arc::new(Durability::new());
        let loaded = ids::load(&conn)?;
        let listings = Arc::new(loaded.listings);
        let ids = Arc::new(loaded.ids);
        let writer = Writer::new(
            conn,
            &path,
            hub.clone(),
            cache.clone(),
            durability.clone(),
            writer::Indexes {
                listings: listings.clone(),
                ids: ids.clone(),
                idem: loaded.idem,
            },
            options.max_batch,
            options.synchronous == Synchronous::Full,
        )?;
        let readers = Arc::new(Readers::new(path.clone(), options.readers)?);
        let (tx, rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("taskwire-sqlite-writer".into())
            .spawn(move || writer.run(rx))
            .map_err(|e| SqliteError::Writer(e.to_string()))?;
        tracing::debug!(path = %path.display(), "sqlite store open");
        Ok(SqliteStore {
            path,
            hub,
            cache,
            durability,
            tx: Some(tx),
            writer: Some(handle),
            readers,
            listings,
            ids,
            _lock: file_lock,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sends a request to the writer thread and waits for its answer.
    async fn write<T>(&self, make: impl FnOnce(Reply<T>) -> Op) -> Result<T, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .as_ref()
            .ok_or_else(stopped)?
            .send(make(reply))
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }

    /// Runs a read on the pool, then waits until whatever it may have seen is
    /// durable (see [`durable`]).
    async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&rusqlite::Connection) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let r = self.readers.run(f).await?;
        self.settle().await?;
        Ok(r)
    }

    /// Waits until everything committed so far is durable: after a read of the
    /// database or of the in-memory indexes, before answering it. Nearly always at
    /// once; the waiting future is boxed so that reads do not carry it.
    async fn settle(&self) -> Result<(), StoreError> {
        let generation = self.durability.latest();
        if !self.durability.is_durable(generation) {
            Box::pin(self.durability.wait(generation)).await?;
        }
        Ok(())
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        // The read connections close first, so that the writer's connection is
        // the last one: closing it checkpoints and deletes the log.
        self.readers.close();
        // Closing the channel stops the writer once it has served what was sent.
        drop(self.tx.take());
        if let Some(handle) = self.writer.take() {
            if handle.join().is_err() {
                tracing::error!("the sqlite writer thread panicked");
            }
        }
    }
}

#[async_trait]
impl TaskStore for SqliteStore {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn hub(&self) -> &WakeHub {
        &self.hub
    }

    async fn create(
        &self,
        task: Task,
        events: Vec<Event>,
        key: Option<IdempotencyKey>,
        enqueue: bool,
    ) -> Result<CreateOutcome, StoreError> {
        let row = TaskRow::new(&task)?;
        let events = event_rows(&events)?;
        let task = Arc::new(task);
        let existing = self
            .write(|reply| Op::Create {
                task: task.clone(),
                row,
                events,
                key,
                enqueue,
                reply,
            })
            .await?;
        Ok(match existing {
            Some(t) => CreateOutcome::Existing(Arc::from(t)),
            None => CreateOutcome::Created(task),
        })
    }

    async fn get_shared(&self, id: &TaskId) -> Result<Option<Arc<Task>>, StoreError> {
        if let Some((t, generation)) = self.cache.get(id) {
            if !self.durability.is_durable(generation) {
                Box::pin(self.durability.wait(generation)).await?;
            }
            return Ok(Some(t));
        }
        let epoch = self.cache.epoch();
        let Some(tid) = self.ids.get(id) else {
            // Maybe swept by a transaction not yet durable.
            self.settle().await?;
            return Ok(None);
        };
        let found = self.read(move |c| read::get(c, tid)).await?;
        Ok(found.map(|t| {
            let t = Arc::new(t);
            self.cache.put_read(t.clone(), epoch);
            t
        }))
    }

    async fn commit(&self, commit: Commit) -> Result<(), StoreError> {
        let row = TaskRow::new(&commit.task)?;
        let events = event_rows(&commit.events)?;
        self.write(|reply| Op::Commit {
            task: commit.task,
            row,
            expected_version: row::int(commit.expected_version),
            events,
            queue: commit.queue,
            fence: commit.fence,
            reply,
        })
        .await
    }

    async fn events(
        &self,
        id: &TaskId,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let Some(tid) = self.ids.get(id) else {
            self.settle().await?;
            return Ok(Vec::new());
        };
        self.read(move |c| read::events(c, tid, after_seq, limit))
            .await
    }

    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        let q = query.clone();
        match (q.owner.clone(), &q.reviewer) {
            // An owner's listing (what the service asks for, but for reviews) walks
            // the in-memory listing, then reads the page's rows.
            (Some(owner), None) => {
                let listings = self.listings.clone();
                self.read(move |c| read::list_owned(c, &listings, &q, &owner))
                    .await
            }
            _ => self.read(move |c| read::list(c, &q)).await,
        }
    }

    async fn claim(
        &self,
        worker: &str,
        max: usize,
        lease: Duration,
        now: Timestamp,
    ) -> Result<Vec<Claim>, StoreError> {
        let worker = worker.to_string();
        let until = ns(now).saturating_add(dur_ns(lease));
        self.write(|reply| Op::Claim {
            worker,
            max: limit(max),
            until,
            reply,
        })
        .await
    }

    async fn renew(
        &self,
        claim: &Claim,
        lease: Duration,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let until = ns(now).saturating_add(dur_ns(lease));
        let claim = claim.clone();
        self.write(|reply| Op::Renew {
            claim,
            until,
            reply,
        })
        .await
    }

    async fn release(&self, claim: &Claim) -> Result<(), StoreError> {
        let claim = claim.clone();
        self.write(|reply| Op::Release { claim, reply }).await
    }

    async fn drop_claim(&self, claim: &Claim) -> Result<(), StoreError> {
        let claim = claim.clone();
        self.write(|reply| Op::DropClaim { claim, reply }).await
    }

    async fn reap(&self, now: Timestamp) -> Result<Vec<TaskId>, StoreError> {
        let now = ns(now);
        self.write(|reply| Op::Reap { now, reply }).await
    }

    async fn sweep(&self, now: Timestamp, max: usize) -> Result<usize, StoreError> {
        let now = ns(now);
        self.write(|reply| Op::Sweep {
            now,
            limit: limit(max),
            reply,
        })
        .await
    }

    async fn put_record(
        &self,
        record: Record,
        quota: Option<Quota>,
    ) -> Result<PutOutcome, StoreError> {
        let op = RecordOp::Put {
            record: Box::new(record),
            quota,
        };
        match self.write(|reply| Op::Record { op, reply }).await? {
            RecordDone::Put(p) => Ok(p),
            other => Err(mismatch(other)),
        }
    }

    async fn get_record(&self, kind: RecordKind, id: &str) -> Result<Option<Record>, StoreError> {
        let id = id.to_string();
        self.read(move |c| records::get(c, kind, &id)).await
    }

    async fn list_records(
        &self,
        kind: RecordKind,
        scope: &RecordScope,
    ) -> Result<Vec<Record>, StoreError> {
        let tid = match scope {
            RecordScope::Task(t) => match self.ids.get(t) {
                Some(tid) => Some(tid),
                None => {
                    self.settle().await?;
                    return Ok(Vec::new());
                }
            },
            RecordScope::Owner { .. } => None,
        };
        let scope = scope.clone();
        self.read(move |c| records::list(c, kind, &scope, tid))
            .await
    }

    async fn update_record(
        &self,
        record: &Record,
        fence: Option<&RecordLease>,
    ) -> Result<u64, StoreError> {
        let op = RecordOp::Update {
            record: Box::new(record.clone()),
            fence: fence.cloned(),
        };
        match self.write(|reply| Op::Record { op, reply }).await? {
            RecordDone::Version(v) => Ok(v),
            other => Err(mismatch(other)),
        }
    }

    async fn delete_record(&self, kind: RecordKind, id: &str) -> Result<bool, StoreError> {
        let op = RecordOp::Delete {
            kind,
            id: id.to_string(),
        };
        match self.write(|reply| Op::Record { op, reply }).await? {
            RecordDone::Bool(b) => Ok(b),
            other => Err(mismatch(other)),
        }
    }

    async fn claim_records(
        &self,
        kind: RecordKind,
        worker: &str,
        max: usize,
        lease: Duration,
        now: Timestamp,
    ) -> Result<Vec<(Record, RecordLease)>, StoreError> {
        let op = RecordOp::Claim {
            kind,
            worker: worker.to_string(),
            max,
            now: ns(now),
            until: records::until_ns(now, lease),
        };
        match self.write(|reply| Op::Record { op, reply }).await? {
            RecordDone::Claimed(c) => Ok(c),
            other => Err(mismatch(other)),
        }
    }

    async fn renew_record(
        &self,
        lease: &RecordLease,
        duration: Duration,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let op = RecordOp::Renew {
            lease: lease.clone(),
            until: records::until_ns(now, duration),
        };
        match self.write(|reply| Op::Record { op, reply }).await? {
            RecordDone::Bool(b) => Ok(b),
            other => Err(mismatch(other)),
        }
    }

    async fn release_record(&self, lease: &RecordLease) -> Result<(), StoreError> {
        let op = RecordOp::Release {
            lease: lease.clone(),
        };
        self.write(|reply| Op::Record { op, reply })
            .await
            .map(|_| ())
    }

    async fn sweep_records(&self, now: Timestamp, max: usize) -> Result<usize, StoreError> {
        let op = RecordOp::Sweep {
            now: ns(now),
            limit: limit(max),
        };
        match self.write(|reply| Op::Record { op, reply }).await? {
            RecordDone::Count(n) => Ok(n),
            other => Err(mismatch(other)),
        }
    }

    async fn count_records(&self) -> Result<Vec<(RecordKind, u64)>, StoreError> {
        self.read(records::counts).await
    }

    async fn idle_expired(&self, now: Timestamp, max: usize) -> Result<Vec<TaskId>, StoreError> {
        let now = ns(now);
        self.read(move |c| read::idle_expired(c, now, max)).await
    }

    async fn queue_depth(&self) -> Result<u64, StoreError> {
        self.read(read::queue_depth).await
    }

    async fn count_by_state(&self) -> Result<Vec<(TaskState, u64)>, StoreError> {
        self.read(read::count_by_state).await
    }
}
