//! A bounded cache of tasks already encoded (as ProtoJSON for the JSON-RPC
//! binding, as protobuf for gRPC), keyed by task version.
//!
//! Clients poll GetTask; a task that has not changed since the last poll has the
//! same version, so its encoding is reused instead of converting and encoding the
//! task again. Any change to a task bumps its version and so misses the cache; the
//! caller's access is checked before the cache is consulted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use taskwire_core::TaskId;

/// What an encoding depends on: the task, its version, and the history length asked for.
pub(crate) type Key = (TaskId, u64, Option<usize>);

/// Two generations: lookups hit either; when the current one is full it becomes
/// the previous one (dropping the older), so memory stays bounded at twice the
/// capacity without a cliff where everything is evicted at once.
#[derive(Debug)]
pub(crate) struct EncodedCache<V = Arc<str>> {
    capacity: usize,
    inner: Mutex<Generations<V>>,
}

/// foldhash rather than SipHash: the keys are task ids the server made (128
/// random bits), and a lookup sits on every GetTask.
type Map<V> = HashMap<Key, V, foldhash::fast::RandomState>;

#[derive(Debug)]
struct Generations<V> {
    current: Map<V>,
    previous: Map<V>,
}

impl<V> Default for Generations<V> {
    fn default() -> Self {
        Self {
            current: Map::default(),
            previous: Map::default(),
        }
    }
}

impl<V: Clone> EncodedCache<V> {
    /// A cache holding up to `capacity` encodings per generation (0 disables it).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Mutex::new(Generations::default()),
        }
    }

    /// The encoding stored under `key`, if any.
    pub(crate) fn get(&self, key: &Key) -> Option<V> {
        if self.capacity == 0 {
            return None;
        }
        let g = self.inner.lock().ok()?;
        g.current.get(key).or_else(|| g.previous.get(key)).cloned()
    }

    /// Stores an encoding.
    pub(crate) fn put(&self, key: Key, text: V) {
        if self.capacity == 0 {
            return;
        }
        if let Ok(mut g) = self.inner.lock() {
            if g.current.len() >= self.capacity {
                g.previous = std::mem::take(&mut g.current);
            }
            g.current.insert(key, text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_and_keyed_by_version() {
        let c = EncodedCache::<Arc<str>>::new(2);
        let id = TaskId::new();
        c.put((id.clone(), 1, None), "v1".into());
        assert_eq!(c.get(&(id.clone(), 1, None)).as_deref(), Some("v1"));
        assert!(
            c.get(&(id.clone(), 2, None)).is_none(),
            "another version misses"
        );
        assert!(
            c.get(&(id.clone(), 1, Some(0))).is_none(),
            "another view misses"
        );
        for v in 2..10 {
            c.put((id.clone(), v, None), format!("v{v}").into());
        }
        assert!(
            c.get(&(id.clone(), 1, None)).is_none(),
            "old entries are dropped"
        );
        assert_eq!(c.get(&(id.clone(), 9, None)).as_deref(), Some("v9"));
        let g = c.inner.lock().unwrap();
        assert!(g.current.len() + g.previous.len() <= 4);
    }

    #[test]
    fn zero_capacity_disables() {
        let c = EncodedCache::<Arc<str>>::new(0);
        let id = TaskId::new();
        c.put((id.clone(), 1, None), "v1".into());
        assert!(c.get(&(id, 1, None)).is_none());
    }
}
