//! The writer's in-memory index of idempotency keys.
//!
//! A create with a key (tenant, owner, messageId) must find the task an earlier
//! create with that key made, also after a restart. The key is stored durably in
//! the task's row (`idem_tenant`, `idem_owner`, `idem_message_id`); what finds it
//! is this map from a 128-bit hash of the key to the row id, built from the
//! `tasks` table when the store opens and kept by the writer thread alone.
//!
//! It replaces an `idempotency` table keyed by the key itself (schema 1 to 7):
//! message ids are random, so each create wrote a page at a random place in that
//! tree, about one WAL frame per task of the ~3.7 a task cost in all (runtime
//! bench, SQLite, 256 callers: 19.6k -> 24.5k tasks/s without it).
//!
//! A hit is checked against the row's stored key, so a hash collision (about one
//! chance in 2^128 per pair of keys, with keys chosen at random per process) can
//! only make the colliding create take the key as new, never return another
//! caller's task. Changes made inside a transaction are undone if it rolls back.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;

#[cfg(test)]
use rusqlite::Connection;
use taskwire_core::store::IdempotencyKey;

/// Hashes keys with two independently seeded hashers (a fresh seed per process:
/// the map is rebuilt at every open).
struct KeyHasher(RandomState, RandomState);

impl KeyHasher {
    fn new() -> Self {
        Self(RandomState::new(), RandomState::new())
    }

    fn hash(&self, tenant: &str, owner: &str, message_id: &str) -> u128 {
        let parts = (tenant, owner, message_id);
        (u128::from(self.0.hash_one(parts)) << 64) | u128::from(self.1.hash_one(parts))
    }
}

/// The index.
pub(crate) struct IdemIndex {
    hasher: KeyHasher,
    map: HashMap<u128, i64>,
    /// (hash, previous row id) of each change in the open transaction, oldest first.
    undo: Vec<(u128, Option<i64>)>,
}

/// The stored key of a row that holds one.
#[cfg(test)]
const LOAD: &str = "SELECT tid, idem_tenant, idem_owner, idem_message_id \
     FROM tasks WHERE idem_message_id IS NOT NULL";

impl IdemIndex {
    /// An empty index.
    pub(crate) fn empty() -> Self {
        Self {
            hasher: KeyHasher::new(),
            map: HashMap::new(),
            undo: Vec::new(),
        }
    }

    /// Adds a key read from the `tasks` table at open.
    pub(crate) fn insert_loaded(&mut self, tenant: &str, owner: &str, message_id: &str, tid: i64) {
        let h = self.hasher.hash(tenant, owner, message_id);
        // Two rows with one key (not written by this store): the newest wins.
        let slot = self.map.entry(h).or_insert(tid);
        *slot = (*slot).max(tid);
    }

    /// Reads every stored key from the `tasks` table (for tests; the store builds
    /// it in [`crate::ids::load`]).
    #[cfg(test)]
    pub(crate) fn load(conn: &Connection) -> Result<Self, rusqlite::Error> {
        let mut me = Self::empty();
        let mut stmt = conn.prepare(LOAD)?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let tid: i64 = r.get(0)?;
            let tenant: String = r.get(1)?;
            let owner: String = r.get(2)?;
            let message_id: String = r.get(3)?;
            me.insert_loaded(&tenant, &owner, &message_id, tid);
        }
        Ok(me)
    }

    /// The hash of a key.
    pub(crate) fn hash(&self, k: &IdempotencyKey) -> u128 {
        self.hasher.hash(&k.tenant, &k.owner, &k.message_id)
    }

    /// The hash of a key given by parts.
    pub(crate) fn hash_parts(&self, tenant: &str, owner: &str, message_id: &str) -> u128 {
        self.hasher.hash(tenant, owner, message_id)
    }

    /// The row id the key hash names, if any.
    pub(crate) fn get(&self, h: u128) -> Option<i64> {
        self.map.get(&h).copied()
    }

    /// Points the key hash at `tid`.
    pub(crate) fn put(&mut self, h: u128, tid: i64) {
        let old = self.map.insert(h, tid);
        self.undo.push((h, old));
    }

    /// Forgets the key hash if it still names `tid`.
    pub(crate) fn remove(&mut self, h: u128, tid: i64) {
        if self.map.get(&h) == Some(&tid) {
            self.map.remove(&h);
            self.undo.push((h, Some(tid)));
        }
    }

    /// The open transaction committed: its changes stay.
    pub(crate) fn commit(&mut self) {
        self.undo.clear();
    }

    /// The open transaction rolled back: its changes are undone, newest first.
    pub(crate) fn rollback(&mut self) {
        while let Some((h, old)) = self.undo.pop() {
            match old {
                Some(tid) => self.map.insert(h, tid),
                None => self.map.remove(&h),
            };
        }
    }

    /// Keys held (for tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(m: &str) -> IdempotencyKey {
        IdempotencyKey {
            tenant: "t".into(),
            owner: "o".into(),
            message_id: m.into(),
        }
    }

    #[test]
    fn a_rollback_undoes_puts_and_removes_in_reverse() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE tasks (tid INTEGER PRIMARY KEY, idem_tenant TEXT, idem_owner TEXT, \
             idem_message_id TEXT); INSERT INTO tasks VALUES (1, 't', 'o', 'a'), (2, NULL, NULL, NULL);",
        )
        .unwrap();
        let mut ix = IdemIndex::load(&conn).unwrap();
        let (a, b) = (ix.hash(&key("a")), ix.hash(&key("b")));
        assert_ne!(a, b);
        assert_eq!((ix.get(a), ix.get(b), ix.len()), (Some(1), None, 1));
        ix.put(b, 3);
        ix.remove(a, 1);
        ix.put(a, 4);
        ix.remove(b, 99); // names another row: kept
        assert_eq!((ix.get(a), ix.get(b)), (Some(4), Some(3)));
        ix.rollback();
        assert_eq!((ix.get(a), ix.get(b), ix.len()), (Some(1), None, 1));
        ix.put(b, 3);
        ix.commit();
        ix.rollback();
        assert_eq!(ix.get(b), Some(3), "a committed change stays");
        assert_eq!(
            ix.hash_parts("t", "o", "b"),
            b,
            "parts hash like the key they make"
        );
    }
}
