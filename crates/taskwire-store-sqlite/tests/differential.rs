//! Differential test: a long pseudo-random sequence of store operations runs against
//! the SQLite store and the in-memory reference store side by side, and every answer
//! and every observable state (tasks, event logs, listings with cursors, queue,
//! counts, idle candidates) must be the same.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions panic on failure by design"
)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use serde_json::json;
use taskwire_core::store::{Claim, Commit, CreateOutcome, IdempotencyKey, ListQuery, QueueOp};
use taskwire_core::{
    Event, EventKind, MemoryStore, StepPhase, StoreError, Task, TaskId, TaskState, TaskStore,
    Timestamp,
};
use taskwire_store_sqlite::{SqliteOptions, SqliteStore};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            None
        } else {
            items.get(self.below(items.len() as u64) as usize)
        }
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn base_task(id: &TaskId, tenant: &str, owner: &str, context: &str, at: Timestamp) -> Task {
    serde_json::from_value(json!({
        "id": id,
        "contextId": context,
        "tenant": tenant,
        "owner": owner,
        "responsibleUser": owner,
        "agent": "scripted",
        "state": "submitted",
        "stateChangedAt": at,
        "createdAt": at,
        "updatedAt": at,
        "version": 1,
        "lastSeq": 2,
        "history": [],
        "artifacts": [],
        "turns": 0,
    }))
    .unwrap()
}

fn event(id: &TaskId, seq: u64, version: u64, at: Timestamp, kind: EventKind) -> Event {
    Event {
        task_id: id.clone(),
        seq,
        version,
        at,
        kind,
    }
}

fn kind_of<T>(r: &Result<T, StoreError>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(StoreError::Backend(m)) => format!("backend {m}"),
        Err(e) => format!("{e:?}"),
    }
}

fn claims_key(c: &[Claim]) -> Vec<(String, String, u64, u32)> {
    let mut v: Vec<_> = c
        .iter()
        .map(|c| (c.task_id.to_string(), c.worker.clone(), c.epoch, c.attempts))
        .collect();
    v.sort();
    v
}

struct Pair {
    mem: Arc<dyn TaskStore>,
    sql: Arc<dyn TaskStore>,
}

impl Pair {
    async fn compare_all(&self, ids: &[TaskId], probe_times: &[Timestamp], step: usize) {
        let (m, s) = (&self.mem, &self.sql);
        assert_eq!(
            m.queue_depth().await.unwrap(),
            s.queue_depth().await.unwrap(),
            "queue depth at step {step}"
        );
        assert_eq!(
            m.count_by_state().await.unwrap(),
            s.count_by_state().await.unwrap(),
            "counts at step {step}"
        );
        for id in ids {
            assert_eq!(
                m.get(id).await.unwrap(),
                s.get(id).await.unwrap(),
                "task {id} at step {step}"
            );
            assert_eq!(
                m.events(id, 0, 1000).await.unwrap(),
                s.events(id, 0, 1000).await.unwrap(),
                "events of {id} at step {step}"
            );
            assert_eq!(
                m.events(id, 1, 2).await.unwrap(),
                s.events(id, 1, 2).await.unwrap(),
                "event page of {id} at step {step}"
            );
        }
        for t in probe_times {
            let mut a = m.idle_expired(*t, 10_000).await.unwrap();
            let mut b = s.idle_expired(*t, 10_000).await.unwrap();
            a.sort();
            b.sort();
            assert_eq!(a, b, "idle candidates at step {step}");
        }
        let mut queries = Vec::new();
        for tenant in ["t1", "t2"] {
            queries.push({
                let mut v = ListQuery::default();
                v.tenant = tenant.into();
                v
            });
            queries.push({
                let mut v = ListQuery::default();
                v.tenant = tenant.into();
                v.order = taskwire_core::store::ListOrder::StateChanged;
                v.page_size = 3;
                v
            });
            for owner in ["alice", "bob"] {
                queries.push({
                    let mut v = ListQuery::default();
                    v.tenant = tenant.into();
                    v.owner = Some(owner.into());
                    v
                });
                queries.push({
                    let mut v = ListQuery::default();
                    v.tenant = tenant.into();
                    v.reviewer = Some(owner.into());
                    v
                });
            }
            queries.push({
                let mut v = ListQuery::default();
                v.tenant = tenant.into();
                v.context_id = Some("c1".into());
                v
            });
            queries.push({
                let mut v = ListQuery::default();
                v.tenant = tenant.into();
                v.state = Some(TaskState::Working);
                v
            });
            queries.push({
                let mut v = ListQuery::default();
                v.tenant = tenant.into();
                v.owner = Some("alice".into());
                v.state = Some(TaskState::Submitted);
                v
            });
            // An owner's listings come from the SQLite store's in-memory listing:
            // every filter, in both orders.
            for order in [
                taskwire_core::store::ListOrder::Created,
                taskwire_core::store::ListOrder::StateChanged,
            ] {
                for owner in ["alice", "bob", "nobody"] {
                    queries.push({
                        let mut v = ListQuery::default();
                        v.tenant = tenant.into();
                        v.owner = Some(owner.into());
                        v.order = order;
                        v
                    });
                    queries.push({
                        let mut v = ListQuery::default();
                        v.tenant = tenant.into();
                        v.owner = Some(owner.into());
                        v.context_id = Some("c1".into());
                        v.order = order;
                        v
                    });
                    queries.push({
                        let mut v = ListQuery::default();
                        v.tenant = tenant.into();
                        v.owner = Some(owner.into());
                        v.state = Some(TaskState::Working);
                        v.order = order;
                        v
                    });
                    for t in probe_times {
                        queries.push({
                            let mut v = ListQuery::default();
                            v.tenant = tenant.into();
                            v.owner = Some(owner.into());
                            v.updated_after = Some(*t);
                            v.order = order;
                            v
                        });
                        queries.push({
                            let mut v = ListQuery::default();
                            v.tenant = tenant.into();
                            v.owner = Some(owner.into());
                            v.changed_since = Some(*t);
                            v.order = order;
                            v
                        });
                    }
                }
            }
            for t in probe_times {
                queries.push({
                    let mut v = ListQuery::default();
                    v.tenant = tenant.into();
                    v.updated_after = Some(*t);
                    v
                });
                queries.push({
                    let mut v = ListQuery::default();
                    v.tenant = tenant.into();
                    v.changed_since = Some(*t);
                    v.order = taskwire_core::store::ListOrder::StateChanged;
                    v
                });
            }
        }
        for (qi, mut q) in queries.into_iter().enumerate() {
            q.page_size = 3;
            let mut pages = 0;
            loop {
                let a = m.list(&q).await.unwrap();
                let b = s.list(&q).await.unwrap();
                assert_eq!(a.total, b.total, "total of query {qi} at step {step}");
                assert_eq!(
                    a.tasks, b.tasks,
                    "page {pages} of query {qi} at step {step}"
                );
                assert_eq!(
                    a.next_cursor, b.next_cursor,
                    "cursor of query {qi} at step {step}"
                );
                pages += 1;
                match a.next_cursor {
                    Some(c) => q.cursor = Some(c),
                    None => break,
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_matches_the_memory_store() {
    run(SqliteOptions::default()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_without_snapshot_cache_matches_the_memory_store() {
    run({
        let mut v = SqliteOptions::default();
        v.cache_tasks = 0;
        v
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_with_a_tiny_cache_and_batches_matches_the_memory_store() {
    run({
        let mut v = SqliteOptions::default();
        v.cache_tasks = 6;
        v.max_batch = 3;
        v.readers = 1;
        v
    })
    .await;
}

async fn run(options: SqliteOptions) {
    let dir = tempfile::tempdir().unwrap();
    let reopen_options = options.clone();
    let pair = Pair {
        mem: Arc::new(MemoryStore::new()),
        sql: Arc::new(SqliteStore::open_with(dir.path().join("diff.db"), options).unwrap()),
    };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut clock: DateTime<Utc> = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let mut ids: Vec<TaskId> = Vec::new();
    let mut claims: Vec<Claim> = Vec::new();
    let mut probe_times: Vec<Timestamp> = Vec::new();
    let states = TaskState::ALL;
    // What the sequence exercised, so that a change of the generator cannot make it vacuous.
    let mut seen: std::collections::BTreeMap<String, usize> = Default::default();
    let mut note = |what: String| *seen.entry(what).or_default() += 1;
    for step in 0..600 {
        // Time moves by a few hundred nanoseconds to a few milliseconds, and sometimes
        // not at all, so that creation times tie and sub-microsecond order matters.
        if !rng.chance(20) {
            let ns = if rng.chance(50) {
                rng.below(900)
            } else {
                rng.below(3_000_000)
            };
            clock += chrono::Duration::nanoseconds(ns as i64 + 1);
        }
        match rng.below(100) {
            0..=29 => {
                let id = TaskId::new();
                let tenant = *rng.pick(&["t1", "t2"]).unwrap();
                let owner = *rng.pick(&["alice", "bob"]).unwrap();
                let context = *rng.pick(&["c1", "c2"]).unwrap();
                let task = base_task(&id, tenant, owner, context, clock);
                let events = vec![
                    event(
                        &id,
                        1,
                        1,
                        clock,
                        EventKind::Created {
                            context_id: context.into(),
                            agent: "scripted".into(),
                        },
                    ),
                    event(
                        &id,
                        2,
                        1,
                        clock,
                        EventKind::Step {
                            name: "s".into(),
                            phase: StepPhase::Started,
                        },
                    ),
                ];
                let key = rng.chance(80).then(|| IdempotencyKey {
                    tenant: tenant.into(),
                    owner: owner.into(),
                    message_id: format!("m{}", rng.below(25)),
                });
                let enqueue = rng.chance(70);
                let a = pair
                    .mem
                    .create(task.clone(), events.clone(), key.clone(), enqueue)
                    .await
                    .unwrap();
                let b = pair.sql.create(task, events, key, enqueue).await.unwrap();
                match (a, b) {
                    (CreateOutcome::Created(x), CreateOutcome::Created(y)) => {
                        note("created".into());
                        assert_eq!(x, y);
                        ids.push(x.id.clone());
                    }
                    (CreateOutcome::Existing(x), CreateOutcome::Existing(y)) => {
                        note("existing".into());
                        assert_eq!(x, y, "step {step}")
                    }
                    (a, b) => panic!("create outcomes differ at step {step}: {a:?} vs {b:?}"),
                }
            }
            30..=59 => {
                let Some(id) = rng.pick(&ids).cloned() else {
                    continue;
                };
                let Some(cur) = pair.mem.get(&id).await.unwrap() else {
                    // Swept: both must say not found.
                    let ghost = base_task(&id, "t1", "alice", "c1", clock);
                    let c = Commit {
                        task: ghost.into(),
                        expected_version: 1,
                        events: vec![],
                        queue: QueueOp::Keep,
                        fence: None,
                    };
                    let a = pair.mem.commit(c.clone()).await;
                    let b = pair.sql.commit(c).await;
                    assert_eq!(
                        kind_of(&a),
                        kind_of(&b),
                        "commit on a swept task at step {step}"
                    );
                    note(format!("commit {}", kind_of(&a)));
                    continue;
                };
                let mut next = cur.clone();
                next.version += 1;
                next.updated_at = clock;
                if !cur.state.is_terminal() || rng.chance(10) {
                    next.state = *rng.pick(&states).unwrap();
                }
                next.expires_at = (next.state.is_terminal() && rng.chance(70)).then(|| {
                    clock + chrono::Duration::nanoseconds(rng.below(5_000_000_000) as i64)
                });
                next.idle_expires_at = (!next.state.is_terminal() && rng.chance(50)).then(|| {
                    clock + chrono::Duration::nanoseconds(rng.below(5_000_000_000) as i64)
                });
                next.pending_reviews = if rng.chance(30) {
                    vec![serde_json::from_value(json!({
                        "id": "r1",
                        "reviewer": *rng.pick(&["alice", "bob"]).unwrap(),
                        "summary": "look",
                        "since": clock,
                    }))
                    .unwrap()]
                } else {
                    Vec::new()
                };
                next.metadata.insert("step".into(), json!(step));
                let n_events = rng.below(3);
                let mut events = Vec::new();
                for _ in 0..n_events {
                    next.last_seq += 1;
                    events.push(event(
                        &id,
                        next.last_seq,
                        next.version,
                        clock,
                        EventKind::Step {
                            name: format!("s{step}"),
                            phase: StepPhase::Finished,
                        },
                    ));
                }
                let expected_version = if rng.chance(15) {
                    cur.version.saturating_sub(1)
                } else {
                    cur.version
                };
                let queue = *rng
                    .pick(&[
                        QueueOp::Keep,
                        QueueOp::Enqueue,
                        QueueOp::Requeue,
                        QueueOp::Remove,
                    ])
                    .unwrap();
                let fence = if rng.chance(40) {
                    let own: Vec<Claim> =
                        claims.iter().filter(|c| c.task_id == id).cloned().collect();
                    rng.pick(&own)
                        .cloned()
                        .or_else(|| rng.pick(&claims).cloned())
                } else {
                    None
                };
                let c = Commit {
                    task: next.into(),
                    expected_version,
                    events,
                    queue,
                    fence,
                };
                let a = pair.mem.commit(c.clone()).await;
                let b = pair.sql.commit(c).await;
                assert_eq!(kind_of(&a), kind_of(&b), "commit at step {step}");
                note(format!("commit {}", kind_of(&a)));
            }
            60..=71 => {
                let worker = *rng.pick(&["w1", "w2"]).unwrap();
                let lease = Duration::from_nanos(rng.below(10_000_000_000) + 1);
                let a = pair.mem.claim(worker, 10_000, lease, clock).await.unwrap();
                let b = pair.sql.claim(worker, 10_000, lease, clock).await.unwrap();
                assert_eq!(claims_key(&a), claims_key(&b), "claims at step {step}");
                if !a.is_empty() {
                    note("claimed".into());
                }
                claims.extend(a);
            }
            72..=77 => {
                let Some(c) = rng.pick(&claims).cloned() else {
                    continue;
                };
                let lease = Duration::from_nanos(rng.below(10_000_000_000));
                let a = pair.mem.renew(&c, lease, clock).await.unwrap();
                let b = pair.sql.renew(&c, lease, clock).await.unwrap();
                assert_eq!(a, b, "renew at step {step}");
                note(format!("renew {a}"));
            }
            78..=83 => {
                let Some(c) = rng.pick(&claims).cloned() else {
                    continue;
                };
                pair.mem.release(&c).await.unwrap();
                pair.sql.release(&c).await.unwrap();
            }
            84..=87 => {
                let Some(c) = rng.pick(&claims).cloned() else {
                    continue;
                };
                pair.mem.drop_claim(&c).await.unwrap();
                pair.sql.drop_claim(&c).await.unwrap();
            }
            88..=93 => {
                let now = clock + chrono::Duration::nanoseconds(rng.below(12_000_000_000) as i64);
                let mut a = pair.mem.reap(now).await.unwrap();
                let mut b = pair.sql.reap(now).await.unwrap();
                a.sort();
                b.sort();
                assert_eq!(a, b, "reap at step {step}");
                if !a.is_empty() {
                    note("reaped".into());
                }
            }
            _ => {
                let now = clock + chrono::Duration::nanoseconds(rng.below(6_000_000_000) as i64);
                let a = pair.mem.sweep(now, 10_000).await.unwrap();
                let b = pair.sql.sweep(now, 10_000).await.unwrap();
                assert_eq!(a, b, "sweep at step {step}");
                if a > 0 {
                    note("swept".into());
                }
            }
        }
        // Probe times: just before, at and after updates that happened, to the nanosecond.
        if step % 7 == 0 {
            probe_times = vec![
                clock - chrono::Duration::nanoseconds(1),
                clock,
                clock - chrono::Duration::milliseconds(5),
                clock + chrono::Duration::seconds(3),
            ];
        }
        if step % 25 == 24 {
            pair.compare_all(&ids, &probe_times, step).await;
        }
    }
    pair.compare_all(&ids, &probe_times, 600).await;
    // Reopened, the store rebuilds what it keeps in memory (the queue, the owners'
    // listings) from the tables, and still matches.
    let Pair { mem, sql } = pair;
    drop(sql); // the last handle: the writer closes the database
    let pair = Pair {
        mem,
        sql: Arc::new(SqliteStore::open_with(dir.path().join("diff.db"), reopen_options).unwrap()),
    };
    pair.compare_all(&ids, &probe_times, 601).await;
    let distinct: BTreeSet<_> = ids.iter().collect();
    assert!(distinct.len() > 50, "the sequence created tasks");
    eprintln!("exercised: {seen:?}");
    for what in [
        "created",
        "existing",
        "commit ok",
        "commit Conflict",
        "commit LeaseLost",
        "commit NotFound",
        "claimed",
        "renew true",
        "renew false",
        "reaped",
        "swept",
    ] {
        assert!(
            seen.get(what).copied().unwrap_or(0) > 0,
            "the sequence never exercised {what}: {seen:?}"
        );
    }
}
