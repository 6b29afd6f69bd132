//! The owners' task listings, held in memory.
//!
//! Listing an owner's tasks newest first (by creation time, or by the time of the
//! last state change) used to go through two SQL indexes keyed by (tenant, owner,
//! time, id). Each owner's newest entries sit at a place of their own in those
//! trees, so with many owners active every create and every state change dirtied a
//! page per index, and with group commit that was the largest share of the pages
//! written: with 256 callers, each its own owner, about 90 of the ~205 pages of a
//! typical commit. The trees now live here instead, on the heap, built from the
//! `tasks` table when the store opens and kept by the writer thread, which applies
//! each transaction's changes once the transaction has committed.
//!
//! A reader walks an owner's entries under the read lock (filters, `total` and the
//! page's row ids), then reads the page's rows by row id and checks each against the
//! query once more, so a task that changed between the two steps is left out rather
//! than shown with a state its filter excludes. The rows stay the source of truth:
//! nothing here is ever written to disk.
//!
//! Cost: about 190 bytes per task (measured by the runtime bench), and a scan of the `tasks` table at open.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::RwLock;

use taskwire_core::store::{ListOrder, ListQuery};
#[cfg(test)]
use taskwire_core::TaskId;
use taskwire_core::TaskState;

use crate::row::{ns, TaskRow};

/// A task id as a number (its high and low 64 bits: a `u128` would align the map
/// keys to 16 bytes): 32 lowercase hex digits, so numeric order is the order of the
/// id strings.
pub(crate) type IdNum = (u64, u64);

pub(crate) fn id_number(id: &str) -> Option<IdNum> {
    let b = id.as_bytes();
    if b.len() != 32 || !b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let n = u128::from_str_radix(id, 16).ok()?;
    Some(((n >> 64) as u64, n as u64))
}

fn context_hash(context: &str) -> u64 {
    let mut h = DefaultHasher::new();
    context.hash(&mut h);
    h.finish()
}

/// What a listing needs of one task besides its place in the order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    tid: i64,
    changed_us: i64,
    updated_ns: i64,
    /// A hash of the context id: the filter on it is checked exactly on the page's
    /// rows, and only `total` could count a task of a colliding context (a chance of
    /// about one in 2^64 per pair of contexts of one owner).
    context: u64,
    state: TaskState,
}

/// One owner's tasks in both orders.
#[derive(Default)]
struct OwnerTasks {
    /// (created µs, id) → entry.
    created: BTreeMap<(i64, IdNum), Entry>,
    /// (state changed µs, id) → created µs.
    changed: BTreeMap<(i64, IdNum), i64>,
}

impl OwnerTasks {
    fn put(&mut self, created_us: i64, id: IdNum, entry: Entry) {
        if let Some(old) = self.created.insert((created_us, id), entry) {
            self.changed.remove(&(old.changed_us, id));
        }
        self.changed.insert((entry.changed_us, id), created_us);
    }

    fn remove(&mut self, created_us: i64, id: IdNum) {
        if let Some(old) = self.created.remove(&(created_us, id)) {
            self.changed.remove(&(old.changed_us, id));
        }
    }
}

/// A change to the listings, made by a transaction and applied once it committed.
#[derive(Debug)]
pub(crate) enum Change {
    /// Insert or replace a task's entry.
    Put {
        tenant: String,
        owner: String,
        created_us: i64,
        id: IdNum,
        entry: Entry,
    },
    /// Remove a task's entry.
    Remove {
        tenant: String,
        owner: String,
        created_us: i64,
        id: IdNum,
    },
}

impl Change {
    /// The entry of a task row as written.
    pub(crate) fn put(row: &TaskRow, tid: i64) -> Option<Change> {
        Some(Change::Put {
            tenant: row.tenant.clone(),
            owner: row.owner.clone(),
            created_us: row.created_us,
            id: id_number(&row.id)?,
            entry: Entry {
                tid,
                changed_us: row.changed_us,
                updated_ns: row.updated_ns,
                context: context_hash(&row.context_id),
                state: TaskState::parse(row.state)?,
            },
        })
    }

    /// The entry of a row read at open.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn loaded(
        tenant: String,
        owner: String,
        created_us: i64,
        id: IdNum,
        tid: i64,
        changed_us: i64,
        updated_ns: i64,
        context: &str,
        state: TaskState,
    ) -> Change {
        Change::Put {
            tenant,
            owner,
            created_us,
            id,
            entry: Entry {
                tid,
                changed_us,
                updated_ns,
                context: context_hash(context),
                state,
            },
        }
    }

    /// The removal of a task's entry.
    pub(crate) fn remove(
        tenant: String,
        owner: String,
        created_us: i64,
        id: &str,
    ) -> Option<Change> {
        Some(Change::Remove {
            tenant,
            owner,
            created_us,
            id: id_number(id)?,
        })
    }
}

/// A listing page before its rows are read.
#[derive(Debug, Default)]
pub(crate) struct Candidates {
    /// Row ids of the page, newest first (one more than the page size when there is
    /// a next page).
    pub(crate) tids: Vec<i64>,
    pub(crate) total: u64,
}

/// Every owner's listing: tenant → owner → tasks.
#[derive(Default)]
pub(crate) struct Listings {
    owners: RwLock<HashMap<String, HashMap<String, OwnerTasks>>>,
}

impl Listings {
    /// Applies committed changes in order.
    pub(crate) fn apply(&self, changes: impl IntoIterator<Item = Change>) {
        // A poisoned lock means a panic while applying; the maps are still whole
        // (each change is a few map operations), so carry on with them.
        let mut owners = self.owners.write().unwrap_or_else(|p| p.into_inner());
        for c in changes {
            match c {
                Change::Put {
                    tenant,
                    owner,
                    created_us,
                    id,
                    entry,
                } => owners
                    .entry(tenant)
                    .or_default()
                    .entry(owner)
                    .or_default()
                    .put(created_us, id, entry),
                Change::Remove {
                    tenant,
                    owner,
                    created_us,
                    id,
                } => {
                    let Some(tenant_owners) = owners.get_mut(&tenant) else {
                        continue;
                    };
                    if let Some(tasks) = tenant_owners.get_mut(&owner) {
                        tasks.remove(created_us, id);
                        if tasks.created.is_empty() {
                            tenant_owners.remove(&owner);
                        }
                    }
                    if tenant_owners.is_empty() {
                        owners.remove(&tenant);
                    }
                }
            }
        }
    }

    /// The row ids of one page of `owner`'s tasks matching `q` (whose owner is
    /// `owner` and which names no reviewer), after the cursor `after`, and the
    /// number of matching tasks.
    pub(crate) fn page(
        &self,
        q: &ListQuery,
        owner: &str,
        after: Option<(i64, &str)>,
    ) -> Candidates {
        let owners = self.owners.read().unwrap_or_else(|p| p.into_inner());
        let Some(tasks) = owners.get(&q.tenant).and_then(|o| o.get(owner)) else {
            return Candidates::default();
        };
        let size = q.page_size.clamp(1, 1000);
        let context = q.context_id.as_deref().map(context_hash);
        let updated_after = q.updated_after.map(ns);
        let changed_since = q.changed_since.map(|t| t.timestamp_micros());
        let matches = |e: &Entry| {
            context.is_none_or(|c| c == e.context)
                && q.state.is_none_or(|s| s == e.state)
                && updated_after.is_none_or(|u| e.updated_ns > u)
                && changed_since.is_none_or(|c| e.changed_us >= c)
        };
        let filtered = context.is_some()
            || q.state.is_some()
            || updated_after.is_some()
            || changed_since.is_some();
        // Strictly before the cursor in (time, id) order, the id compared as a string.
        let before_cursor = |micros: i64, id: IdNum| match after {
            None => true,
            Some((cm, cid)) => match micros.cmp(&cm) {
                std::cmp::Ordering::Less => true,
                std::cmp::Ordering::Greater => false,
                std::cmp::Ordering::Equal => match id_number(cid) {
                    Some(c) => id < c,
                    None => format!("{:016x}{:016x}", id.0, id.1).as_str() < cid,
                },
            },
        };
        let mut out = Candidates {
            tids: Vec::with_capacity(size.min(64) + 1),
            total: 0,
        };
        // Past a cursor naming a task id, start there; otherwise walk from the newest.
        let bound = after.and_then(|(cm, cid)| id_number(cid).map(|c| (cm, c)));
        type Walk<'a> = Box<dyn Iterator<Item = (i64, IdNum, &'a Entry)> + 'a>;
        let walk: Walk<'_> = match q.order {
            ListOrder::Created => {
                Box::new(tasks.created.iter().rev().map(|(&(m, id), e)| (m, id, e)))
            }
            ListOrder::StateChanged => Box::new(tasks.changed.iter().rev().filter_map(
                |(&(m, id), created_us)| tasks.created.get(&(*created_us, id)).map(|e| (m, id, e)),
            )),
        };
        let walk: Walk<'_> = match (filtered, bound) {
            // Nothing to count: skip straight to the cursor.
            (false, Some(b)) => match q.order {
                ListOrder::Created => Box::new(
                    tasks
                        .created
                        .range(..b)
                        .rev()
                        .map(|(&(m, id), e)| (m, id, e)),
                ),
                ListOrder::StateChanged => Box::new(tasks.changed.range(..b).rev().filter_map(
                    |(&(m, id), created_us)| {
                        tasks.created.get(&(*created_us, id)).map(|e| (m, id, e))
                    },
                )),
            },
            _ => walk,
        };
        for (micros, id, e) in walk {
            if !filtered && out.tids.len() > size {
                break;
            }
            if !matches(e) {
                continue;
            }
            out.total += 1;
            if out.tids.len() <= size && before_cursor(micros, id) {
                out.tids.push(e.tid);
            }
        }
        if !filtered {
            out.total = tasks.created.len() as u64;
        }
        out
    }
}

/// The task id of a row id, for tests.
#[cfg(test)]
pub(crate) fn id_of(id: &TaskId) -> Option<IdNum> {
    id_number(id.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_numbers_order_like_the_id_strings() {
        let mut ids: Vec<TaskId> = (0..200).map(|_| TaskId::new()).collect();
        let mut by_number = ids.clone();
        ids.sort();
        by_number.sort_by_key(|i| id_of(i).unwrap());
        assert_eq!(ids, by_number);
        assert_eq!(id_number("ABCDEF0123456789abcdef0123456789"), None);
        assert_eq!(id_number("short"), None);
        assert_eq!(id_number("+bcdef0123456789abcdef0123456789"), None);
    }

    fn entry(tid: i64, changed_us: i64) -> Entry {
        Entry {
            tid,
            changed_us,
            updated_ns: 0,
            context: context_hash("c"),
            state: TaskState::Working,
        }
    }

    fn put(l: &Listings, owner: &str, created_us: i64, id: IdNum, e: Entry) {
        l.apply([Change::Put {
            tenant: "t".into(),
            owner: owner.into(),
            created_us,
            id,
            entry: e,
        }]);
    }

    fn query(order: ListOrder, size: usize) -> ListQuery {
        {
            let mut v = ListQuery::default();
            v.tenant = "t".into();
            v.owner = Some("o".into());
            v.order = order;
            v.page_size = size;
            v
        }
    }

    /// A replaced entry leaves its old place in the state-change order, and an owner
    /// with no tasks left is forgotten.
    #[test]
    fn puts_replace_and_removes_forget() {
        let l = Listings::default();
        put(&l, "o", 10, (0, 1), entry(1, 10));
        put(&l, "o", 20, (0, 2), entry(2, 20));
        put(&l, "o", 10, (0, 1), entry(1, 30));
        let c = l.page(&query(ListOrder::StateChanged, 10), "o", None);
        assert_eq!((c.tids, c.total), (vec![1, 2], 2));
        let c = l.page(&query(ListOrder::Created, 10), "o", None);
        assert_eq!((c.tids, c.total), (vec![2, 1], 2));
        let c = l.page(&query(ListOrder::Created, 1), "o", None);
        assert_eq!(
            c.tids,
            vec![2, 1],
            "one more than the page marks a next page"
        );
        let c = l.page(
            &query(ListOrder::Created, 10),
            "o",
            Some((20, &format!("{:032x}", 2))),
        );
        assert_eq!(c.tids, vec![1]);
        for (created_us, id) in [(10, (0, 1)), (20, (0, 2))] {
            l.apply([Change::Remove {
                tenant: "t".into(),
                owner: "o".into(),
                created_us,
                id,
            }]);
        }
        assert!(l.owners.read().unwrap().is_empty());
        assert_eq!(l.page(&query(ListOrder::Created, 10), "o", None).total, 0);
    }

    /// A cursor whose id is not a task id is compared as a string, as SQL would.
    #[test]
    fn foreign_cursor_ids_compare_as_strings() {
        let l = Listings::default();
        put(&l, "o", 10, (0, 0xa), entry(1, 10));
        put(&l, "o", 10, (0, 0xb), entry(2, 10));
        let c = l.page(
            &query(ListOrder::Created, 10),
            "o",
            Some((10, "0000000000000000000000000000000b-")),
        );
        assert_eq!(c.tids, vec![2, 1]);
        let c = l.page(&query(ListOrder::Created, 10), "o", Some((10, "0")));
        assert!(c.tids.is_empty());
    }
}
