//! Multi round-trip requests (SEP-2322) for `tools/call` at revision 2026-07-28.
//!
//! A tool whose task stops for input, called by a client that will not follow a
//! task, is answered with an `InputRequiredResult`: the task's keyed input
//! requests and a `requestState`. The client repeats the call with
//! `inputResponses` and that `requestState`, and the same task continues.
//!
//! The `requestState` names the task and is sealed with HMAC-SHA256 under a key
//! of the adapter, over the caller (tenant and principal) and the tool name as
//! well, so it cannot be altered, forged, or replayed by another caller or for
//! another tool. It carries the task's event sequence number, so each round's
//! state differs. It is `<payload>.<mac>`, both base64url without padding, with
//! payload `1:<task id>:<seq>`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use taskwire_core::{Caller, Task, TaskId};

use crate::error::RpcError;

type HmacSha256 = Hmac<Sha256>;

/// Longest `requestState` read (longer ones are refused unread).
const MAX_STATE_LEN: usize = 512;

/// The key `requestState`s are sealed with.
#[derive(Clone)]
pub struct StateKey([u8; 32]);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(…)")
    }
}

impl StateKey {
    /// A random key (what an adapter uses unless given one; states sealed under
    /// it do not survive a restart, and nodes do not share it).
    pub fn random() -> Self {
        let mut k = [0u8; 32];
        if getrandom::fill(&mut k).is_err() {
            // No system randomness: fall back to something unpredictable enough
            // to differ per process, and say so.
            tracing::warn!("mcp: no system randomness for the requestState key");
            let seed = format!("{:?}{:?}", std::time::SystemTime::now(), std::process::id());
            for (i, b) in seed.bytes().enumerate() {
                k[i % 32] ^= b;
            }
        }
        Self(k)
    }

    /// A key from bytes (share one between nodes, or across restarts).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    fn mac(&self, caller: &Caller, tool: &str, payload: &str) -> HmacSha256 {
        // new_from_slice accepts any key length for HMAC; 32 bytes always works.
        let mut m = <HmacSha256 as KeyInit>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        for part in [
            "taskwire-mcp-request-state/1",
            &caller.tenant,
            &caller.principal,
            tool,
            payload,
        ] {
            m.update(&(part.len() as u64).to_be_bytes());
            m.update(part.as_bytes());
        }
        m
    }

    /// The `requestState` of `task`, called as `tool` by `caller`.
    pub(crate) fn seal(&self, caller: &Caller, tool: &str, task: &Task) -> String {
        let payload = format!("1:{}:{}", task.id, task.last_seq);
        let tag = self.mac(caller, tool, &payload).finalize().into_bytes();
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(payload.as_bytes()),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// The task a `requestState` names, if it was sealed by this key for this
    /// caller and tool; anything else is Invalid params (-32602).
    pub(crate) fn open(
        &self,
        caller: &Caller,
        tool: &str,
        state: &str,
    ) -> Result<TaskId, RpcError> {
        let bad = || {
            RpcError::invalid_params(
                "requestState failed its integrity check (altered, from another caller or tool, or sealed before a restart); call the tool again without it",
            )
        };
        if state.len() > MAX_STATE_LEN {
            return Err(bad());
        }
        let (p, t) = state.split_once('.').ok_or_else(bad)?;
        let payload = URL_SAFE_NO_PAD
            .decode(p)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(bad)?;
        let tag = URL_SAFE_NO_PAD.decode(t).map_err(|_| bad())?;
        self.mac(caller, tool, &payload)
            .verify_slice(&tag)
            .map_err(|_| bad())?;
        let mut fields = payload.split(':');
        match (fields.next(), fields.next(), fields.next(), fields.next()) {
            (Some("1"), Some(id), Some(_seq), None) => TaskId::parse(id).map_err(|_| bad()),
            _ => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use taskwire_core::{CreateTask, MemoryStore, Message, TaskService};

    async fn a_task() -> Task {
        let s = TaskService::new(Arc::new(MemoryStore::new()), "t");
        let c = s
            .create(&Caller::local(), CreateTask::new(Message::user_text("x")))
            .await
            .unwrap();
        (*c.task).clone()
    }

    #[tokio::test]
    async fn sealed_states_open_only_for_their_caller_tool_and_key() {
        let key = StateKey::random();
        let task = a_task().await;
        let alice = Caller::new("t", "alice");
        let state = key.seal(&alice, "tool", &task);
        assert_eq!(key.open(&alice, "tool", &state).unwrap(), task.id);
        // Another caller, tool or key.
        assert!(key.open(&Caller::new("t", "bob"), "tool", &state).is_err());
        assert!(key
            .open(&Caller::new("u", "alice"), "tool", &state)
            .is_err());
        assert!(key.open(&alice, "other", &state).is_err());
        assert!(StateKey::random().open(&alice, "tool", &state).is_err());
        // Any altered character.
        for i in 0..state.len() {
            let mut b = state.clone().into_bytes();
            b[i] = if b[i] == b'A' { b'B' } else { b'A' };
            let altered = String::from_utf8(b).unwrap();
            if altered != state {
                let e = key.open(&alice, "tool", &altered).unwrap_err();
                assert_eq!(e.code, crate::wire::code::INVALID_PARAMS);
            }
        }
        assert!(key.open(&alice, "tool", "").is_err());
        assert!(key.open(&alice, "tool", &"a".repeat(10_000)).is_err());
    }
}
