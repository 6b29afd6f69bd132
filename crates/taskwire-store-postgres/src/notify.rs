//! Cross-node wake-ups over LISTEN/NOTIFY.
//!
//! A node publishes its own commits to its hub at once. After the writing
//! statement has committed, it also queues one line per change for the
//! [`Notifier`], which sends everything queued meanwhile as `pg_notify` calls of
//! one statement of its own: never inside the writing transaction (a NOTIFY there
//! would take PostgreSQL's global notify lock at every commit), and one NOTIFY
//! transaction for many writes under load.
//!
//! Every other node keeps one connection that LISTENs on the channel and publishes
//! what it hears to its own hub. A notification is only a wake-up: the rows are the
//! truth, and a subscriber re-reads the event log from its last sequence number
//! after every wake-up (and every few seconds without one), so a dropped
//! notification or a reconnect of the LISTEN connection costs latency, never an
//! event.
//!
//! Both are bounded by the store's timeout: a notify statement that does not
//! answer in time is given up (its connection closed); the LISTEN connection
//! runs a `SELECT 1` whenever it has heard nothing for a timeout, and is
//! replaced when that does not answer within the timeout (a silently dropped
//! connection hears nothing, and would otherwise go unnoticed until TCP
//! keepalive gives up on it).
//!
//! Payload: a header line `v1 <node>`, then one line per change,
//! `<task id> <last seq> <state> <1 if work was queued, else 0>`, or `*` when work
//! became claimable again (a release or a reap).

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Pool;
use futures::StreamExt;
use taskwire_core::store::TaskWake;
use taskwire_core::{TaskId, TaskState, WakeHub};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_postgres::{AsyncMessage, NoTls};

use crate::error::PostgresError;
use crate::schema::quoted;

/// The largest payload sent (PostgreSQL's limit is 8000 bytes).
const MAX_PAYLOAD: usize = 7900;
/// Most payloads sent in one statement.
const MAX_PAYLOADS: usize = 64;

/// The line of a change of one task.
pub(crate) fn task_line(id: &TaskId, wake: TaskWake, queued: bool) -> String {
    format!(
        "{} {} {} {}",
        id.as_str(),
        wake.last_seq,
        wake.state.as_str(),
        u8::from(queued)
    )
}

/// The line that says work became claimable.
pub(crate) const WORK_LINE: &str = "*";

/// Queues lines for the notifier task, which sends them after the writes.
#[derive(Debug)]
pub(crate) struct Notifier {
    tx: mpsc::UnboundedSender<String>,
    task: JoinHandle<()>,
}

impl Notifier {
    /// Starts the notifier task on `pool`, sending on `channel` as `node`.
    /// Each send is bounded by `timeout`.
    pub(crate) fn start(pool: Pool, channel: String, node: String, timeout: Duration) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(send_loop(pool, channel, node, rx, timeout));
        Self { tx, task }
    }

    /// Queues one line (the write it reports has committed).
    pub(crate) fn send(&self, line: String) {
        let _ = self.tx.send(line);
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn send_loop(
    pool: Pool,
    channel: String,
    node: String,
    mut rx: mpsc::UnboundedReceiver<String>,
    timeout: Duration,
) {
    let header = format!("v1 {node}");
    while let Some(first) = rx.recv().await {
        let mut payloads = Vec::new();
        let mut cur = header.clone();
        let mut next = Some(first);
        while let Some(line) = next.take() {
            if cur.len() + 1 + line.len() > MAX_PAYLOAD && cur.len() > header.len() {
                payloads.push(std::mem::replace(&mut cur, header.clone()));
            }
            cur.push('\n');
            cur.push_str(&line);
            if payloads.len() + 1 >= MAX_PAYLOADS {
                break;
            }
            next = rx.try_recv().ok();
        }
        payloads.push(cur);
        let deadline = tokio::time::Instant::now() + timeout;
        let sent = match tokio::time::timeout_at(deadline, pool.get()).await {
            Ok(Ok(conn)) => {
                let answer = tokio::time::timeout_at(deadline, async {
                    let stmt = conn
                        .prepare_cached("SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p")
                        .await?;
                    conn.execute(&stmt, &[&channel, &payloads]).await
                })
                .await;
                match answer {
                    Ok(r) => r.map(|_| ()).map_err(|e| e.to_string()),
                    Err(_) => {
                        drop(deadpool_postgres::Object::take(conn));
                        Err("no answer in time".to_string())
                    }
                }
            }
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("no pooled connection in time".to_string()),
        };
        if let Err(e) = sent {
            // Other nodes catch up by re-reading; only their latency suffers.
            tracing::warn!(error = %e, "postgres store: sending wake-ups failed");
        }
    }
}

/// Applies one payload heard on the channel to the hub; returns whether it came
/// from another node.
pub(crate) fn apply(hub: &WakeHub, me: &str, payload: &str) -> bool {
    let mut lines = payload.lines();
    let Some(header) = lines.next() else {
        return false;
    };
    let Some(node) = header.strip_prefix("v1 ") else {
        return false;
    };
    if node == me {
        return false;
    }
    let mut work = false;
    for line in lines {
        if line == WORK_LINE {
            work = true;
            continue;
        }
        let mut parts = line.split(' ');
        let (Some(id), Some(seq), Some(state), Some(q)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (Ok(id), Ok(last_seq), Some(state)) = (
            TaskId::parse(id),
            seq.parse::<u64>(),
            TaskState::parse(state),
        ) else {
            continue;
        };
        hub.publish(&id, TaskWake { last_seq, state });
        work |= q == "1";
    }
    if work {
        hub.work_queued();
    }
    true
}

/// The LISTEN side: one connection of its own, reconnected when it drops.
#[derive(Debug)]
pub(crate) struct Listener {
    task: JoinHandle<()>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What a LISTEN connection hears, and the task that drives the connection
/// (aborted when the connection is given up, which closes its socket).
struct Heard {
    rx: mpsc::UnboundedReceiver<String>,
    driver: JoinHandle<()>,
}

impl Drop for Heard {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// [`connect_unbounded`] within `timeout`.
async fn connect(
    config: &tokio_postgres::Config,
    channel: &str,
    timeout: Duration,
) -> Result<(tokio_postgres::Client, Heard), PostgresError> {
    match tokio::time::timeout(timeout, connect_unbounded(config, channel)).await {
        Ok(r) => r,
        Err(_) => Err(PostgresError::Pool(format!(
            "the LISTEN connection did not answer within {} ms",
            timeout.as_millis()
        ))),
    }
}

async fn connect_unbounded(
    config: &tokio_postgres::Config,
    channel: &str,
) -> Result<(tokio_postgres::Client, Heard), PostgresError> {
    let (client, mut conn) = config.connect(NoTls).await?;
    let (tx, rx) = mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| conn.poll_message(cx));
        while let Some(m) = messages.next().await {
            match m {
                Ok(AsyncMessage::Notification(n)) => {
                    if tx.send(n.payload().to_string()).is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "postgres store: the LISTEN connection failed");
                    return;
                }
            }
        }
    });
    let heard = Heard { rx, driver };
    client
        .batch_execute(&format!("LISTEN {}", quoted(channel)))
        .await?;
    Ok((client, heard))
}

impl Listener {
    /// Connects and LISTENs on `channel` (returning once it listens), then keeps
    /// publishing what other nodes send to `hub`.
    pub(crate) async fn start(
        config: tokio_postgres::Config,
        channel: String,
        node: String,
        hub: Arc<WakeHub>,
        timeout: Duration,
    ) -> Result<Self, PostgresError> {
        let first = connect(&config, &channel, timeout).await?;
        let task = tokio::spawn(async move {
            let mut current = Some(first);
            let mut backoff = Duration::from_millis(100);
            loop {
                let (client, mut heard) = match current.take() {
                    Some(c) => c,
                    None => match connect(&config, &channel, timeout).await {
                        Ok(c) => {
                            backoff = Duration::from_millis(100);
                            // What was sent while we were away is not heard:
                            // every subscriber re-reads its log and every
                            // claimer looks at the queue again, now.
                            hub.wake_all();
                            c
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "postgres store: LISTEN reconnect failed");
                            tokio::time::sleep(backoff).await;
                            backoff = (backoff * 2).min(Duration::from_secs(5));
                            continue;
                        }
                    },
                };
                // Until the connection fails, or is found dead: quiet for a
                // timeout, then no answer to a SELECT 1 within another.
                loop {
                    match tokio::time::timeout(timeout, heard.rx.recv()).await {
                        Ok(Some(payload)) => {
                            apply(&hub, &node, &payload);
                        }
                        Ok(None) => break,
                        Err(_) => {
                            let alive =
                                tokio::time::timeout(timeout, client.simple_query("SELECT 1"))
                                    .await
                                    .is_ok_and(|r| r.is_ok());
                            if !alive {
                                tracing::warn!(
                                    "postgres store: the LISTEN connection did not answer; reconnecting"
                                );
                                break;
                            }
                        }
                    }
                }
                drop(client);
                drop(heard);
                tokio::time::sleep(backoff).await;
            }
        });
        Ok(Self { task })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wake(last_seq: u64, state: TaskState) -> TaskWake {
        TaskWake { last_seq, state }
    }

    /// Lines of another node reach the hub; a node's own lines, lines of an
    /// unknown format and malformed lines are ignored; work lines wake claimers.
    #[tokio::test]
    async fn payloads_are_applied_to_the_hub() {
        let hub = WakeHub::new();
        let (t1, t2) = (TaskId::new(), TaskId::new());
        let mut rx1 = hub.watch(&t1);
        let mut rx2 = hub.watch(&t2);
        let payload = format!(
            "v1 other\n{}\nnonsense line\n{} 7 bogus 0\n{}",
            task_line(&t1, wake(3, TaskState::Working), false),
            t2.as_str(),
            task_line(&t2, wake(5, TaskState::Completed), false),
        );
        assert!(apply(&hub, "me", &payload));
        assert!(rx1.has_changed().unwrap());
        assert_eq!(*rx1.borrow_and_update(), wake(3, TaskState::Working));
        assert_eq!(*rx2.borrow_and_update(), wake(5, TaskState::Completed));

        // Our own notifications were published when we committed.
        let mine = format!(
            "v1 me\n{}",
            task_line(&t1, wake(9, TaskState::Working), true)
        );
        assert!(!apply(&hub, "me", &mine));
        assert!(!rx1.has_changed().unwrap());
        assert!(!apply(
            &hub,
            "me",
            &format!(
                "v2 other\n{}",
                task_line(&t1, wake(9, TaskState::Working), false)
            )
        ));
        assert!(!rx1.has_changed().unwrap());

        for line in [
            WORK_LINE.to_string(),
            task_line(&t1, wake(10, TaskState::Working), true),
        ] {
            let notified = hub.work_notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            assert!(apply(&hub, "me", &format!("v1 other\n{line}")));
            tokio::time::timeout(Duration::from_millis(100), notified)
                .await
                .expect("work queued is signalled");
        }
    }
}
