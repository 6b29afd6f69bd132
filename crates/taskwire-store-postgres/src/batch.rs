//! Group commit: the creates and commits of one node, batched.
//!
//! Every create and commit is queued to one loop per store. The loop takes what
//! is queued, up to [`PostgresOptions::max_batch`](crate::PostgresOptions) writes,
//! and sends it as one call of `taskwire_apply_batch`: one round trip, one
//! transaction and one WAL flush for the whole batch, instead of one per write. At
//! most `write_batches` batches are in flight at once; while they are, new writes
//! wait in the queue and form the next batch, so batches grow with the load and a
//! lone write goes out at once.
//!
//! Each write in a batch is checked as it would be alone (its version, its fence,
//! its idempotency key) and answers on its own: a conflict fails that write, not
//! the batch. A batch holds at most one write of a task (a second one waits for
//! the next batch), so that each step of the batch can be one statement over all
//! of its writes. The writes of a batch lock their task rows in task-id order, so
//! two batches (of this node or another) never wait on each other in a cycle. When
//! the server refuses the batch as a whole (a duplicate task id, say, is an error,
//! not an answer, and so is a deadlock between creates of one idempotency key), it
//! rolled back every write in it, and each is sent again alone, so that only the
//! one at fault fails. A batch that fails on the connection gives
//! every write in it that error: whether it committed is not known, as for a single
//! write.
//!
//! Every write is bounded by the store's timeout
//! ([`PostgresOptions::timeout`](crate::PostgresOptions)): its caller gets
//! [`StoreError::Unavailable`] when no answer came in time, whether the write
//! waited in the queue or its batch is stuck on a connection. A write whose
//! caller gave up before its batch was formed is not sent. A batch not answered
//! within half the timeout gives its slot up, so that the next batch goes out on
//! another connection instead of waiting behind a dead one; a batch not answered
//! within the timeout closes its connection.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Pool;
use taskwire_core::event::Event;
use taskwire_core::store::{Commit, IdempotencyKey, QueueOp};
use taskwire_core::{StoreError, Task, TaskId};
use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio::time::Instant;
use tokio_postgres::types::Json;

use crate::error::{backend, pool as pool_error, timed_out};
use crate::row::{dur_ns, int, ns, TaskRow};

/// One create or commit waiting for its batch.
pub(crate) struct Write {
    what: What,
    reply: oneshot::Sender<Result<Answer, StoreError>>,
    /// When its caller stops waiting.
    deadline: Instant,
}

impl Write {
    /// Whether the caller still waits for the answer.
    fn wanted(&self, now: Instant) -> bool {
        !self.reply.is_closed() && now < self.deadline
    }
}

enum What {
    Create {
        task: Arc<Task>,
        events: Vec<Event>,
        key: Option<IdempotencyKey>,
        queue: NewEntry,
    },
    Commit(Commit),
}

impl What {
    fn id(&self) -> &TaskId {
        match self {
            What::Create { task, .. } => &task.id,
            What::Commit(c) => &c.task.id,
        }
    }
}

/// The queue entry a create makes.
pub(crate) enum NewEntry {
    None,
    /// Claimable by any worker.
    Available,
    /// Leased to a worker for a time counted from when the batch is sent, as a
    /// first claim leaves it.
    Leased {
        worker: String,
        lease: Duration,
    },
}

/// What the database answered for one write.
#[derive(Debug)]
pub(crate) struct Answer {
    /// For a commit, `taskwire_commit`'s answer (0 done, 1 done and queued, 2 no
    /// such task, 3 version conflict, 4 lease lost); 0 for a create.
    pub(crate) code: i16,
    /// For a create whose idempotency key named a task already, that task.
    pub(crate) existing: Option<Task>,
}

/// The sending side of a store's batch loop.
#[derive(Debug)]
pub(crate) struct Batcher {
    tx: mpsc::Sender<Write>,
    stats: Arc<Stats>,
    timeout: Duration,
}

/// Counts of what the batch loop sent.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    batches: AtomicU64,
    writes: AtomicU64,
}

/// How many batches this node sent and how many writes they held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// Batches sent (each one statement and one transaction).
    pub batches: u64,
    /// Creates and commits in them.
    pub writes: u64,
}

/// Writes queued beyond this wait for room (back-pressure on the callers).
const QUEUE: usize = 8192;

impl Batcher {
    /// Starts the loop on `pool`: batches of at most `max_batch` writes, at most
    /// `in_flight` of them at once.
    /// Each write (and each batch) is bounded by `timeout`.
    pub(crate) fn start(pool: Pool, max_batch: usize, in_flight: usize, timeout: Duration) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        let stats = Arc::new(Stats::default());
        tokio::spawn(run(
            pool,
            rx,
            Limits {
                max_batch: max_batch.max(1),
                in_flight: in_flight.max(1),
                timeout,
            },
            stats.clone(),
        ));
        Self { tx, stats, timeout }
    }

    /// What the loop sent so far.
    pub(crate) fn stats(&self) -> WriteStats {
        WriteStats {
            batches: self.stats.batches.load(Ordering::Relaxed),
            writes: self.stats.writes.load(Ordering::Relaxed),
        }
    }

    async fn submit(&self, what: What) -> Result<Answer, StoreError> {
        let (reply, answer) = oneshot::channel();
        let deadline = Instant::now() + self.timeout;
        let sent = async {
            self.tx
                .send(Write {
                    what,
                    reply,
                    deadline,
                })
                .await
                .map_err(|_| StoreError::Backend("postgres: the store is closing".into()))?;
            answer
                .await
                .map_err(|_| StoreError::Backend("postgres: the write was dropped".into()))?
        };
        match tokio::time::timeout_at(deadline, sent).await {
            Ok(r) => r,
            Err(_) => Err(timed_out("the write", self.timeout)),
        }
    }

    /// Creates a task in the next batch, with the queue entry `queue`.
    pub(crate) async fn create(
        &self,
        task: Arc<Task>,
        events: Vec<Event>,
        key: Option<IdempotencyKey>,
        queue: NewEntry,
    ) -> Result<Answer, StoreError> {
        self.submit(What::Create {
            task,
            events,
            key,
            queue,
        })
        .await
    }

    /// Commits in the next batch.
    pub(crate) async fn commit(&self, commit: Commit) -> Result<Answer, StoreError> {
        self.submit(What::Commit(commit)).await
    }
}

/// The bounds of the batch loop.
#[derive(Clone, Copy)]
struct Limits {
    max_batch: usize,
    in_flight: usize,
    timeout: Duration,
}

async fn run(pool: Pool, mut rx: mpsc::Receiver<Write>, limits: Limits, stats: Arc<Stats>) {
    let Limits {
        max_batch,
        in_flight,
        timeout,
    } = limits;
    let slots = Arc::new(Semaphore::new(in_flight));
    // Writes held over from the last batch, in arrival order: a batch holds at
    // most one write of a task, so a second one waits for the next batch.
    let mut held: VecDeque<Write> = VecDeque::new();
    loop {
        if held.is_empty() {
            match rx.recv().await {
                Some(w) => held.push_back(w),
                None => return,
            }
        }
        // Wait for a free slot first: what arrives meanwhile joins this batch.
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let now = Instant::now();
        let mut batch = Vec::with_capacity(max_batch.min(64));
        let mut ids: HashSet<TaskId> = HashSet::with_capacity(max_batch.min(64));
        let mut next = VecDeque::new();
        let mut take = |w: Write, batch: &mut Vec<Write>, next: &mut VecDeque<Write>| {
            if !w.wanted(now) {
                // Its caller was told the store did not answer: never apply it
                // behind their back.
                let _ = w.reply.send(Err(timed_out("the write", timeout)));
            } else if batch.len() < max_batch && ids.insert(w.what.id().clone()) {
                batch.push(w);
            } else {
                next.push_back(w);
            }
        };
        while let Some(w) = held.pop_front() {
            take(w, &mut batch, &mut next);
        }
        while batch.len() < max_batch {
            match rx.try_recv() {
                Ok(w) => take(w, &mut batch, &mut next),
                Err(_) => break,
            }
        }
        held = next;
        if batch.is_empty() {
            continue;
        }
        stats.batches.fetch_add(1, Ordering::Relaxed);
        stats
            .writes
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        metrics::histogram!("taskwire_pg_write_batch_size").record(batch.len() as f64);
        let pool = pool.clone();
        tokio::spawn(async move {
            let done = execute(&pool, batch, timeout);
            tokio::pin!(done);
            // A batch that is slow to answer (a dead connection, say) gives its
            // slot up, so the next batch does not wait behind it.
            tokio::select! {
                () = &mut done => drop(slot),
                () = tokio::time::sleep(timeout / 2) => {
                    drop(slot);
                    done.await;
                }
            }
        });
    }
}

/// Why a batch was not applied.
enum Failed {
    /// The server refused it and rolled all of it back.
    Refused(tokio_postgres::Error),
    /// Anything else (the pool, the connection): its outcome is unknown.
    Other(StoreError),
}

async fn execute(pool: &Pool, batch: Vec<Write>, timeout: Duration) {
    let whats: Vec<&What> = batch.iter().map(|w| &w.what).collect();
    match apply(pool, &whats, timeout).await {
        Ok(answers) => {
            for (w, a) in batch.into_iter().zip(answers) {
                let _ = w.reply.send(Ok(a));
            }
        }
        Err(Failed::Refused(e)) if batch.len() > 1 => {
            tracing::debug!(error = %e, writes = batch.len(),
                "postgres store: batch refused; writing each alone");
            let alone = batch.into_iter().map(|w| async move {
                let answer = match apply(pool, &[&w.what], timeout).await {
                    Ok(mut a) => a
                        .pop()
                        .ok_or_else(|| StoreError::Backend("postgres: no answer".into())),
                    Err(Failed::Refused(e)) => Err(refusal(&w.what, e)),
                    Err(Failed::Other(e)) => Err(e),
                };
                let _ = w.reply.send(answer);
            });
            futures::future::join_all(alone).await;
        }
        Err(Failed::Refused(e)) => {
            // A batch of one: its write is the one at fault.
            if let Some(w) = batch.into_iter().next() {
                let _ = w.reply.send(Err(refusal(&w.what, e)));
            }
        }
        Err(Failed::Other(e)) => {
            for w in batch {
                let _ = w.reply.send(Err(e.clone()));
            }
        }
    }
}

/// The error of one write the server refused.
fn refusal(what: &What, e: tokio_postgres::Error) -> StoreError {
    let duplicate_id = matches!(what, What::Create { .. })
        && e.as_db_error()
            .is_some_and(|db| db.constraint() == Some("tasks_pkey"));
    if duplicate_id {
        StoreError::Backend("duplicate task id".into())
    } else {
        backend(e)
    }
}

const WRITE_BATCH: &str = "SELECT o_ord, o_code, o_existing FROM taskwire_apply_batch(\
     $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, \
     $20, $21, $22, $23, $24, $25, $26, $27) ORDER BY o_ord";

/// The columns of a batch, one array per column of `taskwire_apply_batch`.
#[derive(Default)]
struct Columns<'a> {
    op: Vec<i16>,
    id: Vec<&'a str>,
    expected: Vec<Option<i64>>,
    fence_worker: Vec<Option<&'a str>>,
    fence_epoch: Vec<Option<i64>>,
    queue: Vec<i16>,
    tenant: Vec<&'a str>,
    owner: Vec<&'a str>,
    context_id: Vec<&'a str>,
    state: Vec<&'static str>,
    terminal: Vec<bool>,
    version: Vec<i64>,
    last_seq: Vec<i64>,
    created_us: Vec<i64>,
    changed_us: Vec<i64>,
    updated_ns: Vec<i64>,
    expires_ns: Vec<Option<i64>>,
    idle_ns: Vec<Option<i64>>,
    reviewers: Vec<Option<Json<Vec<&'a str>>>>,
    idem_tenant: Vec<Option<&'a str>>,
    idem_owner: Vec<Option<&'a str>>,
    idem_message_id: Vec<Option<&'a str>>,
    body: Vec<Json<&'a Task>>,
    events_seq: Vec<Option<i64>>,
    events: Vec<Option<Json<&'a [Event]>>>,
    lease_owner: Vec<Option<&'a str>>,
    lease_until: Vec<Option<i64>>,
}

fn queue_code(op: QueueOp) -> i16 {
    match op {
        QueueOp::Keep => 0,
        QueueOp::Enqueue => 1,
        QueueOp::Requeue => 2,
        QueueOp::Remove => 3,
    }
}

impl<'a> Columns<'a> {
    fn push_task(&mut self, task: &'a Task, events: &'a [Event]) {
        let row = TaskRow::new(task);
        self.id.push(task.id.as_str());
        self.tenant.push(row.tenant);
        self.owner.push(row.owner);
        self.context_id.push(row.context_id);
        self.state.push(row.state);
        self.terminal.push(row.terminal);
        self.version.push(row.version);
        self.last_seq.push(row.last_seq);
        self.created_us.push(row.created_us);
        self.changed_us.push(row.changed_us);
        self.updated_ns.push(row.updated_ns);
        self.expires_ns.push(row.expires_ns);
        self.idle_ns.push(row.idle_ns);
        self.reviewers.push(row.reviewers.map(Json));
        self.body.push(Json(task));
        // The events of one write are one event-log row, keyed by the last one.
        match events.last() {
            Some(last) => {
                self.events_seq.push(Some(int(last.seq)));
                self.events.push(Some(Json(events)));
            }
            None => {
                self.events_seq.push(None);
                self.events.push(None);
            }
        }
    }

    /// Adds a write; `now_ns` is when the batch is sent (a leased entry's
    /// lease counts from it).
    fn push(&mut self, what: &'a What, now_ns: i64) {
        match what {
            What::Create {
                task,
                events,
                key,
                queue,
            } => {
                self.op.push(0);
                self.expected.push(None);
                self.fence_worker.push(None);
                self.fence_epoch.push(None);
                // Queue 0 none, 1 claimable, 2 leased.
                match queue {
                    NewEntry::None => {
                        self.queue.push(0);
                        self.lease_owner.push(None);
                        self.lease_until.push(None);
                    }
                    NewEntry::Available => {
                        self.queue.push(1);
                        self.lease_owner.push(None);
                        self.lease_until.push(None);
                    }
                    NewEntry::Leased { worker, lease } => {
                        self.queue.push(2);
                        self.lease_owner.push(Some(worker.as_str()));
                        self.lease_until
                            .push(Some(now_ns.saturating_add(dur_ns(*lease))));
                    }
                }
                self.idem_tenant
                    .push(key.as_ref().map(|k| k.tenant.as_str()));
                self.idem_owner.push(key.as_ref().map(|k| k.owner.as_str()));
                self.idem_message_id
                    .push(key.as_ref().map(|k| k.message_id.as_str()));
                self.push_task(task, events);
            }
            What::Commit(c) => {
                self.op.push(1);
                self.expected.push(Some(int(c.expected_version)));
                self.fence_worker
                    .push(c.fence.as_ref().map(|f| f.worker.as_str()));
                self.fence_epoch
                    .push(c.fence.as_ref().map(|f| int(f.epoch)));
                self.queue.push(queue_code(c.queue));
                self.lease_owner.push(None);
                self.lease_until.push(None);
                self.idem_tenant.push(None);
                self.idem_owner.push(None);
                self.idem_message_id.push(None);
                self.push_task(&c.task, &c.events);
            }
        }
    }
}

/// Sends one batch, bounded by `timeout` (the wait for a connection included);
/// a batch that timed out closes its connection.
async fn apply(pool: &Pool, whats: &[&What], timeout: Duration) -> Result<Vec<Answer>, Failed> {
    let deadline = Instant::now() + timeout;
    let conn = match tokio::time::timeout_at(deadline, pool.get()).await {
        Ok(c) => c.map_err(|e| Failed::Other(pool_error(e)))?,
        Err(_) => return Err(Failed::Other(timed_out("the connection pool", timeout))),
    };
    let mut cols = Columns::default();
    let now_ns = ns(chrono::Utc::now());
    for w in whats {
        cols.push(w, now_ns);
    }
    let sent = tokio::time::timeout_at(deadline, send(&conn, &cols)).await;
    let rows = match sent {
        Ok(rows) => rows?,
        Err(_) => {
            drop(deadpool_postgres::Object::take(conn));
            return Err(Failed::Other(timed_out("the write batch", timeout)));
        }
    };
    drop(conn);
    if rows.len() != whats.len() {
        return Err(Failed::Other(StoreError::Backend(format!(
            "postgres: {} answers to a batch of {}",
            rows.len(),
            whats.len()
        ))));
    }
    let mut answers = Vec::with_capacity(rows.len());
    for r in rows {
        let code: i16 = r.try_get(1).map_err(|e| Failed::Other(backend(e)))?;
        let existing: Option<Json<Task>> = r
            .try_get(2)
            .map_err(|e| Failed::Other(StoreError::Corrupt(format!("task: {e}"))))?;
        answers.push(Answer {
            code,
            existing: existing.map(|Json(t)| t),
        });
    }
    Ok(answers)
}

/// One call of `taskwire_apply_batch` with the columns of a batch.
async fn send(
    conn: &deadpool_postgres::Object,
    cols: &Columns<'_>,
) -> Result<Vec<tokio_postgres::Row>, Failed> {
    let stmt = conn
        .prepare_cached(WRITE_BATCH)
        .await
        .map_err(|e| Failed::Other(backend(e)))?;
    conn.query(
        &stmt,
        &[
            &cols.op,
            &cols.id,
            &cols.expected,
            &cols.fence_worker,
            &cols.fence_epoch,
            &cols.queue,
            &cols.tenant,
            &cols.owner,
            &cols.context_id,
            &cols.state,
            &cols.terminal,
            &cols.version,
            &cols.last_seq,
            &cols.created_us,
            &cols.changed_us,
            &cols.updated_ns,
            &cols.expires_ns,
            &cols.idle_ns,
            &cols.reviewers,
            &cols.idem_tenant,
            &cols.idem_owner,
            &cols.idem_message_id,
            &cols.body,
            &cols.events_seq,
            &cols.events,
            &cols.lease_owner,
            &cols.lease_until,
        ],
    )
    .await
    .map_err(|e| {
        // A server error refusing the batch rolled it back; one saying the
        // server is going away (or cancelled it) leaves its outcome unknown.
        if e.as_db_error().is_some() && !crate::error::unreachable(&e) {
            Failed::Refused(e)
        } else {
            Failed::Other(backend(e))
        }
    })
}
