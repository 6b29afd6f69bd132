//! Behaviour particular to the PostgreSQL store: several stores (nodes) on one
//! database see each other's commits through their hubs, and idempotent creates,
//! claims, sweeps and record quotas stay exact when nodes race. Against the
//! database named by `TASKWIRE_TEST_POSTGRES_URL`; skipped without it (but for the
//! checks of the options, which need no database).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use serde_json::json;
use taskwire_core::record::{PutOutcome, Quota, Record, RecordKind};
use taskwire_core::store::{CreateOutcome, IdempotencyKey, TaskStore};
use taskwire_core::{
    Access, Caller, CreateTask, Message, StepPhase, TaskDefaults, TaskService, TaskState,
};
use taskwire_store_postgres::{PostgresError, PostgresOptions, PostgresStore};

mod common;
#[path = "common/partition.rs"]
mod partition;
use partition::{Mode, PartitionProxy};

fn alice() -> Caller {
    Caller::new("t1", "alice")
}

fn msg(id: &str, text: &str) -> Message {
    let mut m = Message::user_text(text);
    m.message_id = id.to_string();
    m
}

/// Two nodes of one deployment: two stores on one schema.
async fn two_nodes(schemas: &common::Schemas) -> (Arc<PostgresStore>, Arc<PostgresStore>) {
    let (_, a, b) = two_nodes_in(schemas).await;
    (a, b)
}

/// [`two_nodes`], with the name of their schema.
async fn two_nodes_in(
    schemas: &common::Schemas,
) -> (String, Arc<PostgresStore>, Arc<PostgresStore>) {
    let schema = schemas.fresh();
    let a = Arc::new(schemas.open(&schema).await);
    let b = Arc::new(schemas.open(&schema).await);
    assert_ne!(a.node(), b.node());
    (schema, a, b)
}

#[tokio::test]
async fn addresses_and_options_are_checked() {
    let err = PostgresStore::open("mysql://x@localhost/db", PostgresOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, PostgresError::InvalidUrl(_)), "{err}");
    let err = PostgresStore::open("postgres://x@127.0.0.1/db", {
        let mut v = PostgresOptions::default();
        v.pool_size = 0;
        v
    })
    .await
    .unwrap_err();
    assert!(matches!(err, PostgresError::InvalidOptions(_)), "{err}");
    let err = PostgresStore::open("postgres://x@127.0.0.1/db", {
        let mut v = PostgresOptions::default();
        v.schema = Some("Robert'); DROP TABLE x; --".into());
        v
    })
    .await
    .unwrap_err();
    assert!(matches!(err, PostgresError::InvalidOptions(_)), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_are_recorded_and_applied_once() {
    let Some(url) = common::url() else {
        return;
    };
    let schemas = common::Schemas::new(&url);
    let schema = schemas.fresh();
    let first = schemas.open(&schema).await;
    let svc = TaskService::new(Arc::new(first), "scripted");
    let t = svc
        .create(&alice(), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap()
        .task;
    drop(svc);
    // Reopening keeps the data and applies nothing again.
    let again = schemas.open(&schema).await;
    assert_eq!(again.get(&t.id).await.unwrap().unwrap().id, t.id);
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let versions: Vec<i64> = client
        .query(
            &format!("SELECT version FROM \"{schema}\".schema_migrations ORDER BY version"),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(versions, (1..=versions.len() as i64).collect::<Vec<_>>());
    assert!(!versions.is_empty());
    // A schema from a newer build is refused rather than used.
    client
        .execute(
            &format!("INSERT INTO \"{schema}\".schema_migrations (version) VALUES (1000)"),
            &[],
        )
        .await
        .unwrap();
    let err = PostgresStore::open(&url, {
        let mut v = PostgresOptions::default();
        v.schema = Some(schema.clone());
        v
    })
    .await
    .unwrap_err();
    assert!(
        matches!(err, PostgresError::SchemaTooNew { found: 1000, .. }),
        "{err}"
    );
}

/// A subscriber on node B gets, with no gap and no duplicate, the events that
/// node A commits, woken by A's notifications (well before the subscriber's own
/// fallback re-read after 5 s); B's claimers hear of A's new work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_wake_each_other() {
    let Some(url) = common::url() else {
        return;
    };
    let schemas = common::Schemas::new(&url);
    let (a, b) = two_nodes(&schemas).await;
    let svc_a = TaskService::new(a.clone(), "scripted");
    let svc_b = TaskService::new(b.clone(), "scripted");

    // Work created on A wakes B's claimers.
    let notified = b.hub().work_notified();
    tokio::pin!(notified);
    notified.as_mut().enable();
    let t = svc_a
        .create(&alice(), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap()
        .task;
    tokio::time::timeout(Duration::from_secs(2), notified)
        .await
        .expect("node B hears of the work node A queued");

    // B's subscriber reads while A commits, one commit every 50 ms, so it waits
    // for a wake-up between commits: woken only by its fallback re-read (every
    // 5 s) it would take well over 4 s; B's watch channel follows too.
    let mut rx = b.hub().watch(&t.id);
    let sub = svc_b
        .subscribe(Access::Owner(&alice()), &t.id, 0)
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let reader = tokio::spawn(async move {
        let mut sub = sub;
        let mut seqs = Vec::new();
        while let Some(e) = tokio::time::timeout(Duration::from_secs(30), sub.next())
            .await
            .unwrap()
        {
            seqs.push(e.unwrap().seq);
        }
        seqs
    });
    for i in 0..10 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        svc_a
            .mutate(&t.id, Access::System, None, |d| {
                d.record(taskwire_core::EventKind::Step {
                    name: format!("s{i}"),
                    phase: StepPhase::Started,
                });
                Ok(())
            })
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    svc_a
        .cancel(Access::Owner(&alice()), &t.id, None)
        .await
        .unwrap();
    let last = a.get(&t.id).await.unwrap().unwrap().last_seq;
    let seqs = reader.await.unwrap();
    assert_eq!(seqs, (1..=last).collect::<Vec<_>>(), "no gap, no duplicate");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "woken by notifications, not by the fallback re-read ({:?})",
        started.elapsed()
    );
    tokio::time::timeout(Duration::from_secs(2), async {
        loop {
            if rx.borrow_and_update().last_seq == last {
                break;
            }
            rx.changed().await.unwrap();
        }
    })
    .await
    .expect("node B's hub reaches node A's last sequence number");
    assert_eq!(rx.borrow().state, TaskState::Canceled);

    // A node ignores its own notifications (it published them already): A's
    // firehose carries each of its commits once.
    let mut fire = a.hub().firehose();
    svc_a
        .create(&alice(), CreateTask::new(msg("m2", "hi")))
        .await
        .unwrap();
    let (id, _) = fire.recv().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        fire.try_recv().is_err(),
        "a second publication of {id} came back"
    );
}

/// The same create sent to both nodes at once, many times over, makes one task
/// per key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_on_two_nodes_are_idempotent() {
    let Some(url) = common::url() else {
        return;
    };
    let schemas = common::Schemas::new(&url);
    let (a, b) = two_nodes(&schemas).await;
    let svc_a = TaskService::new(a.clone(), "scripted");
    let svc_b = TaskService::new(b.clone(), "scripted");
    let keys = 40;
    let mut joins = Vec::new();
    for round in 0..3 {
        for k in 0..keys {
            for svc in [&svc_a, &svc_b] {
                let svc = svc.clone();
                joins.push(tokio::spawn(async move {
                    let c = svc
                        .create(&alice(), CreateTask::new(msg(&format!("k{k}"), "hi")))
                        .await
                        .unwrap();
                    (k, round, c.task.id.clone(), c.created)
                }));
            }
        }
    }
    let mut ids = std::collections::BTreeMap::new();
    let mut created = 0;
    for j in joins {
        let (k, _, id, was_created) = j.await.unwrap();
        created += usize::from(was_created);
        let prev = ids.insert(k, id.clone());
        assert!(prev.is_none_or(|p| p == id), "key k{k} named two tasks");
    }
    assert_eq!(created, keys, "one create per key");
    let counts = a.count_by_state().await.unwrap();
    let total: u64 = counts.iter().map(|(_, n)| n).sum();
    assert_eq!(total, keys as u64);
    assert_eq!(b.queue_depth().await.unwrap(), keys as u64);

    // The store-level outcome names the winner.
    let t = ids.values().next().unwrap().clone();
    let task = a.get(&t).await.unwrap().unwrap();
    let mut copy = task.clone();
    copy.id = taskwire_core::TaskId::new();
    let key = IdempotencyKey {
        tenant: "t1".into(),
        owner: "alice".into(),
        message_id: ids
            .iter()
            .find(|(_, id)| **id == t)
            .map(|(k, _)| format!("k{k}"))
            .unwrap(),
    };
    match b.create(copy, Vec::new(), Some(key), true).await.unwrap() {
        CreateOutcome::Existing(e) => assert_eq!(e.id, t),
        CreateOutcome::Created(_) => panic!("a second task under one key"),
    }
}

/// Claims racing on two nodes hand out each entry once; reapers and sweepers
/// running on both nodes at once handle each entry and task once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_reaps_and_sweeps_race_safely() {
    let Some(url) = common::url() else {
        return;
    };
    let schemas = common::Schemas::new(&url);
    let (a, b) = two_nodes(&schemas).await;
    let svc = TaskService::new(a.clone(), "scripted").with_defaults(
        TaskDefaults::default()
            .with_ttl(Some(Duration::from_millis(1)))
            .with_idle_lifespan(None),
    );
    let n = 60;
    let mut ids = BTreeSet::new();
    for i in 0..n {
        let t = svc
            .create(&alice(), CreateTask::new(msg(&format!("m{i}"), "hi")))
            .await
            .unwrap()
            .task;
        ids.insert(t.id.clone());
    }
    let now = Utc::now();
    let lease = Duration::from_secs(10);
    let mut joins = Vec::new();
    for w in 0..6 {
        let store: Arc<dyn TaskStore> = if w % 2 == 0 { a.clone() } else { b.clone() };
        joins.push(tokio::spawn(async move {
            let mut got = Vec::new();
            loop {
                let c = store.claim(&format!("w{w}"), 4, lease, now).await.unwrap();
                if c.is_empty() {
                    return got;
                }
                got.extend(c);
            }
        }));
    }
    let mut claimed = Vec::new();
    for j in joins {
        claimed.extend(j.await.unwrap());
    }
    let claimed_ids: BTreeSet<_> = claimed.iter().map(|c| c.task_id.clone()).collect();
    assert_eq!(claimed.len(), n, "no entry claimed twice");
    assert_eq!(claimed_ids, ids);
    assert!(claimed.iter().all(|c| c.epoch == 1 && c.attempts == 1));

    // Both nodes reap at once: every lapsed lease comes back once.
    let later = now + chrono::Duration::seconds(60);
    let (ra, rb) = tokio::join!(a.reap(later), b.reap(later));
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    assert_eq!(ra.len() + rb.len(), n);
    let reaped: BTreeSet<_> = ra.into_iter().chain(rb).collect();
    assert_eq!(reaped, ids);
    // A holder of a reaped lease is fenced off.
    let stale = claimed[0].clone();
    assert!(!b.renew(&stale, lease, later).await.unwrap());

    // Cancel everything, then sweep from both nodes in small batches at once.
    for id in &ids {
        svc.cancel(Access::Owner(&alice()), id, None).await.unwrap();
    }
    assert_eq!(a.queue_depth().await.unwrap(), 0);
    let sweep = |s: Arc<PostgresStore>| async move {
        let mut total = 0;
        loop {
            let k = s.sweep(later, 7).await.unwrap();
            if k == 0 {
                return total;
            }
            total += k;
        }
    };
    let (sa, sb) = tokio::join!(sweep(a.clone()), sweep(b.clone()));
    assert_eq!(sa + sb, n, "each task swept once");
    for id in &ids {
        assert!(a.get(id).await.unwrap().is_none());
        assert!(b.events(id, 0, 10).await.unwrap().is_empty());
    }
}

/// A create on a node that runs the turn itself leases the first turn to that
/// node in the same write: no other node can claim it, the lease fences as a
/// claimed one does, and when it lapses any node takes the turn over.
#[tokio::test]
async fn a_create_can_lease_its_first_turn_to_its_node() {
    let Some(url) = common::url() else {
        return;
    };
    let schemas = common::Schemas::new(&url);
    let (a, b) = two_nodes(&schemas).await;
    let svc = TaskService::new(b.clone(), "scripted");
    // A task to copy: created through the service on B, then re-created on A
    // under a new id with create_claimed.
    let model = svc
        .create(&alice(), CreateTask::new(msg("model", "hi")))
        .await
        .unwrap()
        .task;
    let mut task = Arc::unwrap_or_clone(model.clone());
    task.id = taskwire_core::TaskId::new();
    let key = IdempotencyKey {
        tenant: "t1".into(),
        owner: "alice".into(),
        message_id: "leased".into(),
    };
    let events = b.events(&model.id, 0, 10).await.unwrap();
    let events: Vec<_> = events
        .into_iter()
        .map(|mut e| {
            e.task_id = task.id.clone();
            e
        })
        .collect();
    let now = Utc::now();
    let lease = Duration::from_secs(30);
    let (out, claim) = a
        .create_claimed(
            task.clone(),
            events.clone(),
            Some(key.clone()),
            "node-a",
            lease,
            now,
        )
        .await
        .unwrap();
    assert!(matches!(out, CreateOutcome::Created(_)));
    let claim = claim.expect("the first turn is leased to its node");
    assert_eq!(claim.task_id, task.id);
    assert_eq!(
        (claim.worker.as_str(), claim.epoch, claim.attempts),
        ("node-a", 1, 1)
    );
    // Nobody else can claim it; the model task (queued normally) is claimable.
    let others = b.claim("node-b", 10, lease, now).await.unwrap();
    assert_eq!(others.len(), 1);
    assert_eq!(others[0].task_id, model.id);
    assert!(b.claim("node-b", 10, lease, now).await.unwrap().is_empty());
    assert!(a.renew(&claim, lease, now).await.unwrap());
    // A retried create with the same key answers the task, with no second lease.
    let mut again = task.clone();
    again.id = taskwire_core::TaskId::new();
    let (out, none) = b
        .create_claimed(again, Vec::new(), Some(key), "node-b", lease, now)
        .await
        .unwrap();
    match out {
        CreateOutcome::Existing(t) => assert_eq!(t.id, task.id),
        CreateOutcome::Created(_) => panic!("a second task for one key"),
    }
    assert!(none.is_none());
    // The lease lapses: B reaps and claims it (epoch 2), and A's lease is fenced.
    let later = now + chrono::Duration::seconds(60);
    let reaped = b.reap(later).await.unwrap();
    assert!(reaped.contains(&task.id), "{reaped:?}");
    let taken = b.claim("node-b", 10, lease, later).await.unwrap();
    let taken: Vec<_> = taken.into_iter().filter(|c| c.task_id == task.id).collect();
    assert_eq!(taken.len(), 1);
    assert_eq!((taken[0].epoch, taken[0].attempts), (2, 2));
    assert!(!a.renew(&claim, lease, later).await.unwrap());
}

/// Puts racing on two nodes never take an owner past its quota.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_quotas_hold_under_concurrent_puts() {
    let Some(url) = common::url() else {
        return;
    };
    let schemas = common::Schemas::new(&url);
    let (a, b) = two_nodes(&schemas).await;
    let max = 5;
    let now = Utc::now();
    let mut joins = Vec::new();
    for i in 0..40 {
        let store: Arc<dyn TaskStore> = if i % 2 == 0 { a.clone() } else { b.clone() };
        joins.push(tokio::spawn(async move {
            let r = Record::new(
                RecordKind::McpSession,
                format!("s{i}"),
                "t1",
                "alice",
                json!({ "i": i }),
            );
            store.put_record(r, Some(Quota { max, now })).await.unwrap()
        }));
    }
    let mut stored = 0;
    for j in joins {
        match j.await.unwrap() {
            PutOutcome::Stored { version } => {
                assert_eq!(version, 1);
                stored += 1;
            }
            PutOutcome::OverQuota { max: m } => assert_eq!(m, max),
        }
    }
    assert_eq!(stored, max, "exactly the quota was stored");
    let counts = a.count_records().await.unwrap();
    let sessions = counts
        .iter()
        .find(|(k, _)| *k == RecordKind::McpSession)
        .map(|(_, n)| *n);
    assert_eq!(sessions, Some(max as u64));
}

/// A second task under an id that exists is refused as a duplicate (not as an
/// idempotent hit), and server errors carry the server's message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_ids_and_server_errors_are_reported() {
    let Some(url) = common::url() else {
        return;
    };
    let schemas = common::Schemas::new(&url);
    let store = schemas.open(&schemas.fresh()).await;
    let svc = TaskService::new(Arc::new(store), "scripted");
    let t = svc
        .create(&alice(), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap()
        .task;
    let err = svc
        .store()
        .create((*t).clone(), Vec::new(), None, false)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, taskwire_core::StoreError::Backend(m) if m == "duplicate task id"),
        "{err:?}"
    );
    let missing = match url.rsplit_once('/') {
        Some((base, _)) => format!("{base}/taskwire_no_such_database"),
        None => panic!("a database in {url}"),
    };
    let err = PostgresStore::open(&missing, PostgresOptions::default())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("taskwire_no_such_database"),
        "the server's message is kept: {err}"
    );
}

/// Terminates the LISTEN connections of the nodes on `schema`; returns how many.
#[expect(clippy::unwrap_used, reason = "a test helper panics on failure")]
async fn kill_listeners(url: &str, schema: &str) -> usize {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1",
            &[&format!("LISTEN \"taskwire:{schema}\"")],
        )
        .await
        .unwrap()
        .len()
}

/// When a node's LISTEN connection is killed, it reconnects and hears the other
/// node's commits again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listen_connection_reconnects() {
    let Some(url) = common::url() else {
        return;
    };
    let schemas = common::Schemas::new(&url);
    let (schema, a, b) = two_nodes_in(&schemas).await;
    let svc_a = TaskService::new(a.clone(), "scripted");
    let t = svc_a
        .create(&alice(), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap()
        .task;
    let killed = kill_listeners(&url, &schema).await;
    assert_eq!(killed, 2, "both nodes' LISTEN connections were found");
    let mut rx = b.hub().watch(&t.id);
    let heard = tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            // Commits go on until node B hears one (what is sent while it is
            // reconnecting is not heard).
            let (now, ()) = svc_a
                .mutate(&t.id, Access::System, None, |d| {
                    d.record(taskwire_core::EventKind::Step {
                        name: "s".into(),
                        phase: StepPhase::Started,
                    });
                    Ok(())
                })
                .await
                .unwrap();
            let wait = tokio::time::timeout(Duration::from_millis(300), async {
                loop {
                    if rx.borrow_and_update().last_seq >= now.last_seq {
                        return;
                    }
                    rx.changed().await.unwrap();
                }
            });
            if wait.await.is_ok() {
                return;
            }
        }
    })
    .await;
    assert!(heard.is_ok(), "node B never heard node A again");
}

/// A task created through node A runs on node B (whose claim loop polls only
/// every 30 s, so only A's notification can wake it in time), and A sees it
/// finish through B's notification.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_created_on_one_node_runs_on_another() {
    let Some(url) = common::url() else {
        return;
    };
    let schemas = common::Schemas::new(&url);
    let (a, b) = two_nodes(&schemas).await;
    let svc_a = TaskService::new(a.clone(), "scripted");
    let svc_b = TaskService::new(b.clone(), "scripted");
    let rt = taskwire_core::Runtime::start(svc_b, Arc::new(taskwire_core::ScriptedAgent::new()), {
        let mut v = taskwire_core::RuntimeConfig::default();
        v.poll_interval = Duration::from_secs(30);
        v
    });
    // Let B's claim loop find the queue empty and go to sleep first.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    let t = svc_a
        .create(&alice(), CreateTask::new(msg("e1", "hello")))
        .await
        .unwrap()
        .task;
    let done = svc_a
        .wait_until(&alice(), &t.id, Duration::from_secs(10), |t| {
            t.state.is_terminal()
        })
        .await
        .unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(done.artifacts[0].text(), "hello");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "woken by notifications ({:?})",
        started.elapsed()
    );
    rt.shutdown(Duration::from_secs(5)).await;
}

/// A TCP proxy to the test database that can be cut (every connection through it
/// dropped, nothing accepted) and restored on the same port: the database as a
/// node sees it when the network or the server fails.
struct Proxy {
    addr: std::net::SocketAddr,
    target: String,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Proxy {
    async fn start(target: &str) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free port");
        let addr = listener.local_addr().expect("bound address");
        let mut p = Proxy {
            addr,
            target: target.to_string(),
            task: None,
        };
        p.serve(listener);
        p
    }

    fn serve(&mut self, listener: tokio::net::TcpListener) {
        let target = self.target.clone();
        self.task = Some(tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    return;
                };
                let target = target.clone();
                conns.spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
            // Dropping the JoinSet (when this task is aborted) aborts every
            // forwarded connection.
        }));
    }

    /// Drops every connection and stops accepting.
    async fn cut(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
            let _ = t.await;
        }
    }

    /// Accepts again on the same port.
    async fn restore(&mut self) {
        let listener = tokio::net::TcpListener::bind(self.addr)
            .await
            .expect("the proxy's port again");
        self.serve(listener);
    }
}

/// While the database cannot be reached, requests fail with a store error (not a
/// hang); once it is back, the pool reconnects, acknowledged work is there, and
/// the LISTEN connection hears the other node again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_recover_when_the_database_returns() {
    let Some(url) = common::url() else {
        return;
    };
    let config: tokio_postgres::Config = url.parse().unwrap();
    let target = match (config.get_hosts().first(), config.get_ports().first()) {
        (Some(tokio_postgres::config::Host::Tcp(h)), port) => {
            format!("{h}:{}", port.copied().unwrap_or(5432))
        }
        _ => {
            println!("skipped: {} is not a TCP address", common::URL_VAR);
            return;
        }
    };
    let mut proxy = Proxy::start(&target).await;
    let user = config.get_user().unwrap_or("postgres");
    let db = config.get_dbname().unwrap_or("postgres");
    let via_proxy = format!("postgres://{user}@{}/{db}?connect_timeout=2", proxy.addr);
    let schemas = common::Schemas::new(&url);
    let schema = schemas.fresh();
    let options = || {
        let mut v = PostgresOptions::default();
        v.pool_size = 2;
        v.schema = Some(schema.clone());
        v.wait_timeout = Duration::from_secs(3);
        v
    };
    // Node A goes through the proxy; node B reaches the database directly.
    let a = Arc::new(PostgresStore::open(&via_proxy, options()).await.unwrap());
    let b = Arc::new(PostgresStore::open(&url, options()).await.unwrap());
    let svc_a = TaskService::new(a.clone(), "scripted");
    let t = svc_a
        .create(&alice(), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap()
        .task;

    proxy.cut().await;
    let started = std::time::Instant::now();
    let err = svc_a
        .create(&alice(), CreateTask::new(msg("m2", "hi")))
        .await
        .unwrap_err();
    assert!(
        matches!(err, taskwire_core::CoreError::Unavailable(_)),
        "{err:?}"
    );
    assert!(a.queue_depth().await.is_err());
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "failing took {:?}",
        started.elapsed()
    );

    proxy.restore().await;
    let back = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Ok(Some(got)) = a.get(&t.id).await {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .expect("node A reaches the database again");
    assert_eq!(back.id, t.id);
    // The create refused while the database was away can be retried.
    let again = svc_a
        .create(&alice(), CreateTask::new(msg("m2", "hi")))
        .await
        .unwrap();
    assert!(again.created);

    // A's LISTEN connection is back too: it hears B's commits again.
    let svc_b = TaskService::new(b.clone(), "scripted");
    let mut rx = a.hub().watch(&t.id);
    let heard = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let (now, ()) = svc_b
                .mutate(&t.id, Access::System, None, |d| {
                    d.record(taskwire_core::EventKind::Step {
                        name: "s".into(),
                        phase: StepPhase::Started,
                    });
                    Ok(())
                })
                .await
                .unwrap();
            let wait = tokio::time::timeout(Duration::from_millis(500), async {
                loop {
                    if rx.borrow_and_update().last_seq >= now.last_seq {
                        return;
                    }
                    rx.changed().await.unwrap();
                }
            });
            if wait.await.is_ok() {
                return;
            }
        }
    })
    .await;
    assert!(heard.is_ok(), "node A never heard node B again");
}

/// Group commit: creates and commits that come together go out in a few batches
/// (one statement and one transaction each), and each write in a batch is
/// answered on its own: a duplicate task id fails only itself, and commits of one
/// task racing in one batch conflict one by one and all land on retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_are_batched_and_answered_one_by_one() {
    let Some(url) = common::url() else {
        return;
    };
    let schemas = common::Schemas::new(&url);
    let store = Arc::new(schemas.open(&schemas.fresh()).await);
    let svc = TaskService::new(store.clone(), "scripted");
    let before = store.write_stats();
    let creates = (0..300).map(|i| {
        let svc = svc.clone();
        async move {
            svc.create(&alice(), CreateTask::new(msg(&format!("g{i}"), "hi")))
                .await
                .unwrap()
                .task
        }
    });
    let tasks = futures::future::join_all(creates).await;
    let after = store.write_stats();
    assert_eq!(after.writes - before.writes, 300);
    assert!(
        after.batches - before.batches <= 100,
        "300 concurrent creates should share batches: {before:?} then {after:?}"
    );
    let ids: BTreeSet<_> = tasks.iter().map(|t| t.id.clone()).collect();
    assert_eq!(ids.len(), 300);

    // A duplicate id among good creates: only it fails.
    let dup = (*tasks[0]).clone();
    let more = (0..50).map(|i| {
        let svc = svc.clone();
        async move {
            svc.create(&alice(), CreateTask::new(msg(&format!("h{i}"), "hi")))
                .await
        }
    });
    let (dup_result, more) = tokio::join!(
        store.create(dup, Vec::new(), None, false),
        futures::future::join_all(more)
    );
    assert!(
        matches!(&dup_result, Err(taskwire_core::StoreError::Backend(m)) if m == "duplicate task id"),
        "{dup_result:?}"
    );
    assert!(more.iter().all(|r| r.is_ok()), "{more:?}");

    // Twenty changes of one task at once: every one lands, one version each.
    let t = tasks[1].clone();
    let changes = (0..20).map(|i| {
        let svc = svc.clone();
        let id = t.id.clone();
        async move {
            svc.mutate(&id, Access::System, None, |d| {
                d.record(taskwire_core::EventKind::Step {
                    name: format!("s{i}"),
                    phase: StepPhase::Started,
                });
                Ok(())
            })
            .await
            .map(|_| ())
        }
    });
    let results = futures::future::join_all(changes).await;
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    let now = store.get(&t.id).await.unwrap().unwrap();
    assert_eq!(now.version, t.version + 20);
    let events = store.events(&t.id, t.last_seq, 100).await.unwrap();
    assert_eq!(
        events.len(),
        20,
        "one event per change, none lost or doubled"
    );
}

/// A commit made while node B's LISTEN connection is down is not heard by B; once
/// B reconnects it wakes every subscriber, which re-reads its log at once rather
/// than on its 5 s fallback timer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribers_catch_up_at_once_after_a_listen_reconnect() {
    let Some(url) = common::url() else {
        return;
    };
    let schemas = common::Schemas::new(&url);
    let (schema, a, b) = two_nodes_in(&schemas).await;
    let svc_a = TaskService::new(a.clone(), "scripted");
    let svc_b = TaskService::new(b.clone(), "scripted");
    let t = svc_a
        .create(&alice(), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap()
        .task;
    let mut events = svc_b
        .subscribe(Access::System, &t.id, t.last_seq)
        .await
        .unwrap();
    // Follow the stream from now on, so that it has read the log and waits for a
    // wake-up when the commit lands.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(e) = events.next().await {
            if tx.send(e).is_err() {
                return;
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let killed = kill_listeners(&url, &schema).await;
    assert_eq!(killed, 2);
    // One commit while B reconnects (its listener waits 100 ms before trying).
    let (now, ()) = svc_a
        .mutate(&t.id, Access::System, None, |d| {
            d.record(taskwire_core::EventKind::Step {
                name: "while-away".into(),
                phase: StepPhase::Started,
            });
            Ok(())
        })
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let got = tokio::time::timeout(Duration::from_secs(3), rx.recv())
        .await
        .expect("the subscriber caught up well before its 5 s fallback")
        .expect("an event")
        .unwrap();
    assert_eq!(got.seq, now.last_seq);
    assert!(started.elapsed() < Duration::from_secs(3));
}

/// The test database's `host:port`, for a proxy in front of it (`None`, saying
/// so, when it is not a TCP address).
fn tcp_target(url: &str) -> Option<String> {
    let config: tokio_postgres::Config = url.parse().expect("the test database's address");
    match (config.get_hosts().first(), config.get_ports().first()) {
        (Some(tokio_postgres::config::Host::Tcp(h)), port) => {
            Some(format!("{h}:{}", port.copied().unwrap_or(5432)))
        }
        _ => {
            println!("skipped: {} is not a TCP address", common::URL_VAR);
            None
        }
    }
}

/// The address of the test database through `proxy`.
fn url_via(url: &str, proxy: &PartitionProxy) -> String {
    let config: tokio_postgres::Config = url.parse().expect("the test database's address");
    let user = config.get_user().unwrap_or("postgres");
    let db = config.get_dbname().unwrap_or("postgres");
    format!("postgres://{user}@{}/{db}", proxy.addr())
}

/// Two nodes on one fresh schema, `a` reaching the database through a
/// partition proxy (bounded by `a_timeout`), `b` directly (10 s).
struct CutOffPair {
    url: String,
    proxy: PartitionProxy,
    schema: String,
    a: Arc<PostgresStore>,
    b: Arc<PostgresStore>,
    /// Drops the schema at the end.
    _schemas: common::Schemas,
}

/// [`CutOffPair`] on the test database (None: no TCP database to proxy).
async fn cut_off_pair(a_timeout: Duration) -> Option<CutOffPair> {
    let url = common::url()?;
    let target = tcp_target(&url)?;
    let proxy = PartitionProxy::start(&target).await;
    let schemas = common::Schemas::new(&url);
    let schema = schemas.fresh();
    let options = |timeout: Duration| {
        let mut v = PostgresOptions::default();
        v.pool_size = 4;
        v.schema = Some(schema.clone());
        v.timeout = timeout;
        v
    };
    let a = PostgresStore::open(&url_via(&url, &proxy), options(a_timeout))
        .await
        .expect("node a");
    let b = PostgresStore::open(&url, options(Duration::from_secs(10)))
        .await
        .expect("node b");
    Some(CutOffPair {
        url,
        proxy,
        schema,
        a: Arc::new(a),
        b: Arc::new(b),
        _schemas: schemas,
    })
}

/// Whether `r` is the store's "did not answer" error.
fn unavailable<T: std::fmt::Debug>(r: &Result<T, taskwire_core::StoreError>) -> bool {
    matches!(r, Err(taskwire_core::StoreError::Unavailable(_)))
}

/// A node whose traffic to the database is silently dropped answers every
/// request within its timeout (plus scheduling slack) with `Unavailable`:
/// creates and commits (the write batcher), reads, claims, renewals and the
/// readiness ping, on the connections it had and on new ones (which the
/// partition accepts and never answers); then with the connections reset, at
/// once; and once healed it serves again within 2 s, and every create refused
/// meanwhile, retried with its idempotency key, makes exactly one task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_from_the_database_answers_within_its_timeout() {
    const BOUND: Duration = Duration::from_millis(1000);
    const SLACK: Duration = Duration::from_millis(700);
    let Some(CutOffPair {
        url,
        proxy,
        schema,
        a,
        b,
        _schemas,
    }) = cut_off_pair(BOUND).await
    else {
        return;
    };
    let svc_a = TaskService::new(a.clone(), "scripted");
    let svc_b = TaskService::new(b.clone(), "scripted");
    let before = svc_a
        .create(&alice(), CreateTask::new(msg("before", "hi")))
        .await
        .unwrap()
        .task;
    let claim = a
        .claim("w", 1, Duration::from_secs(30), Utc::now())
        .await
        .unwrap()
        .pop()
        .expect("the task is claimable");

    // Every kind of request, several at once, twice: the second round finds
    // the connections of the first closed and must open new ones.
    proxy.set(Mode::Silent);
    let mut refused = Vec::new();
    let mut slowest = Duration::ZERO;
    for round in 0..2 {
        let mut calls = tokio::task::JoinSet::new();
        for i in 0..6 {
            let svc = svc_a.clone();
            let id = format!("silent-{round}-{i}");
            calls.spawn(async move {
                let t = std::time::Instant::now();
                let r = svc.create(&alice(), CreateTask::new(msg(&id, "hi"))).await;
                let ok = matches!(r, Err(taskwire_core::CoreError::Unavailable(_)));
                (
                    format!("create {id}: {:?}", r.err()),
                    ok,
                    t.elapsed(),
                    Some(id),
                )
            });
        }
        let calls_of =
            |name: &'static str,
             f: std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send>>| async move {
                let t = std::time::Instant::now();
                let ok = f.await;
                (name.to_string(), ok, t.elapsed(), None)
            };
        let (a1, a2, a3, a4, a5, a6) = (
            a.clone(),
            a.clone(),
            a.clone(),
            a.clone(),
            a.clone(),
            a.clone(),
        );
        let (id1, id2, c1, c2) = (
            before.id.clone(),
            before.id.clone(),
            claim.clone(),
            claim.clone(),
        );
        calls.spawn(calls_of(
            "get",
            Box::pin(async move { unavailable(&a1.get(&id1).await) }),
        ));
        calls.spawn(calls_of(
            "events",
            Box::pin(async move { unavailable(&a2.events(&id2, 0, 10).await) }),
        ));
        calls.spawn(calls_of(
            "claim",
            Box::pin(async move {
                unavailable(&a3.claim("w2", 4, Duration::from_secs(30), Utc::now()).await)
            }),
        ));
        calls.spawn(calls_of(
            "renew",
            Box::pin(async move {
                unavailable(&a4.renew(&c1, Duration::from_secs(30), Utc::now()).await)
            }),
        ));
        calls.spawn(calls_of(
            "release",
            Box::pin(async move { unavailable(&a5.release(&c2).await) }),
        ));
        calls.spawn(calls_of(
            "ping",
            Box::pin(async move { unavailable(&a6.ping().await) }),
        ));
        while let Some(r) = calls.join_next().await {
            let (what, ok, took, id) = r.unwrap();
            assert!(ok, "round {round}: {what} did not answer Unavailable");
            assert!(took <= BOUND + SLACK, "round {round}: {what} took {took:?}");
            slowest = slowest.max(took);
            refused.extend(id);
        }
    }
    println!("silent partition: slowest answer {slowest:?} (bound {BOUND:?})");
    // Node B, which reaches the database, serves meanwhile.
    svc_b
        .create(&alice(), CreateTask::new(msg("on-b", "hi")))
        .await
        .unwrap();

    // Connections reset: requests fail at once, still as Unavailable.
    proxy.set(Mode::Reset);
    tokio::time::sleep(Duration::from_millis(100)).await;
    for i in 0..3 {
        let id = format!("reset-{i}");
        let t = std::time::Instant::now();
        let r = svc_a
            .create(&alice(), CreateTask::new(msg(&id, "hi")))
            .await;
        assert!(
            matches!(r, Err(taskwire_core::CoreError::Unavailable(_))),
            "{r:?}"
        );
        assert!(t.elapsed() <= BOUND + SLACK, "took {:?}", t.elapsed());
        refused.push(id);
    }

    // Healed: A serves again within 2 s.
    proxy.set(Mode::Forward);
    let healed = std::time::Instant::now();
    loop {
        if a.get(&before.id).await.is_ok() {
            break;
        }
        assert!(
            healed.elapsed() < Duration::from_secs(2),
            "node A did not recover within 2 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("recovered {:?} after the heal", healed.elapsed());
    // Every refused create, retried with its message id, is one task.
    for id in &refused {
        svc_a
            .create(&alice(), CreateTask::new(msg(id, "hi")))
            .await
            .unwrap_or_else(|e| panic!("retrying {id}: {e}"));
    }
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let n: i64 = client
        .query_one(&format!("SELECT count(*) FROM {schema}.tasks"), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 2 + refused.len() as i64, "one task per message id");
}

/// Counts the turns run per task (the scripted agent does the work).
struct CountingAgent {
    inner: taskwire_core::ScriptedAgent,
    runs: std::sync::Mutex<std::collections::HashMap<String, u32>>,
}

#[taskwire_core::async_trait]
impl taskwire_core::Agent for CountingAgent {
    fn info(&self) -> taskwire_core::AgentInfo {
        self.inner.info()
    }

    async fn run_turn(
        &self,
        ctx: &taskwire_core::TurnContext,
    ) -> Result<taskwire_core::TurnOutcome, taskwire_core::AgentError> {
        *self
            .runs
            .lock()
            .expect("the run counts")
            .entry(ctx.task().id.as_str().to_string())
            .or_default() += 1;
        self.inner.run_turn(ctx).await
    }
}

/// A create whose answer comes after its first turn's lease lapsed (the
/// database was cut off from node A while the create was on its way, and the
/// partition healed before A's timeout) runs its first turn once: A does not
/// run it itself, it goes back to the queue, and one node runs it. Before, A
/// ran it at once while B's reaper re-queued the lapsed lease and B ran it too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_answered_after_its_lease_lapsed_runs_its_first_turn_once() {
    let Some(CutOffPair {
        proxy,
        a,
        b,
        _schemas,
        ..
    }) = cut_off_pair(Duration::from_secs(10)).await
    else {
        return;
    };
    let agent = Arc::new(CountingAgent {
        inner: taskwire_core::ScriptedAgent::new(),
        runs: Default::default(),
    });
    let config = || {
        let mut v = taskwire_core::RuntimeConfig::default();
        v.lease = Duration::from_millis(1500);
        v.reap_interval = Duration::from_millis(100);
        v.poll_interval = Duration::from_millis(100);
        v
    };
    let svc_a = TaskService::new(a.clone(), "scripted");
    let svc_b = TaskService::new(b.clone(), "scripted");
    let rt_a = taskwire_core::Runtime::start(svc_a.clone(), agent.clone(), config());
    let rt_b = taskwire_core::Runtime::start(svc_b.clone(), agent.clone(), config());
    // Warm A's pool, so that the create below goes out on an open connection.
    for i in 0..4 {
        let t = svc_a
            .create(
                &alice(),
                CreateTask::new(msg(&format!("warm-{i}"), "sleep 10")),
            )
            .await
            .unwrap()
            .task;
        svc_a
            .wait_until(&alice(), &t.id, Duration::from_secs(10), |t| {
                t.state.is_terminal()
            })
            .await
            .unwrap();
    }

    // The create goes out into a partition that lasts longer than the lease.
    proxy.set(Mode::Silent);
    let create = tokio::spawn({
        let svc = svc_a.clone();
        async move {
            svc.create(&alice(), CreateTask::new(msg("late", "sleep 500\nlate")))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(2500)).await;
    proxy.set(Mode::Forward);
    let t = create
        .await
        .unwrap()
        .expect("the create is answered after the heal")
        .task;
    let done = svc_b
        .wait_until(&alice(), &t.id, Duration::from_secs(20), |t| {
            t.state.is_terminal()
        })
        .await
        .unwrap();
    assert_eq!(done.state, TaskState::Completed, "{done:?}");
    // Long enough for a second run to start if one were coming.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let runs = agent
        .runs
        .lock()
        .unwrap()
        .get(t.id.as_str())
        .copied()
        .unwrap_or(0);
    println!("first turns of the late create: {runs}");
    assert_eq!(runs, 1, "the first turn ran {runs} times");
    rt_a.shutdown(Duration::from_secs(5)).await;
    rt_b.shutdown(Duration::from_secs(5)).await;
}
