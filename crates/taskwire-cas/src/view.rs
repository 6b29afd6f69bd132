//! The CAS view of a task: the status object from the task snapshot, the messages
//! list folded from the task's event log, and the revision derived from both.
//!
//! # Revision
//!
//! The core's `version` moves on every change, including steps, agent state and
//! lease bookkeeping, none of which CAS shows. The revision is therefore computed,
//! not stored: a 64-bit FNV-1a hash over the JSON of the status object (with an
//! empty revision) followed by the JSON of the messages list. It changes exactly
//! when the status object or the messages change, is the same on every node and
//! after a restart, and needs no extra state in the store.

use std::collections::HashMap;
use std::hash::Hasher;

use serde_json::{Map, Value};
use taskwire_core::event::{Event, EventKind};
use taskwire_core::{Message, Role, Task};
use taskwire_vocab::cas as vocab;

use crate::wire::{iso, IoType, MessageEntry, NotificationWire, Status, StatusObject};

/// The messages list, folded event by event from a task's log.
#[derive(Clone, Debug, Default)]
pub(crate) struct MessagesFold {
    /// Entries with a commit time, in commit order.
    committed: Vec<MessageEntry>,
    /// Inputs received but not yet shown to the agent, by message id, in arrival order.
    pending: Vec<(String, MessageEntry)>,
    /// Message ids already listed (status messages may repeat one).
    seen: std::collections::HashSet<String>,
    /// Index in `committed` of each artifact's output.
    artifacts: HashMap<String, usize>,
    /// The last sequence number applied.
    pub(crate) last_seq: u64,
}

fn input_entry(m: &Message) -> MessageEntry {
    let parameters = m
        .metadata
        .get(vocab::META_PARAMETERS)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    MessageEntry {
        io: IoType::Input,
        message: vocab::parts_to_cas(&m.parts),
        received_at: m.received_at.map(iso),
        committed_at: m.committed_at.map(iso),
        error: None,
        parameters,
    }
}

fn output_entry(m: &Message, at: taskwire_core::Timestamp, error: Option<String>) -> MessageEntry {
    MessageEntry {
        io: IoType::Output,
        message: vocab::parts_to_cas(&m.parts),
        received_at: None,
        committed_at: Some(iso(m.committed_at.unwrap_or(at))),
        error,
        parameters: Map::new(),
    }
}

impl MessagesFold {
    /// Applies one event of the log (events must come in sequence order).
    pub(crate) fn apply(&mut self, e: &Event) {
        if e.seq <= self.last_seq {
            return;
        }
        self.last_seq = e.seq;
        match &e.kind {
            EventKind::Message { message, .. } => {
                if !self.seen.insert(message.message_id.clone()) {
                    return;
                }
                match message.role {
                    Role::User => {
                        let mut entry = input_entry(message);
                        if let Some(c) = message.committed_at {
                            entry.committed_at = Some(iso(c));
                            self.committed.push(entry);
                        } else {
                            self.pending.push((message.message_id.clone(), entry));
                        }
                    }
                    Role::Agent => self.committed.push(output_entry(message, e.at, None)),
                }
            }
            EventKind::InputCommitted { message_ids } => {
                for id in message_ids {
                    if let Some(pos) = self.pending.iter().position(|(m, _)| m == id) {
                        let (_, mut entry) = self.pending.remove(pos);
                        entry.committed_at = Some(iso(e.at));
                        self.committed.push(entry);
                    }
                }
            }
            EventKind::Artifact {
                artifact, append, ..
            } => {
                let mut parts = vocab::parts_to_cas(&artifact.parts);
                match self.artifacts.get(&artifact.artifact_id) {
                    Some(&i) if *append => self.committed[i].message.append(&mut parts),
                    Some(&i) => {
                        mark_artifact(&mut parts, artifact);
                        self.committed[i].message = parts;
                    }
                    None => {
                        mark_artifact(&mut parts, artifact);
                        self.artifacts
                            .insert(artifact.artifact_id.clone(), self.committed.len());
                        self.committed.push(MessageEntry {
                            io: IoType::Output,
                            message: parts,
                            received_at: None,
                            committed_at: Some(iso(e.at)),
                            error: None,
                            parameters: Map::new(),
                        });
                    }
                }
            }
            EventKind::Status {
                to, message, error, ..
            } => {
                let error = vocab::output_error(*to, error.as_deref());
                match message {
                    Some(m) if self.seen.insert(m.message_id.clone()) => {
                        self.committed.push(output_entry(m, e.at, error));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// The messages list: committed entries in commit order, then pending inputs.
    pub(crate) fn entries(&self) -> Vec<MessageEntry> {
        let mut out = self.committed.clone();
        out.extend(self.pending.iter().map(|(_, e)| e.clone()));
        out
    }
}

fn mark_artifact(parts: &mut [taskwire_vocab::cas::ContentPart], a: &taskwire_core::Artifact) {
    if let Some(first) = parts.first_mut() {
        let (marker, _loss) = vocab::artifact_marker(&a.artifact_id, a.name.as_deref());
        first
            .metadata
            .get_or_insert_with(Map::new)
            .insert(vocab::META_ARTIFACT.into(), marker);
    }
}

/// The status object of a task, with an empty revision (filled in by [`revision`]).
pub(crate) fn status_object(task: &Task) -> StatusObject {
    StatusObject {
        id: task.id.to_string(),
        agent: task.agent.clone(),
        responsible_user: task.responsible_user.clone(),
        created_at: iso(task.created_at),
        status: Status {
            phase: vocab::phase(task).0,
            terminal_reason: vocab::terminal_reason(task).0,
            revision: String::new(),
            notifications: vocab::notifications(task)
                .into_iter()
                .map(|n| NotificationWire {
                    kind: n.kind,
                    since: iso(n.since),
                    provider: n.provider,
                })
                .collect(),
            idle_expires_at: vocab::idle_expires_at(task).map(iso),
        },
    }
}

/// FNV-1a over the JSON of the status object (revision empty) and the messages.
pub(crate) fn revision(status: &StatusObject, messages: &[MessageEntry]) -> String {
    let mut h = fnv::FnvHasher::default();
    let a = serde_json::to_vec(status).unwrap_or_default();
    let b = serde_json::to_vec(messages).unwrap_or_default();
    h.write(&a);
    h.write(&[0]);
    h.write(&b);
    format!("{:016x}", h.finish())
}

/// The complete view of a task at one snapshot.
#[derive(Clone, Debug)]
pub(crate) struct View {
    pub(crate) status: StatusObject,
    pub(crate) messages: Vec<MessageEntry>,
}

impl View {
    /// Builds the view from the snapshot and the fold (already advanced to the
    /// snapshot's `last_seq`).
    pub(crate) fn build(task: &Task, fold: &MessagesFold) -> Self {
        let mut status = status_object(task);
        let messages = fold.entries();
        status.status.revision = revision(&status, &messages);
        Self { status, messages }
    }

    /// The revision.
    pub(crate) fn revision(&self) -> &str {
        &self.status.status.revision
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskwire_core::event::Event;
    use taskwire_core::{Artifact, Part, TaskId};

    fn ev(seq: u64, kind: EventKind) -> Event {
        Event {
            task_id: TaskId::new(),
            seq,
            version: seq,
            at: chrono::Utc::now(),
            kind,
        }
    }

    #[test]
    fn queued_input_is_listed_last_until_committed() {
        let mut f = MessagesFold::default();
        let mut a = Message::user_text("a");
        a.received_at = Some(chrono::Utc::now());
        f.apply(&ev(
            1,
            EventKind::Message {
                message: Box::new(a.clone()),
                queued: true,
            },
        ));
        f.apply(&ev(
            2,
            EventKind::Message {
                message: Box::new(Message::agent_text("out")),
                queued: false,
            },
        ));
        let e = f.entries();
        assert_eq!(e[0].io, IoType::Output);
        assert_eq!(e[1].io, IoType::Input);
        assert!(e[1].committed_at.is_none());
        f.apply(&ev(
            3,
            EventKind::InputCommitted {
                message_ids: vec![a.message_id.clone()],
            },
        ));
        let e = f.entries();
        assert_eq!(e[1].io, IoType::Input);
        assert!(e[1].committed_at.is_some());
        // Replayed events are ignored.
        f.apply(&ev(
            2,
            EventKind::Message {
                message: Box::new(Message::agent_text("again")),
                queued: false,
            },
        ));
        assert_eq!(f.entries().len(), 2);
    }

    #[test]
    fn artifact_chunks_make_one_output() {
        let mut f = MessagesFold::default();
        let chunk = |text: &str| Artifact {
            artifact_id: "s".into(),
            name: Some("stream".into()),
            description: None,
            parts: vec![Part::text(text)],
            metadata: Default::default(),
            complete: false,
        };
        f.apply(&ev(
            1,
            EventKind::Artifact {
                artifact: Box::new(chunk("a")),
                append: false,
                last_chunk: false,
            },
        ));
        let r1 = revision(&dummy(), &f.entries());
        f.apply(&ev(
            2,
            EventKind::Artifact {
                artifact: Box::new(chunk("b")),
                append: true,
                last_chunk: true,
            },
        ));
        let e = f.entries();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].message.len(), 2);
        assert_ne!(r1, revision(&dummy(), &e));
    }

    fn dummy() -> StatusObject {
        StatusObject {
            id: "x".into(),
            agent: "a".into(),
            responsible_user: "u".into(),
            created_at: "t".into(),
            status: Status {
                phase: vocab::Phase::Processing,
                terminal_reason: None,
                revision: String::new(),
                notifications: vec![],
                idle_expires_at: None,
            },
        }
    }

    #[test]
    fn steps_and_state_do_not_touch_the_messages() {
        let mut f = MessagesFold::default();
        let r0 = revision(&dummy(), &f.entries());
        f.apply(&ev(
            1,
            EventKind::Step {
                name: "s".into(),
                phase: taskwire_core::StepPhase::Started,
            },
        ));
        f.apply(&ev(
            2,
            EventKind::StateSnapshot {
                snapshot: serde_json::json!({"a": 1}),
            },
        ));
        assert_eq!(r0, revision(&dummy(), &f.entries()));
    }
}

/// The folds of recently viewed tasks, so that a poll applies only the events
/// since the last view of the task instead of its whole log. Bounded: the least
/// recently stored fold goes first. A fold is taken out while it is advanced and
/// put back after (two concurrent views of one task each fold on their own).
pub(crate) struct FoldCache {
    max: usize,
    inner: std::sync::Mutex<FoldCacheInner>,
}

#[derive(Default)]
struct FoldCacheInner {
    folds: HashMap<taskwire_core::TaskId, (u64, MessagesFold)>,
    order: std::collections::VecDeque<(u64, taskwire_core::TaskId)>,
    tick: u64,
}

impl FoldCache {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            inner: std::sync::Mutex::default(),
        }
    }

    /// The cached fold of a task (empty if none, or if it is ahead of the snapshot,
    /// which a fold from a newer read can be).
    pub(crate) fn take(&self, id: &taskwire_core::TaskId, upto: u64) -> MessagesFold {
        let Ok(mut g) = self.inner.lock() else {
            return MessagesFold::default();
        };
        match g.folds.remove(id) {
            Some((_, f)) if f.last_seq <= upto => f,
            _ => MessagesFold::default(),
        }
    }

    pub(crate) fn put(&self, id: taskwire_core::TaskId, fold: MessagesFold) {
        let Ok(mut g) = self.inner.lock() else {
            return;
        };
        g.tick += 1;
        let tick = g.tick;
        g.order.push_back((tick, id.clone()));
        g.folds.insert(id, (tick, fold));
        while g.folds.len() > self.max {
            let Some((t, old)) = g.order.pop_front() else {
                break;
            };
            if g.folds.get(&old).is_some_and(|(at, _)| *at == t) {
                g.folds.remove(&old);
            }
        }
        // Stale order entries (of folds stored again since) do not pile up.
        if g.order.len() > 4 * self.max {
            let FoldCacheInner { folds, order, .. } = &mut *g;
            order.retain(|(t, id)| folds.get(id).is_some_and(|(at, _)| at == t));
        }
    }
}

#[cfg(test)]
mod fold_cache_tests {
    use super::*;

    #[test]
    fn bounded_and_never_ahead_of_the_snapshot() {
        let c = FoldCache::new(2);
        let ids: Vec<taskwire_core::TaskId> =
            (0..3).map(|_| taskwire_core::TaskId::new()).collect();
        for (i, id) in ids.iter().enumerate() {
            let f = MessagesFold {
                last_seq: 10 + i as u64,
                ..MessagesFold::default()
            };
            c.put(id.clone(), f);
        }
        // The first went when the third came.
        assert_eq!(c.take(&ids[0], 100).last_seq, 0);
        assert_eq!(c.take(&ids[1], 100).last_seq, 11);
        // A fold past the snapshot is not used.
        assert_eq!(c.take(&ids[2], 5).last_seq, 0);
    }
}
