//! Identifiers: task ids are 128-bit random, context ids are caller-chosen or random.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::CoreError;

/// Longest accepted context id, message id or other caller-chosen identifier.
pub const MAX_EXTERNAL_ID_LEN: usize = 256;

/// Bytes of operating-system randomness fetched at once per thread (32 ids).
const POOL_BYTES: usize = 512;

/// A thread's unused bytes from the operating system's generator.
struct Pool {
    bytes: [u8; POOL_BYTES],
    /// Bytes before this offset were handed out (and wiped).
    used: usize,
}

thread_local! {
    static POOL: std::cell::RefCell<Pool> = const {
        std::cell::RefCell::new(Pool { bytes: [0; POOL_BYTES], used: POOL_BYTES })
    };
}

/// Returns 16 bytes from the operating system's cryptographically secure generator.
///
/// The bytes are fetched in blocks of [`POOL_BYTES`] per thread (one `getrandom`
/// call per 32 ids instead of one per id); every byte is used once and wiped when
/// handed out. (The process never forks without exec, so no two processes share a
/// block.)
fn random_128() -> [u8; 16] {
    let mut out = [0u8; 16];
    let pooled = POOL
        .try_with(|p| {
            let mut p = p.try_borrow_mut().ok()?;
            if p.used + out.len() > POOL_BYTES {
                getrandom::fill(&mut p.bytes).ok()?;
                p.used = 0;
            }
            let start = p.used;
            let chunk = &mut p.bytes[start..start + out.len()];
            out.copy_from_slice(chunk);
            chunk.fill(0);
            p.used += out.len();
            Some(())
        })
        .ok()
        .flatten();
    if pooled.is_some() {
        return out;
    }
    // No pool on this thread (it is being torn down), or the pool could not be
    // filled: ask the OS directly.
    // getrandom only fails when the OS has no entropy source at all; fall back to
    // a time-and-counter mix so that id generation never panics.
    if getrandom::fill(&mut out).is_err() {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        out[..8].copy_from_slice(&(t as u64).to_le_bytes());
        out[8..].copy_from_slice(&n.to_le_bytes());
    }
    out
}

const DIGITS: &[u8; 16] = b"0123456789abcdef";

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 0xf) as usize] as char);
    }
    s
}

/// Writes 16 bytes as 32 lowercase hex digits.
fn hex_into(bytes: &[u8; 16], out: &mut [u8; 32]) {
    for (i, b) in bytes.iter().enumerate() {
        out[2 * i] = DIGITS[(b >> 4) as usize];
        out[2 * i + 1] = DIGITS[(b & 0xf) as usize];
    }
}

/// A fresh 128-bit random identifier as 32 lowercase hex digits.
pub fn random_id() -> String {
    hex(&random_128())
}

/// The id of a task: 128 random bits as 32 lowercase hex digits.
///
/// Held inline (no heap allocation): every event, map key and claim carries one, and
/// copying 32 bytes is cheaper than allocating and freeing a string each time.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId([u8; 32]);

impl TaskId {
    /// A new random task id.
    pub fn new() -> Self {
        let mut out = [0u8; 32];
        hex_into(&random_128(), &mut out);
        Self(out)
    }

    /// Parses a task id received from outside, rejecting anything that is not 32 hex digits.
    pub fn parse(s: &str) -> Result<Self, CoreError> {
        let b = s.as_bytes();
        if b.len() == 32 && b.iter().all(u8::is_ascii_hexdigit) {
            let mut out = [0u8; 32];
            for (o, c) in out.iter_mut().zip(b) {
                *o = c.to_ascii_lowercase();
            }
            Ok(Self(out))
        } else {
            Err(CoreError::InvalidInput {
                field: "taskId".into(),
                reason: "a task id is 32 hexadecimal digits".into(),
            })
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        // Only ASCII hex digits are ever stored (see `new` and `parse`).
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl Serialize for TaskId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TaskId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = TaskId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a task id (32 hexadecimal digits)")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<TaskId, E> {
                TaskId::parse(v).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

impl Default for TaskId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TaskId({})", self.as_str())
    }
}

/// Checks a caller-chosen identifier (context id, message id, artifact id, input key).
///
/// Accepted: 1 to 256 characters, none of them control characters.
pub fn validate_external_id(field: &str, s: &str) -> Result<(), CoreError> {
    if s.is_empty() {
        return Err(CoreError::InvalidInput {
            field: field.into(),
            reason: "must not be empty".into(),
        });
    }
    if s.len() > MAX_EXTERNAL_ID_LEN {
        return Err(CoreError::InvalidInput {
            field: field.into(),
            reason: format!("longer than {MAX_EXTERNAL_ID_LEN} bytes"),
        });
    }
    if s.chars().any(char::is_control) {
        return Err(CoreError::InvalidInput {
            field: field.into(),
            reason: "contains control characters".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_are_random_and_parse() {
        let a = TaskId::new();
        let b = TaskId::new();
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), 32);
        assert_eq!(TaskId::parse(a.as_str()).ok(), Some(a));
    }

    #[test]
    fn pooled_ids_are_distinct_across_refills_and_threads() {
        let mut seen = std::collections::HashSet::new();
        let per_thread = 3 * POOL_BYTES / 16 + 5;
        let others: Vec<_> = (0..3)
            .map(|_| {
                std::thread::spawn(move || (0..per_thread).map(|_| random_id()).collect::<Vec<_>>())
            })
            .collect();
        for _ in 0..per_thread {
            assert!(seen.insert(random_id()));
        }
        for t in others {
            for id in t.join().unwrap() {
                assert!(seen.insert(id));
            }
        }
        assert_eq!(seen.len(), 4 * per_thread);
    }

    #[test]
    fn malformed_task_ids_are_rejected() {
        for bad in [
            "",
            "xyz",
            "0123456789abcdef0123456789abcdeg",
            "../../etc/passwd",
        ] {
            assert!(matches!(
                TaskId::parse(bad),
                Err(CoreError::InvalidInput { ref field, .. }) if field == "taskId"
            ));
        }
    }

    #[test]
    fn external_ids_are_bounded() {
        assert!(validate_external_id("contextId", "ctx-1").is_ok());
        assert!(validate_external_id("contextId", "").is_err());
        assert!(validate_external_id("contextId", &"a".repeat(257)).is_err());
        assert!(validate_external_id("contextId", "a\nb").is_err());
    }
}
