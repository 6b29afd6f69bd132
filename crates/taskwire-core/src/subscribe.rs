//! Log subscription: catch up from the store, then follow live wake-ups, re-reading
//! the store each time, so a subscriber never sees a gap or a duplicate.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::event::Event;
use crate::ids::TaskId;
use crate::store::{TaskStore, TaskWake};

/// A stream of events from a task's log.
pub type EventStream =
    std::pin::Pin<Box<dyn futures::Stream<Item = crate::error::Result<Event>> + Send>>;

/// How many events one store read returns at most.
const PAGE: usize = 256;
/// How long a subscriber waits for a wake-up before re-reading anyway.
const POLL_FALLBACK: Duration = Duration::from_secs(5);

struct State {
    store: Arc<dyn TaskStore>,
    id: TaskId,
    after: u64,
    rx: watch::Receiver<TaskWake>,
    buf: VecDeque<Event>,
    terminal_seen: bool,
    checked_existing: bool,
    failed: bool,
}

pub(crate) fn stream(
    store: Arc<dyn TaskStore>,
    id: TaskId,
    after_seq: u64,
    rx: watch::Receiver<TaskWake>,
    ended: Option<u64>,
) -> EventStream {
    // `ended`: the task was terminal at subscription, with this last sequence
    // number; `None`: it was not (read after `rx` began watching, so whatever
    // ends it later wakes `rx`).
    let st = State {
        store,
        id,
        after: after_seq,
        rx,
        buf: VecDeque::new(),
        terminal_seen: matches!(ended, Some(last) if last <= after_seq),
        checked_existing: ended.is_none(),
        failed: false,
    };
    Box::pin(futures::stream::unfold(st, |mut st| async move {
        loop {
            if st.failed {
                return None;
            }
            if let Some(e) = st.buf.pop_front() {
                st.after = e.seq;
                if e.kind.terminal_state().is_some() {
                    st.terminal_seen = true;
                }
                return Some((Ok(e), st));
            }
            // The terminal status is the last event of a task: once it was read,
            // there is nothing more to wait or read for.
            if st.terminal_seen {
                return None;
            }
            // Mark the current wake value as seen before reading, so that a commit
            // landing after the read still wakes us.
            st.rx.borrow_and_update();
            match st.store.events(&st.id, st.after, PAGE).await {
                Err(e) => {
                    st.failed = true;
                    return Some((Err(e.into()), st));
                }
                Ok(v) if !v.is_empty() => {
                    st.buf.extend(v);
                    continue;
                }
                Ok(_) => {}
            }
            if st.terminal_seen {
                return None;
            }
            if !st.checked_existing {
                // Subscribing to a task that already ended, after its last event.
                st.checked_existing = true;
                match st.store.get(&st.id).await {
                    Ok(Some(t)) if t.state.is_terminal() && t.last_seq <= st.after => return None,
                    Ok(None) => return None,
                    _ => {}
                }
            }
            match tokio::time::timeout(POLL_FALLBACK, st.rx.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => tokio::time::sleep(Duration::from_millis(100)).await,
                Err(_) => {
                    // Nothing for a while: make sure the task still exists.
                    match st.store.get(&st.id).await {
                        Ok(Some(t)) if t.state.is_terminal() && t.last_seq <= st.after => {
                            return None
                        }
                        Ok(Some(_)) => {}
                        Ok(None) => return None,
                        Err(e) => {
                            st.failed = true;
                            return Some((Err(e.into()), st));
                        }
                    }
                }
            }
        }
    }))
}
