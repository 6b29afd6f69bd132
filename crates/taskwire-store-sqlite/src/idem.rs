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
//! caller's task. As with the id map, the writer keeps an open transaction's changes
//! aside and applies them here once it has committed.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;

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
}

impl IdemIndex {
    /// An empty index.
    pub(crate) fn empty() -> Self {
        Self {
            hasher: KeyHasher::new(),
            map: HashMap::new(),
        }
    }

    /// Adds a key read from the `tasks` table at open.
    pub(crate) fn insert_loaded(&mut self, tenant: &str, owner: &str, message_id: &str, tid: i64) {
        let h = self.hasher.hash(tenant, owner, message_id);
        // Two rows with one key (not written by this store): the newest wins.
        let slot = self.map.entry(h).or_insert(tid);
        *slot = (*slot).max(tid);
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

    /// Applies committed changes: `Some(tid)` points a key hash at a row, `None`
    /// forgets it.
    pub(crate) fn apply(&mut self, changes: impl IntoIterator<Item = (u128, Option<i64>)>) {
        for (h, tid) in changes {
            match tid {
                Some(tid) => self.map.insert(h, tid),
                None => self.map.remove(&h),
            };
        }
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
    fn keys_hash_apart_and_changes_apply_in_order() {
        let mut ix = IdemIndex::empty();
        ix.insert_loaded("t", "o", "a", 1);
        ix.insert_loaded("t", "o", "a", 0);
        let (a, b) = (ix.hash(&key("a")), ix.hash(&key("b")));
        assert_ne!(a, b);
        assert_ne!(ix.hash_parts("t", "oa", ""), ix.hash_parts("to", "a", ""));
        assert_eq!(
            ix.hash_parts("t", "o", "b"),
            b,
            "parts hash like the key they make"
        );
        assert_eq!(
            (ix.get(a), ix.get(b)),
            (Some(1), None),
            "the newest row wins"
        );
        ix.apply([(b, Some(3)), (a, None), (a, Some(4))]);
        assert_eq!((ix.get(a), ix.get(b)), (Some(4), Some(3)));
        ix.apply([(b, None)]);
        assert_eq!(ix.get(b), None);
    }
}
