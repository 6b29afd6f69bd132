//! The writer thread and group commit.
//!
//! Every write request is sent over a channel to one thread that owns the only
//! writing connection. It takes whatever requests are pending (up to `max_batch`),
//! applies them in order inside one `BEGIN IMMEDIATE … COMMIT`, and only after the
//! commit publishes the wakes and answers each request. A request that loses
//! (version conflict, lost lease, unknown task) checks its conditions with reads
//! before it writes anything, so it never disturbs the others. Should SQLite itself
//! fail in the middle of a batch, the batch is rolled back and each request is
//! retried in a transaction of its own, so one bad request cannot fail its neighbours.
//!
//! With `synchronous=full` the sync of the write-ahead log is pipelined: the writer
//! commits with SQLite's own sync turned off and hands the batch to a syncer thread,
//! which `fdatasync`s the log (one sync covers every batch committed before it
//! started) and only then publishes the batch and answers its requests, while the
//! writer already runs the next batch. An acknowledged write is therefore exactly as
//! durable as before. Claims and renewals, which need no durability (a lease lost
//! in a crash is simply re-claimed), are answered as soon as they are committed.
//! Checkpoints run on the writer with `synchronous=full` for their duration, so the
//! database file is synced before the log is reused.
//!
//! A committed batch is visible to the read connections, the in-memory indexes and
//! the snapshot cache as soon as it commits, before the sync: readers wait for it
//! to be durable before they answer (see [`crate::durable`]). Each batch that
//! needs the sync takes a generation before it commits, and the syncer marks it
//! durable before it publishes and answers the batch.
//!
//! When every sender is gone the writer drains: the syncer syncs and answers what
//! is left, the log is checkpointed into the database file (synced) and truncated,
//! and the connection closes; SQLite deletes the log and the shared-memory file
//! when the last connection closes (the store closes its read connections first).

use std::cell::Cell;
use std::collections::HashMap;
use std::fs::File;
use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

use rusqlite::{params, Connection, OptionalExtension};
use taskwire_core::store::{Claim, IdempotencyKey, QueueOp, TaskWake};
use taskwire_core::{StoreError, Task, TaskId, WakeHub};
use tokio::sync::oneshot;

use crate::cache::SnapshotCache;
use crate::durable::Durability;
use crate::error::backend;
use crate::idem::IdemIndex;
use crate::ids::TaskIds;
use crate::listing::{id_number, Change, IdNum, Listings};
use crate::queue::WorkQueue;
use crate::records::{self, RecordDone, RecordOp};
use crate::row::{decode_task, int, uint, EventRow, TaskRow};

/// Where a request's answer goes.
pub(crate) type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

/// One write request.
pub(crate) enum Op {
    /// Insert a task unless its idempotency key names one; answers `Some(existing)`
    /// in that case and `None` when the task was inserted.
    Create {
        task: Arc<Task>,
        row: TaskRow,
        events: Vec<EventRow>,
        key: Option<IdempotencyKey>,
        enqueue: bool,
        reply: Reply<Option<Box<Task>>>,
    },
    /// Compare-and-set commit.
    Commit {
        task: Arc<Task>,
        row: TaskRow,
        expected_version: i64,
        events: Vec<EventRow>,
        queue: QueueOp,
        fence: Option<Claim>,
        reply: Reply<()>,
    },
    /// Lease up to `max` available entries until `until` (ns).
    Claim {
        worker: String,
        max: i64,
        until: i64,
        reply: Reply<Vec<Claim>>,
    },
    /// Extend a lease until `until` (ns).
    Renew {
        claim: Claim,
        until: i64,
        reply: Reply<bool>,
    },
    /// Give a lease back.
    Release { claim: Claim, reply: Reply<()> },
    /// Delete a leased entry.
    DropClaim { claim: Claim, reply: Reply<()> },
    /// Free entries whose lease lapsed before `now` (ns).
    Reap { now: i64, reply: Reply<Vec<TaskId>> },
    /// Delete expired terminal tasks.
    Sweep {
        now: i64,
        limit: i64,
        reply: Reply<usize>,
    },
    /// A record write.
    Record {
        op: RecordOp,
        reply: Reply<RecordDone>,
    },
}

/// The outcome of one request inside the transaction; published and answered only
/// once the transaction is committed.
enum Done {
    Create(Result<Option<Box<Task>>, StoreError>),
    /// `Ok(true)` when the commit made an entry available.
    Commit(Result<bool, StoreError>),
    Claim(Result<Vec<Claim>, StoreError>),
    Renew(Result<bool, StoreError>),
    /// `Ok(true)` when the lease was held and the entry is available again.
    Release(Result<bool, StoreError>),
    DropClaim(Result<(), StoreError>),
    Reap(Result<Vec<TaskId>, StoreError>),
    Sweep(Result<Vec<TaskId>, StoreError>),
    Record(Result<RecordDone, StoreError>),
}

impl Op {
    /// Answers the request with an error.
    fn reject(self, e: StoreError) {
        match self {
            Op::Create { reply, .. } => {
                let _ = reply.send(Err(e));
            }
            Op::Commit { reply, .. } | Op::Release { reply, .. } | Op::DropClaim { reply, .. } => {
                let _ = reply.send(Err(e));
            }
            Op::Claim { reply, .. } => {
                let _ = reply.send(Err(e));
            }
            Op::Renew { reply, .. } => {
                let _ = reply.send(Err(e));
            }
            Op::Reap { reply, .. } => {
                let _ = reply.send(Err(e));
            }
            Op::Sweep { reply, .. } => {
                let _ = reply.send(Err(e));
            }
            Op::Record { reply, .. } => {
                let _ = reply.send(Err(e));
            }
        }
    }

    /// The outcome of this request when it could not be applied at all.
    fn failed(&self, e: StoreError) -> Done {
        match self {
            Op::Create { .. } => Done::Create(Err(e)),
            Op::Commit { .. } => Done::Commit(Err(e)),
            Op::Claim { .. } => Done::Claim(Err(e)),
            Op::Renew { .. } => Done::Renew(Err(e)),
            Op::Release { .. } => Done::Release(Err(e)),
            Op::DropClaim { .. } => Done::DropClaim(Err(e)),
            Op::Reap { .. } => Done::Reap(Err(e)),
            Op::Sweep { .. } => Done::Sweep(Err(e)),
            Op::Record { .. } => Done::Record(Err(e)),
        }
    }
}

/// A row's stored idempotency key and snapshot (to check a hit of the key index).
const IDEM_ROW: &str =
    "SELECT idem_tenant, idem_owner, idem_message_id, body FROM tasks WHERE tid = ?1";
const TASK_INSERT: &str =
    "INSERT INTO tasks (tid, id, tenant, owner, context_id, state, terminal, \
     version, created_us, updated_ns, expires_ns, idle_ns, reviewers, body, changed_us, \
     idem_tenant, idem_owner, idem_message_id) \
     VALUES (?15, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?16, ?17, ?18)";
const TASK_HEAD: &str =
    "SELECT version, tenant, owner, context_id, created_us, state FROM tasks WHERE tid = ?1";
const COUNT_ADD: &str = "INSERT INTO state_counts (state, n) VALUES (?1, ?2) \
     ON CONFLICT (state) DO UPDATE SET n = n + excluded.n";
const TASK_UPDATE: &str = "UPDATE tasks SET state = ?2, terminal = ?3, version = ?4, \
     updated_ns = ?5, expires_ns = ?6, idle_ns = ?7, reviewers = ?8, body = ?9, changed_us = ?10 \
     WHERE tid = ?1";
const TASK_UPDATE_ALL: &str = "UPDATE tasks SET state = ?2, terminal = ?3, version = ?4, \
     updated_ns = ?5, expires_ns = ?6, idle_ns = ?7, reviewers = ?8, body = ?9, changed_us = ?10, \
     tenant = ?11, owner = ?12, context_id = ?13, created_us = ?14 WHERE tid = ?1";
const EVENT_INSERT: &str = "INSERT INTO event_log (tid, last_seq, body) VALUES (?1, ?2, ?3)";
const QUEUE_PUT: &str = "INSERT OR REPLACE INTO queue \
     (tid, available, lease_owner, lease_until, epoch, attempts, ready_seq) \
     VALUES (?1, 1, NULL, NULL, 0, 0, ?2)";
const QUEUE_REQUEUE: &str = "INSERT INTO queue \
     (tid, available, lease_owner, lease_until, epoch, attempts, ready_seq) \
     VALUES (?1, 1, NULL, NULL, 0, 0, ?2) ON CONFLICT (tid) DO UPDATE SET \
     available = 1, lease_owner = NULL, lease_until = NULL, attempts = 0, \
     ready_seq = excluded.ready_seq";
const QUEUE_DELETE: &str = "DELETE FROM queue WHERE tid = ?1";
const CLAIM_TAKE: &str = "UPDATE queue SET available = 0, lease_owner = ?2, lease_until = ?3, \
     epoch = ?4, attempts = ?5 WHERE tid = ?1";
const REAP_FREE: &str = "UPDATE queue SET available = 1, lease_owner = NULL, lease_until = NULL, \
     ready_seq = ?2 WHERE tid = ?1";
const SWEEP_PICK: &str = "SELECT tid, id, state, tenant, owner, created_us, idem_tenant, \
     idem_owner, idem_message_id FROM tasks \
     WHERE terminal = 1 \
     AND expires_ns IS NOT NULL AND expires_ns < ?1 LIMIT ?2";
const SWEEP_TASK: &str = "DELETE FROM tasks WHERE tid = ?1";
const SWEEP_EVENTS: &str = "DELETE FROM event_log WHERE tid = ?1";

const RENEW: &str = "UPDATE queue SET lease_until = ?2 WHERE tid = ?1";

/// WAL pages after a checkpoint from which the writer checkpoints (64 MiB).
const CHECKPOINT_PAGES: i32 = 16_384;

thread_local! {
    /// Pages in the write-ahead log after the last commit on this thread's writer
    /// connection (set by the WAL hook, which runs on the committing thread).
    static WAL_PAGES: Cell<i32> = const { Cell::new(0) };
}

fn wal_pages_hook(_wal: &rusqlite::hooks::Wal, pages: std::ffi::c_int) -> rusqlite::Result<()> {
    WAL_PAGES.with(|p| p.set(pages));
    Ok(())
}

/// A committed batch waiting for the log sync before it is published and answered,
/// with the generation that becomes durable with it.
struct Committed {
    items: Vec<(Op, Done)>,
    generation: u64,
}

/// The syncer: makes committed batches durable, then publishes and answers them.
struct Syncer {
    tx: mpsc::Sender<Committed>,
    handle: JoinHandle<()>,
}

/// The in-memory indexes of the rows the writer keeps (built by [`crate::ids::load`]).
pub(crate) struct Indexes {
    pub(crate) listings: Arc<Listings>,
    pub(crate) ids: Arc<TaskIds>,
    pub(crate) idem: IdemIndex,
}

/// The state of the writer thread.
pub(crate) struct Writer {
    conn: Connection,
    hub: Arc<WakeHub>,
    cache: Arc<SnapshotCache>,
    durability: Arc<Durability>,
    /// The generation of the batch being run, taken before its first commit when
    /// it needs the sync (see [`crate::durable`]); 0 otherwise.
    generation: u64,
    /// Whether the batch being run has a request that must be synced.
    needs_sync: bool,
    /// The database file (to tell, after closing, whether the log was removed).
    path: std::path::PathBuf,
    /// The owners' listings, and the changes the open transaction makes to them
    /// (applied once it has committed, dropped if it rolls back).
    listings: Arc<Listings>,
    listing_changes: Vec<Change>,
    /// Task id → row id, and the open transaction's changes to it (looked up first,
    /// applied once it has committed, dropped if it rolls back).
    ids: Arc<TaskIds>,
    id_changes: HashMap<IdNum, Option<i64>>,
    max_batch: usize,
    /// The next FIFO position for a claimable entry.
    next_ready: i64,
    /// The row id of the next task inserted (the writer assigns them, so that a
    /// create can take its idempotency key before it inserts the task).
    next_tid: i64,
    /// Set when the log sync is pipelined (`synchronous=full`).
    syncer: Option<Syncer>,
    /// WAL pages at the last checkpoint attempt (a passive checkpoint that could not
    /// finish is not retried at every commit).
    checkpointed_at: i32,
    /// The in-memory index of the `queue` table.
    queue: WorkQueue,
    /// The in-memory index of the idempotency keys stored in `tasks` (key hash →
    /// row id), and the open transaction's changes to it, kept like `id_changes`.
    idem: IdemIndex,
    idem_changes: HashMap<u128, Option<i64>>,
    /// Set when a rolled-back transaction may have left `queue` out of step with
    /// the table; it is reloaded before the next request is applied.
    queue_stale: bool,
    /// Changes to the per-state task counts made by the open transaction, written
    /// to `state_counts` once before it commits (instead of by a trigger on every
    /// row: a few statements per batch rather than three per task).
    count_deltas: Vec<(String, i64)>,
}

fn parse_id(s: &str) -> Result<TaskId, StoreError> {
    TaskId::parse(s).map_err(|_| StoreError::Corrupt(format!("stored task id {s:?}")))
}

impl Writer {
    /// A writer on `conn` (opened by [`crate::schema::open_writer`] on `path`). With
    /// `pipelined_sync` (for `synchronous=full`) the log sync moves to a syncer
    /// thread; without it, or if the log file cannot be opened, SQLite syncs at
    /// each commit as configured.
    #[expect(
        clippy::too_many_arguments,
        reason = "each is a separate part the store shares"
    )]
    pub(crate) fn new(
        conn: Connection,
        path: &Path,
        hub: Arc<WakeHub>,
        cache: Arc<SnapshotCache>,
        durability: Arc<Durability>,
        indexes: Indexes,
        max_batch: usize,
        pipelined_sync: bool,
    ) -> Result<Self, rusqlite::Error> {
        // This read also opens (creating if needed) the write-ahead log.
        let last: i64 =
            conn.query_row("SELECT COALESCE(MAX(ready_seq), 0) FROM queue", [], |r| {
                r.get(0)
            })?;
        let last_tid: i64 =
            conn.query_row("SELECT COALESCE(MAX(tid), 0) FROM tasks", [], |r| r.get(0))?;
        let queue = WorkQueue::load(&conn)?;
        // The log may have just been created (a clean close deletes it): its
        // directory entry must be durable before a sync of its content can make a
        // commit durable.
        sync_dir(path);
        let Indexes {
            listings,
            ids,
            idem,
        } = indexes;
        let mut syncer = None;
        if pipelined_sync {
            let mut wal_path = path.as_os_str().to_owned();
            wal_path.push("-wal");
            match File::options().read(true).write(true).open(&wal_path) {
                Ok(wal) => {
                    // The hook replaces SQLite's automatic checkpoint, which would
                    // run without syncing the database file: the writer checkpoints.
                    conn.wal_hook(Some(wal_pages_hook));
                    conn.pragma_update(None, "synchronous", "OFF")?;
                    let (tx, rx) = mpsc::channel();
                    let h2 = hub.clone();
                    let d2 = durability.clone();
                    match std::thread::Builder::new()
                        .name("taskwire-sqlite-sync".into())
                        .spawn(move || sync_loop(wal, h2, d2, rx))
                    {
                        Ok(handle) => syncer = Some(Syncer { tx, handle }),
                        Err(e) => {
                            tracing::warn!(error = %e, "no syncer thread; sqlite syncs at commit");
                            conn.wal_hook(None);
                            conn.pragma_update(None, "wal_autocheckpoint", 16_384)?;
                            conn.pragma_update(None, "synchronous", "FULL")?;
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot open the write-ahead log; sqlite syncs at commit");
                }
            }
        }
        Ok(Self {
            conn,
            hub,
            cache,
            durability,
            generation: 0,
            needs_sync: false,
            path: path.to_path_buf(),
            listings,
            listing_changes: Vec::new(),
            ids,
            id_changes: HashMap::new(),
            max_batch: max_batch.max(1),
            next_ready: last.saturating_add(1),
            next_tid: last_tid.saturating_add(1),
            syncer,
            checkpointed_at: 0,
            queue,
            idem,
            idem_changes: HashMap::new(),
            queue_stale: false,
            count_deltas: Vec::new(),
        })
    }

    fn count(&mut self, state: &str, delta: i64) {
        match self.count_deltas.iter_mut().find(|(s, _)| s == state) {
            Some((_, n)) => *n += delta,
            None => self.count_deltas.push((state.to_string(), delta)),
        }
    }

    /// Writes the pending count changes (inside the open transaction).
    fn flush_counts(&mut self) -> Result<(), rusqlite::Error> {
        let deltas = std::mem::take(&mut self.count_deltas);
        let mut stmt = self.conn.prepare_cached(COUNT_ADD)?;
        for (state, n) in deltas.iter().filter(|(_, n)| *n != 0) {
            stmt.execute(params![state, n])?;
        }
        Ok(())
    }

    /// Serves requests until every sender is gone.
    pub(crate) fn run(mut self, rx: mpsc::Receiver<Op>) {
        batch_scheduling("writer");
        let mut batch = Vec::with_capacity(self.max_batch.min(1024));
        while let Ok(first) = rx.recv() {
            batch.push(first);
            while batch.len() < self.max_batch {
                match rx.try_recv() {
                    Ok(op) => batch.push(op),
                    Err(_) => break,
                }
            }
            self.run_batch(&mut batch);
            if self.syncer.is_some() {
                self.maybe_checkpoint();
            }
        }
        let pipelined = self.syncer.is_some();
        if let Some(s) = self.syncer.take() {
            drop(s.tx);
            if s.handle.join().is_err() {
                tracing::error!("the sqlite syncer thread panicked");
            }
            WAL_PAGES.with(|p| p.set(0));
            self.conn.wal_hook(None);
        }
        self.close(pipelined);
    }

    /// Checkpoints the whole log into the database file (syncing both), truncates
    /// the log and closes the connection. SQLite then deletes the log and the
    /// shared-memory file, unless another connection still has the database open.
    fn close(self, pipelined: bool) {
        let Writer { conn, path, .. } = self;
        if pipelined {
            if let Err(e) = conn.pragma_update(None, "synchronous", "FULL") {
                tracing::error!(error = %e, "sqlite: restoring synchronous=full before close failed");
            }
        }
        match conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            r.get::<_, i64>(0)
        }) {
            Ok(0) => {}
            Ok(_) => tracing::warn!("sqlite: the closing checkpoint was blocked by a reader"),
            Err(e) => tracing::warn!(error = %e, "sqlite: the closing checkpoint failed"),
        }
        if let Err((_, e)) = conn.close() {
            tracing::error!(error = %e, "sqlite: closing the database failed");
            return;
        }
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        if Path::new(&wal).exists() {
            tracing::warn!(path = %path.display(),
                "sqlite store closed; its write-ahead log remains (another connection had the database open)");
        } else {
            tracing::info!(path = %path.display(), "sqlite store closed and checkpointed");
        }
    }

    /// Checkpoints (syncing the log, then the database file) once the log is large.
    fn maybe_checkpoint(&mut self) {
        let pages = WAL_PAGES.with(Cell::get);
        if pages < self.checkpointed_at.saturating_add(CHECKPOINT_PAGES) {
            if pages < self.checkpointed_at {
                // The log was reset.
                self.checkpointed_at = 0;
            }
            return;
        }
        let r = self
            .conn
            .pragma_update(None, "synchronous", "FULL")
            .and_then(|()| {
                self.conn
                    .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(0))
            })
            .and_then(|_| self.conn.pragma_update(None, "synchronous", "OFF"));
        match r {
            Ok(()) => self.checkpointed_at = pages,
            Err(e) => {
                tracing::warn!(error = %e, "sqlite checkpoint failed");
                self.checkpointed_at = pages;
                // Never leave SQLite's sync on by accident, nor off without the syncer.
                let _ = self.conn.pragma_update(None, "synchronous", "OFF");
            }
        }
    }

    fn run_batch(&mut self, batch: &mut Vec<Op>) {
        self.generation = 0;
        self.needs_sync = self.syncer.is_some()
            && batch
                .iter()
                .any(|op| !matches!(op, Op::Claim { .. } | Op::Renew { .. }));
        let mut done = Vec::with_capacity(batch.len());
        if let Err(e) = self.apply_all(batch, &mut done) {
            tracing::warn!(error = %e, requests = batch.len(),
                "sqlite group commit failed; retrying its requests one by one");
            let _ = self.conn.execute_batch("ROLLBACK");
            self.queue_stale = true;
            done.clear();
            for op in batch.iter() {
                done.push(self.apply_alone(op));
            }
        }
        for (op, d) in batch.iter().zip(&done) {
            cache_committed(&self.cache, op, d, self.generation);
        }
        if let Some(s) = &self.syncer {
            let mut items = Vec::with_capacity(batch.len());
            for (op, d) in batch.drain(..).zip(done) {
                if matches!(op, Op::Claim { .. } | Op::Renew { .. }) {
                    // Nothing to publish and nothing that must be durable.
                    answer(op, d);
                } else {
                    items.push((op, d));
                }
            }
            // A batch that took a generation goes to the syncer even if nothing
            // in it is left to answer: readers may wait for that generation.
            if !items.is_empty() || self.generation != 0 {
                let committed = Committed {
                    items,
                    generation: self.generation,
                };
                if let Err(mpsc::SendError(lost)) = s.tx.send(committed) {
                    self.durability.failed(lost.generation);
                    for (op, _) in lost.items {
                        op.reject(StoreError::Backend(
                            "the sqlite syncer thread has stopped".into(),
                        ));
                    }
                }
            }
            return;
        }
        publish_and_answer(&self.hub, batch.drain(..).zip(done));
    }

    /// Applies a whole batch in one transaction.
    fn apply_all(&mut self, batch: &[Op], done: &mut Vec<Done>) -> Result<(), rusqlite::Error> {
        self.count_deltas.clear();
        self.listing_changes.clear();
        self.id_changes.clear();
        self.idem_changes.clear();
        self.reload_queue_if_stale()?;
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        for op in batch {
            let d = self.apply(op)?;
            done.push(d);
        }
        self.flush_counts()?;
        self.cache.committing();
        self.take_generation();
        self.conn.execute_batch("COMMIT")?;
        self.committed();
        Ok(())
    }

    /// Applies one request in a transaction of its own.
    fn apply_alone(&mut self, op: &Op) -> Done {
        self.count_deltas.clear();
        self.listing_changes.clear();
        self.id_changes.clear();
        self.idem_changes.clear();
        let r = self
            .reload_queue_if_stale()
            .and_then(|()| self.conn.execute_batch("BEGIN IMMEDIATE"))
            .and_then(|()| self.apply(op))
            .and_then(|d| self.flush_counts().map(|()| d))
            .and_then(|d| {
                self.cache.committing();
                self.take_generation();
                self.conn.execute_batch("COMMIT").map(|()| d)
            });
        match r {
            Ok(d) => {
                self.committed();
                d
            }
            Err(e) => {
                if !self.conn.is_autocommit() {
                    let _ = self.conn.execute_batch("ROLLBACK");
                }
                self.queue_stale = true;
                op.failed(backend(e))
            }
        }
    }

    /// Takes the batch's generation before its first commit, if it needs the sync
    /// (the retries of a failed batch share it).
    fn take_generation(&mut self) {
        if self.needs_sync && self.generation == 0 {
            self.generation = self.durability.next();
        }
    }

    /// The transaction committed: its changes to the in-memory indexes take effect
    /// (the id map first, so that anything listed can also be read).
    fn committed(&mut self) {
        self.idem.apply(self.idem_changes.drain());
        self.ids.apply(self.id_changes.drain());
        self.listings.apply(self.listing_changes.drain(..));
    }

    /// The row id of a task (by its id as a number), as the open transaction sees it.
    fn tid_of(&self, n: IdNum) -> Option<i64> {
        match self.id_changes.get(&n) {
            Some(change) => *change,
            None => self.ids.get_number(n),
        }
    }

    /// The row id an idempotency key hash names, as the open transaction sees it.
    fn key_tid(&self, h: u128) -> Option<i64> {
        match self.idem_changes.get(&h) {
            Some(change) => *change,
            None => self.idem.get(h),
        }
    }

    /// Reloads the queue index after a rollback (outside any transaction).
    fn reload_queue_if_stale(&mut self) -> Result<(), rusqlite::Error> {
        if self.queue_stale {
            self.queue = WorkQueue::load(&self.conn)?;
            self.queue_stale = false;
        }
        Ok(())
    }

    fn ready_seq(&mut self) -> i64 {
        let s = self.next_ready;
        self.next_ready = self.next_ready.saturating_add(1);
        s
    }

    /// Applies one request inside the open transaction. `Err` means SQLite failed
    /// and the transaction must be abandoned; a request that merely loses answers
    /// `Ok` with its error, having written nothing.
    fn apply(&mut self, op: &Op) -> Result<Done, rusqlite::Error> {
        Ok(match op {
            Op::Create {
                task,
                row,
                events,
                key,
                enqueue,
                ..
            } => Done::Create(self.create(&task.id, row, events, key.as_ref(), *enqueue)?),
            Op::Commit {
                task,
                row,
                expected_version,
                events,
                queue,
                fence,
                ..
            } => Done::Commit(self.commit(
                &task.id,
                row,
                *expected_version,
                events,
                *queue,
                fence.as_ref(),
            )?),
            Op::Claim {
                worker, max, until, ..
            } => Done::Claim(self.claim(worker, *max, *until)?),
            Op::Renew { claim, until, .. } => {
                let Some(tid) = self.held(claim) else {
                    return Ok(Done::Renew(Ok(false)));
                };
                self.conn
                    .prepare_cached(RENEW)?
                    .execute(params![tid, until])?;
                self.queue.renew(&claim.task_id, *until);
                Done::Renew(Ok(true))
            }
            Op::Release { claim, .. } => {
                let Some(tid) = self.held(claim) else {
                    return Ok(Done::Release(Ok(false)));
                };
                let seq = self.ready_seq();
                self.conn
                    .prepare_cached(REAP_FREE)?
                    .execute(params![tid, seq])?;
                self.queue.make_available(&claim.task_id);
                Done::Release(Ok(true))
            }
            Op::DropClaim { claim, .. } => {
                if let Some(tid) = self.held(claim) {
                    self.conn
                        .prepare_cached(QUEUE_DELETE)?
                        .execute(params![tid])?;
                    self.queue.remove(&claim.task_id);
                }
                Done::DropClaim(Ok(()))
            }
            Op::Reap { now, .. } => Done::Reap(self.reap(*now)?),
            Op::Sweep { now, limit, .. } => Done::Sweep(self.sweep(*now, *limit)?),
            Op::Record { op, .. } => {
                let tid = match op {
                    RecordOp::Put { record, .. } => record
                        .task_id
                        .as_ref()
                        .and_then(|t| id_number(t.as_str()))
                        .and_then(|n| self.tid_of(n)),
                    _ => None,
                };
                Done::Record(records::apply(&self.conn, op, tid)?)
            }
        })
    }

    fn create(
        &mut self,
        task_id: &TaskId,
        row: &TaskRow,
        events: &[EventRow],
        key: Option<&IdempotencyKey>,
        enqueue: bool,
    ) -> Result<Result<Option<Box<Task>>, StoreError>, rusqlite::Error> {
        let tid = self.next_tid;
        self.next_tid = self.next_tid.saturating_add(1);
        let hash = key.map(|k| self.idem.hash(k));
        if let (Some(k), Some(tid)) = (key, hash.and_then(|h| self.key_tid(h))) {
            type Stored = (Option<String>, Option<String>, Option<String>, Vec<u8>);
            let stored: Option<Stored> = self
                .conn
                .prepare_cached(IDEM_ROW)?
                .query_row(params![tid], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })
                .optional()?;
            if let Some((Some(t), Some(o), Some(m), body)) = stored {
                if t == k.tenant && o == k.owner && m == k.message_id {
                    return Ok(decode_task(&body).map(|t| Some(Box::new(t))));
                }
            }
            // The task the key named is gone (or the hash collided): the key names
            // the task about to be inserted.
        }
        let Some(n) = id_number(task_id.as_str()) else {
            return Ok(Err(StoreError::Backend("malformed task id".into())));
        };
        if self.tid_of(n).is_some() {
            return Ok(Err(StoreError::Backend("duplicate task id".into())));
        }
        self.conn.prepare_cached(TASK_INSERT)?.execute(params![
            row.id,
            row.tenant,
            row.owner,
            row.context_id,
            row.state,
            row.terminal,
            row.version,
            row.created_us,
            row.updated_ns,
            row.expires_ns,
            row.idle_ns,
            row.reviewers,
            row.body,
            row.changed_us,
            tid,
            key.map(|k| &k.tenant),
            key.map(|k| &k.owner),
            key.map(|k| &k.message_id),
        ])?;
        self.id_changes.insert(n, Some(tid));
        if let Some(h) = hash {
            self.idem_changes.insert(h, Some(tid));
        }
        self.count(row.state, 1);
        self.listing_changes.extend(Change::put(row, tid));
        self.insert_events(tid, events)?;
        if enqueue {
            self.enqueue_new(tid, task_id)?;
        }
        Ok(Ok(None))
    }

    /// Inserts a claimable queue entry for a task that has none.
    fn enqueue_new(&mut self, tid: i64, task_id: &TaskId) -> Result<(), rusqlite::Error> {
        let seq = self.ready_seq();
        self.conn
            .prepare_cached(QUEUE_PUT)?
            .execute(params![tid, seq])?;
        self.queue.insert(task_id.clone(), tid, 0, 0);
        Ok(())
    }

    /// The row id of a claim's queue entry while the claim holds it.
    fn held(&self, claim: &Claim) -> Option<i64> {
        self.queue
            .holder(&claim.task_id, int(claim.epoch), &claim.worker)
    }

    fn insert_events(&mut self, tid: i64, events: &[EventRow]) -> Result<(), rusqlite::Error> {
        if events.is_empty() {
            return Ok(());
        }
        let mut stmt = self.conn.prepare_cached(EVENT_INSERT)?;
        for (seq, body) in events {
            stmt.execute(params![tid, seq, body])?;
        }
        Ok(())
    }

    fn commit(
        &mut self,
        task_id: &TaskId,
        row: &TaskRow,
        expected_version: i64,
        events: &[EventRow],
        queue: QueueOp,
        fence: Option<&Claim>,
    ) -> Result<Result<bool, StoreError>, rusqlite::Error> {
        type Head = (i64, String, String, String, i64, String);
        let Some(tid) = id_number(task_id.as_str()).and_then(|n| self.tid_of(n)) else {
            return Ok(Err(StoreError::NotFound));
        };
        let head: Option<Head> = self
            .conn
            .prepare_cached(TASK_HEAD)?
            .query_row(params![tid], |r| Head::try_from(r))
            .optional()?;
        let Some((version, tenant, owner, context_id, created_us, old_state)) = head else {
            return Ok(Err(StoreError::NotFound));
        };
        if version != expected_version {
            return Ok(Err(StoreError::Conflict));
        }
        if let Some(f) = fence {
            if self.held(f) != Some(tid) {
                return Ok(Err(StoreError::LeaseLost));
            }
        }
        let mut queued = false;
        match queue {
            QueueOp::Keep => {}
            QueueOp::Enqueue => {
                if self.queue.get(task_id).is_none() {
                    self.enqueue_new(tid, task_id)?;
                    queued = true;
                }
            }
            QueueOp::Requeue => {
                if self.queue.get(task_id).is_some() {
                    let seq = self.ready_seq();
                    self.conn
                        .prepare_cached(QUEUE_REQUEUE)?
                        .execute(params![tid, seq])?;
                    self.queue.make_available(task_id);
                    self.queue.set_attempts(task_id, 0);
                } else {
                    self.enqueue_new(tid, task_id)?;
                }
                queued = true;
            }
            QueueOp::Remove => {
                if self.queue.remove(task_id).is_some() {
                    self.conn
                        .prepare_cached(QUEUE_DELETE)?
                        .execute(params![tid])?;
                }
            }
        }
        self.insert_events(tid, events)?;
        if old_state != row.state {
            self.count(&old_state, -1);
            self.count(row.state, 1);
        }
        let same_identity = tenant == row.tenant
            && owner == row.owner
            && context_id == row.context_id
            && created_us == row.created_us;
        if !same_identity {
            self.listing_changes
                .extend(Change::remove(tenant, owner, created_us, &row.id));
        }
        self.listing_changes.extend(Change::put(row, tid));
        if same_identity {
            self.conn.prepare_cached(TASK_UPDATE)?.execute(params![
                tid,
                row.state,
                row.terminal,
                row.version,
                row.updated_ns,
                row.expires_ns,
                row.idle_ns,
                row.reviewers,
                row.body,
                row.changed_us,
            ])?;
        } else {
            self.conn.prepare_cached(TASK_UPDATE_ALL)?.execute(params![
                tid,
                row.state,
                row.terminal,
                row.version,
                row.updated_ns,
                row.expires_ns,
                row.idle_ns,
                row.reviewers,
                row.body,
                row.changed_us,
                row.tenant,
                row.owner,
                row.context_id,
                row.created_us,
            ])?;
        }
        Ok(Ok(queued))
    }

    fn claim(
        &mut self,
        worker: &str,
        max: i64,
        until: i64,
    ) -> Result<Result<Vec<Claim>, StoreError>, rusqlite::Error> {
        let mut out = Vec::new();
        let mut stmt = self.conn.prepare_cached(CLAIM_TAKE)?;
        while (out.len() as i64) < max {
            let Some((task_id, e)) = self.queue.lease_next(worker, until) else {
                break;
            };
            stmt.execute(params![e.tid, worker, until, e.epoch, e.attempts])?;
            out.push(Claim {
                task_id,
                worker: worker.to_string(),
                epoch: uint(e.epoch),
                attempts: u32::try_from(e.attempts).unwrap_or(u32::MAX),
            });
        }
        Ok(Ok(out))
    }

    fn reap(&mut self, now: i64) -> Result<Result<Vec<TaskId>, StoreError>, rusqlite::Error> {
        let ids = self.queue.lapsed(now);
        for id in &ids {
            let Some(tid) = self.queue.get(id).map(|e| e.tid) else {
                continue;
            };
            let seq = self.ready_seq();
            self.conn
                .prepare_cached(REAP_FREE)?
                .execute(params![tid, seq])?;
            self.queue.make_available(id);
        }
        Ok(Ok(ids))
    }

    fn sweep(
        &mut self,
        now: i64,
        limit: i64,
    ) -> Result<Result<Vec<TaskId>, StoreError>, rusqlite::Error> {
        if limit <= 0 {
            return Ok(Ok(Vec::new()));
        }
        type Doomed = (
            i64,
            String,
            String,
            String,
            String,
            i64,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        let doomed: Vec<Doomed> = self
            .conn
            .prepare_cached(SWEEP_PICK)?
            .query_map(params![now, limit], |r| Doomed::try_from(r))?
            .collect::<Result<_, _>>()?;
        let mut ids = Vec::with_capacity(doomed.len());
        for (_, id, ..) in &doomed {
            match parse_id(id) {
                Ok(t) => ids.push(t),
                Err(e) => return Ok(Err(e)),
            }
        }
        for ((id, task_id_text, state, tenant, owner, created_us, kt, ko, km), task_id) in
            doomed.into_iter().zip(&ids)
        {
            if let Some(n) = id_number(&task_id_text) {
                self.id_changes.insert(n, None);
            }
            if let (Some(kt), Some(ko), Some(km)) = (kt, ko, km) {
                let h = self.idem.hash_parts(&kt, &ko, &km);
                // Only if the key still names this task.
                if self.key_tid(h) == Some(id) {
                    self.idem_changes.insert(h, None);
                }
            }
            self.queue.remove(task_id);
            self.count(&state, -1);
            self.listing_changes
                .extend(Change::remove(tenant, owner, created_us, &task_id_text));
            self.conn.prepare_cached(SWEEP_TASK)?.execute(params![id])?;
            self.conn
                .prepare_cached(SWEEP_EVENTS)?
                .execute(params![id])?;
            self.conn
                .prepare_cached(QUEUE_DELETE)?
                .execute(params![id])?;
            self.conn
                .prepare_cached(records::DELETE_OF_TASK)?
                .execute(params![id])?;
        }
        Ok(Ok(ids))
    }
}

/// Publishes what committed requests changed, then answers them.
fn publish_and_answer(hub: &WakeHub, items: impl Iterator<Item = (Op, Done)>) {
    let items: Vec<(Op, Done)> = items.collect();
    let mut work = false;
    for (op, d) in &items {
        work |= publish(hub, op, d);
    }
    if work {
        hub.work_queued();
    }
    for (op, d) in items {
        answer(op, d);
    }
}

/// The syncer thread: syncs the log once for every committed batch that is
/// waiting, marks them durable, then publishes and answers them in commit order.
fn sync_loop(
    wal: File,
    hub: Arc<WakeHub>,
    durability: Arc<Durability>,
    rx: mpsc::Receiver<Committed>,
) {
    batch_scheduling("syncer");
    let mut pending: Vec<Committed> = Vec::new();
    while let Ok(first) = rx.recv() {
        pending.push(first);
        while let Ok(more) = rx.try_recv() {
            pending.push(more);
        }
        #[cfg(test)]
        durability.hold.pass(|| {
            while let Ok(more) = rx.try_recv() {
                pending.push(more);
            }
            pending.len()
        });
        let through = pending.iter().map(|b| b.generation).max().unwrap_or(0);
        match wal.sync_data() {
            Ok(()) => {
                // Durable first: a reader woken by what is published below must
                // not wait for it.
                durability.synced(through);
                for batch in pending.drain(..) {
                    publish_and_answer(&hub, batch.items.into_iter());
                }
            }
            Err(e) => {
                // The batches are committed but may not be durable: say so, and
                // publish nothing (the next successful sync covers them); reads
                // waiting for them fail.
                tracing::error!(error = %e, "syncing the sqlite write-ahead log failed");
                durability.failed(through);
                for batch in pending.drain(..) {
                    for (op, _) in batch.items {
                        op.reject(StoreError::Backend(format!(
                            "syncing the write-ahead log failed: {e}"
                        )));
                    }
                }
            }
        }
    }
}

/// Puts what a committed request changed into the snapshot cache. The writer does
/// this as soon as the transaction commits, before the log is synced, tagged with
/// the batch's generation: the store answers the snapshot once that generation is
/// durable. (A worker that claimed the task in the next batch finds its snapshot
/// in memory rather than in the database.)
fn cache_committed(cache: &SnapshotCache, op: &Op, done: &Done, generation: u64) {
    match (op, done) {
        (Op::Create { task, .. }, Done::Create(Ok(None)))
        | (Op::Commit { task, .. }, Done::Commit(Ok(_))) => {
            cache.put_committed(task.clone(), generation)
        }
        (_, Done::Sweep(Ok(ids))) => cache.remove_swept(ids),
        _ => {}
    }
}

/// Tells the hub what a committed (and, with the syncer, durable) request changed;
/// true if it made work available.
fn publish(hub: &WakeHub, op: &Op, done: &Done) -> bool {
    match (op, done) {
        (Op::Create { task, enqueue, .. }, Done::Create(Ok(None))) => {
            hub.publish(&task.id, wake_of(task));
            *enqueue
        }
        (Op::Commit { task, .. }, Done::Commit(Ok(queued))) => {
            hub.publish(&task.id, wake_of(task));
            *queued
        }
        (_, Done::Release(Ok(held))) => *held,
        (_, Done::Reap(Ok(ids))) => !ids.is_empty(),
        _ => false,
    }
}

fn wake_of(task: &Task) -> TaskWake {
    TaskWake {
        last_seq: task.last_seq,
        state: task.state,
    }
}

/// Answers a request with its outcome.
fn answer(op: Op, done: Done) {
    match (op, done) {
        (Op::Create { reply, .. }, Done::Create(r)) => {
            let _ = reply.send(r);
        }
        (Op::Commit { reply, .. }, Done::Commit(r)) => {
            let _ = reply.send(r.map(|_| ()));
        }
        (Op::Claim { reply, .. }, Done::Claim(r)) => {
            let _ = reply.send(r);
        }
        (Op::Renew { reply, .. }, Done::Renew(r)) => {
            let _ = reply.send(r);
        }
        (Op::Release { reply, .. }, Done::Release(r)) => {
            let _ = reply.send(r.map(|_| ()));
        }
        (Op::DropClaim { reply, .. }, Done::DropClaim(r)) => {
            let _ = reply.send(r);
        }
        (Op::Reap { reply, .. }, Done::Reap(r)) => {
            let _ = reply.send(r);
        }
        (Op::Sweep { reply, .. }, Done::Sweep(r)) => {
            let _ = reply.send(r.map(|ids| ids.len()));
        }
        (Op::Record { reply, .. }, Done::Record(r)) => {
            let _ = reply.send(r);
        }
        (op, _) => op.reject(StoreError::Backend(
            "sqlite writer: outcome does not match the request".into(),
        )),
    }
}

/// Syncs the directory of `path` (where the database, its log and the
/// shared-memory file live), so that files just created there survive a power loss.
pub(crate) fn sync_dir(path: &Path) {
    #[cfg(unix)]
    {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if let Err(e) = File::open(dir).and_then(|d| d.sync_all()) {
            tracing::warn!(dir = %dir.display(), error = %e, "sqlite: syncing the directory failed");
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Puts the calling thread under `SCHED_BATCH`: woken, it waits for the running
/// thread to block or for the next tick instead of preempting it at once. On a busy
/// core that is what group commit wants. The runtime thread that sends a write and
/// wakes the writer keeps running, accepts more requests and sends their writes, and
/// the writer then takes them all in one transaction. Without it each send switched
/// threads: about one context switch per SendMessage on one core. On an idle core
/// the writer runs at once, as before. Only Linux has the policy; elsewhere, and if
/// the call fails, the thread keeps the normal policy.
fn batch_scheduling(thread: &str) {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: pid 0 is the calling thread; `param` lives across the call.
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) };
        if rc != 0 {
            tracing::debug!(thread, error = %std::io::Error::last_os_error(), "sqlite: SCHED_BATCH refused");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = thread;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every statement the writer runs finds its rows through an index: no full
    /// scan of a table and no temporary sort, however large the store grows.
    #[test]
    fn writer_statements_use_indexes() {
        let dir = tempfile::tempdir().unwrap();
        let conn =
            crate::schema::open_writer(&dir.path().join("p.db"), &Default::default()).unwrap();
        for sql in [
            IDEM_ROW,
            TASK_INSERT,
            TASK_HEAD,
            TASK_UPDATE,
            TASK_UPDATE_ALL,
            EVENT_INSERT,
            QUEUE_PUT,
            QUEUE_REQUEUE,
            QUEUE_DELETE,
            CLAIM_TAKE,
            RENEW,
            REAP_FREE,
            SWEEP_PICK,
            SWEEP_TASK,
            SWEEP_EVENTS,
        ] {
            for detail in crate::schema::query_plan(&conn, sql).unwrap() {
                assert!(
                    crate::schema::plan_step_is_indexed(&detail),
                    "{sql}\n  has plan step {detail:?}"
                );
            }
        }
    }
}
