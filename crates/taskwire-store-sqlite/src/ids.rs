//! Task id → row id, held in memory, and the one scan of `tasks` at open that
//! builds every in-memory index of the rows.
//!
//! Task ids are random, so a SQL index of them (`tasks_id`, schema 1 to 8) took a
//! page write at a random place for every create: with the idempotency table gone,
//! the last such page of a create. The map lives here instead, shared by the
//! writer (which applies each transaction's changes once it has committed) and the
//! readers (a `get` or an event read finds the row id here, then reads by row id).
//! About 40 bytes per task.

use std::collections::HashMap;
use std::sync::RwLock;

use rusqlite::Connection;
use taskwire_core::{TaskId, TaskState};

use crate::idem::IdemIndex;
use crate::listing::{id_number, Change, IdNum, Listings};

/// The map.
#[derive(Default)]
pub(crate) struct TaskIds {
    map: RwLock<HashMap<IdNum, i64>>,
}

impl TaskIds {
    /// The row id of a task, if it is stored.
    pub(crate) fn get(&self, id: &TaskId) -> Option<i64> {
        self.get_number(id_number(id.as_str())?)
    }

    /// The row id of a task by its id as a number.
    pub(crate) fn get_number(&self, n: IdNum) -> Option<i64> {
        self.map
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&n)
            .copied()
    }

    /// Applies committed changes in order: `Some(tid)` stores, `None` forgets.
    pub(crate) fn apply(&self, changes: impl IntoIterator<Item = (IdNum, Option<i64>)>) {
        let mut map = self.map.write().unwrap_or_else(|p| p.into_inner());
        for (n, tid) in changes {
            match tid {
                Some(tid) => map.insert(n, tid),
                None => map.remove(&n),
            };
        }
    }
}

/// Everything built from the `tasks` table at open.
pub(crate) struct Loaded {
    pub(crate) ids: TaskIds,
    pub(crate) listings: Listings,
    pub(crate) idem: IdemIndex,
}

const SCAN: &str = "SELECT tid, id, tenant, owner, context_id, state, created_us, changed_us, \
     updated_ns, idem_tenant, idem_owner, idem_message_id FROM tasks";

/// Reads every task row once and builds the id map, the owners' listings and the
/// idempotency index from it.
pub(crate) fn load(conn: &Connection) -> Result<Loaded, rusqlite::Error> {
    let listings = Listings::default();
    let mut idem = IdemIndex::empty();
    let mut ids = HashMap::new();
    let mut stmt = conn.prepare(SCAN)?;
    let mut rows = stmt.query([])?;
    let mut changes = Vec::new();
    while let Some(r) = rows.next()? {
        let tid: i64 = r.get(0)?;
        let id: String = r.get(1)?;
        let state: String = r.get(5)?;
        let (Some(n), Some(state)) = (id_number(&id), TaskState::parse(&state)) else {
            tracing::warn!(task = %id, "sqlite: a stored task has a malformed id or state; it is skipped");
            continue;
        };
        ids.insert(n, tid);
        let key: (Option<String>, Option<String>, Option<String>) =
            (r.get(9)?, r.get(10)?, r.get(11)?);
        if let (Some(t), Some(o), Some(m)) = key {
            idem.insert_loaded(&t, &o, &m, tid);
        }
        let context: String = r.get(4)?;
        changes.push(Change::loaded(
            r.get(2)?,
            r.get(3)?,
            r.get(6)?,
            n,
            tid,
            r.get(7)?,
            r.get(8)?,
            &context,
            state,
        ));
        if changes.len() >= 4096 {
            listings.apply(changes.drain(..));
        }
    }
    listings.apply(changes);
    Ok(Loaded {
        ids: TaskIds {
            map: RwLock::new(ids),
        },
        listings,
        idem,
    })
}
