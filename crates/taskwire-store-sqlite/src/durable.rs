//! What readers may see: nothing before it is durable.
//!
//! With `synchronous=full` the writer commits with SQLite's sync off and the
//! syncer thread syncs the write-ahead log afterwards (see [`crate::writer`]). A
//! committed transaction is visible to the read connections, to the in-memory
//! indexes and to the snapshot cache at once, before that sync. A read must
//! never show it then: after a power loss it would be gone, and a caller that saw a
//! task completed would find it submitted again (and run twice).
//!
//! So every transaction whose requests need the sync gets a *generation* from
//! [`Durability::next`] before it commits, and the syncer raises the durable
//! generation ([`Durability::synced`]) once the log is synced, before it
//! publishes anything. A read waits until what it may have seen is durable:
//!
//! - a snapshot from the cache carries the generation of the transaction that put
//!   it, and is answered once that generation is durable;
//! - a read of the database or of the in-memory indexes waits, after it read,
//!   until every generation taken so far ([`Durability::latest`]) is durable: the
//!   writer takes the generation before the commit becomes visible, so whatever
//!   the read saw is covered.
//!
//! When nothing waits for a sync (the common case when reads and writes are not
//! about the same moment) the check is one atomic load. Without the syncer
//! (`synchronous=normal`, or SQLite syncing at commit) no generation is taken and
//! nothing waits.

use std::sync::atomic::{AtomicU64, Ordering};

use taskwire_core::StoreError;
use tokio::sync::watch;

/// The durable generation and the highest generation whose sync failed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Synced {
    durable: u64,
    failed: u64,
}

/// The generations of committed and of synced transactions.
pub(crate) struct Durability {
    /// The last generation handed to a transaction (0: none yet).
    committed: AtomicU64,
    /// The highest durable generation (mirrors `state.durable` for the fast path).
    durable: AtomicU64,
    state: watch::Sender<Synced>,
    /// Test hook: holds the syncer before it syncs.
    #[cfg(test)]
    pub(crate) hold: hold::Hold,
}

impl Durability {
    pub(crate) fn new() -> Self {
        Self {
            committed: AtomicU64::new(0),
            durable: AtomicU64::new(0),
            state: watch::Sender::new(Synced::default()),
            #[cfg(test)]
            hold: hold::Hold::default(),
        }
    }

    /// The generation of a transaction about to commit whose changes must be
    /// synced before anyone sees them. Take it before the commit is visible.
    pub(crate) fn next(&self) -> u64 {
        self.committed
            .fetch_add(1, Ordering::SeqCst)
            .saturating_add(1)
    }

    /// Every generation up to `through` is durable.
    pub(crate) fn synced(&self, through: u64) {
        self.durable.fetch_max(through, Ordering::SeqCst);
        self.state.send_if_modified(|s| {
            if through > s.durable {
                s.durable = through;
                true
            } else {
                false
            }
        });
    }

    /// The sync of the generations up to `through` failed: reads waiting for
    /// them fail rather than wait for a sync that may never cover them.
    pub(crate) fn failed(&self, through: u64) {
        self.state.send_if_modified(|s| {
            if through > s.failed {
                s.failed = through;
                true
            } else {
                false
            }
        });
    }

    /// Whether generation `generation` is durable: nothing to wait for.
    #[inline]
    pub(crate) fn is_durable(&self, generation: u64) -> bool {
        self.durable.load(Ordering::SeqCst) >= generation
    }

    /// The generation a read that has just read must wait for: the last one taken.
    #[inline]
    pub(crate) fn latest(&self) -> u64 {
        self.committed.load(Ordering::SeqCst)
    }

    /// Waits until generation `generation` is durable. Callers check
    /// [`Self::is_durable`] first and box this future, so that a read that has
    /// nothing to wait for (nearly all) neither builds nor carries it.
    pub(crate) async fn wait(&self, generation: u64) -> Result<(), StoreError> {
        let mut rx = self.state.subscribe();
        loop {
            let s = *rx.borrow_and_update();
            if s.durable >= generation {
                return Ok(());
            }
            if s.failed >= generation {
                return Err(StoreError::Backend(
                    "syncing the sqlite write-ahead log failed".into(),
                ));
            }
            if rx.changed().await.is_err() {
                return Err(StoreError::Backend("the sqlite store is closed".into()));
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod hold {
    //! A switch that holds the syncer before it syncs, so that a test can look at
    //! what readers see of a batch that is committed but not yet durable.

    use std::sync::{Condvar, Mutex};
    use std::time::Duration;

    #[derive(Default)]
    struct State {
        on: bool,
        /// Committed batches the syncer holds.
        waiting: usize,
    }

    /// The switch.
    #[derive(Default)]
    pub(crate) struct Hold {
        state: Mutex<State>,
        cv: Condvar,
    }

    impl Hold {
        /// Holds (or lets go of) the syncs from now on.
        pub(crate) fn set(&self, on: bool) {
            let mut s = self.state.lock().unwrap();
            s.on = on;
            self.cv.notify_all();
        }

        /// Committed batches held so far.
        pub(crate) fn waiting(&self) -> usize {
            self.state.lock().unwrap().waiting
        }

        /// Called by the syncer before a sync: while held, takes in (with `more`)
        /// further committed batches and waits.
        pub(crate) fn pass(&self, mut more: impl FnMut() -> usize) {
            let mut s = self.state.lock().unwrap();
            while s.on {
                s.waiting = more();
                s = self.cv.wait_timeout(s, Duration::from_millis(2)).unwrap().0;
            }
            s.waiting = 0;
        }
    }
}
