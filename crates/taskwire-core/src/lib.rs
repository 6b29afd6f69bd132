//! The task core of taskwire: one task model, one transition table, one event log
//! and one runtime, which every protocol adapter exposes.
//!
//! ```
//! use std::{sync::Arc, time::Duration};
//! use taskwire_core::{Caller, CreateTask, MemoryStore, Message, Runtime, RuntimeConfig};
//! use taskwire_core::{ScriptedAgent, TaskService, TaskState};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let service = TaskService::new(Arc::new(MemoryStore::new()), "scripted");
//! let agent = Arc::new(ScriptedAgent::new());
//! let runtime = Runtime::start(service.clone(), agent, RuntimeConfig::default());
//! let me = Caller::local();
//! let created = service.create(&me, CreateTask::new(Message::user_text("hello"))).await?;
//! let id = created.task.id.clone();
//! let ended = |t: &taskwire_core::Task| t.state.is_terminal();
//! let task = service.wait_until(&me, &id, Duration::from_secs(5), ended).await?;
//! assert_eq!(task.state, TaskState::Completed);
//! assert_eq!(task.artifacts[0].text(), "hello"); // the scripted agent echoes
//! runtime.shutdown(Duration::from_secs(1)).await;
//! # Ok(())
//! # }
//! ```
//!
//! - [`types`]: tasks, messages, parts, artifacts, input requests, authorisations, reviews.
//! - [`transition`]: the transition table; every state change is checked there.
//! - [`event`]: the per-task event log every stream, subscription and poll reads.
//! - [`store`]: the storage contract ([`TaskStore`]) and the wake-up hub.
//! - [`record`]: the rows adapters keep beside a task (push configs, runs, sessions).
//! - [`service`]: commands and queries ([`TaskService`]), each a compare-and-set commit.
//! - [`agent`]: the [`Agent`] trait, [`AgentInfo`] and [`Skill`].
//! - [`turn`]: the [`TurnContext`] an agent works through and the [`TurnOutcome`] it ends with.
//! - [`guardrail`]: [`InputGuardrail`]s, run on input before anything is stored.
//! - [`runtime`]: claim queue, workers, leases, reaper, sweeper.
//! - [`memory`]: the in-memory store; [`scripted`]: the reference agent.

pub mod agent;
pub mod error;
pub mod event;
pub mod guardrail;
pub mod ids;
pub mod limits;
pub mod memory;
pub mod permission;
pub mod record;
mod record_memory;
pub mod record_workers;
pub mod runtime;
pub mod scripted;
pub mod service;
pub mod state;
pub mod store;
#[cfg(feature = "store-suite")]
pub mod store_suite;
mod subscribe;
pub mod transition;
pub mod turn;
pub mod types;

pub use agent::{Agent, AgentError, AgentInfo, Skill, TaskSupport, DEFAULT_SKILL_ID};
/// The attribute an `impl Agent` block needs (re-exported, so that implementing
/// [`Agent`] takes no dependency of its own).
pub use async_trait::async_trait;
pub use error::{CoreError, StoreError};
pub use event::{Event, EventKind, StepPhase};
pub use guardrail::{DenyPhrases, InputGuardrail};
pub use ids::TaskId;
pub use limits::Limits;
pub use memory::MemoryStore;
pub use record::{PutOutcome, Quota, Record, RecordKind, RecordLease, RecordScope};
pub use record_workers::RecordWorkers;
pub use runtime::{Runtime, RuntimeConfig};
pub use scripted::ScriptedAgent;
pub use service::{Access, CreateTask, Created, TaskDefaults, TaskService};
pub use store::{TaskStore, WakeHub};
pub use turn::{FlushHold, TurnContext, TurnOutcome};
pub use types::{
    Artifact, Caller, Message, Part, PartContent, Permission, Permissions, Role, Task, TaskState,
    Timestamp,
};
