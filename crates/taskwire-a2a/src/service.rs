//! The A2A service layer the three bindings share: every A2A operation, on the
//! generated `lf.a2a.v1` messages, over the core's [`TaskService`]. The JSON-RPC
//! binding, the HTTP+JSON binding ([`crate::rest`]) and the gRPC binding
//! (`taskwire-grpc`) only decode, call this and encode.

use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use prost::Message as _;
use taskwire_core::event::EventKind;
use taskwire_core::store::{ListOrder, ListQuery, TaskWake};
use taskwire_core::{Access, Agent, Caller, CreateTask, Task, TaskId, TaskService};
use taskwire_vocab::a2a::{self as vocab, A2aErrorKind, A2aState};

use crate::card;
use crate::convert::{self, FrameBuilder, TaskView};
use crate::encoded::EncodedCache;
use crate::error::{A2aError, Result};
use crate::pb;
use crate::push::PushManager;
use crate::A2aConfig;

pub use crate::http::{
    check_version, negotiate, Requested, EXTENSIONS_HEADER, PROTOCOL_VERSION, PROTOCOL_VERSION_1_1,
    VERSION_HEADER,
};

/// One stream frame with the event-log sequence number it reflects (the SSE `id:`).
pub type Frame = (u64, pb::StreamResponse);
/// A stream of frames; an error ends it.
pub type FrameStream = Pin<Box<dyn Stream<Item = Result<Frame>> + Send>>;

/// The shared A2A service.
#[derive(Clone)]
pub struct A2aService {
    inner: Arc<Inner>,
}

struct Inner {
    service: TaskService,
    agent: Arc<dyn Agent>,
    config: A2aConfig,
    push: PushManager,
    /// GetTask answers already encoded as ProtoJSON, by task version.
    encoded: EncodedCache,
    /// GetTask answers already encoded as protobuf (gRPC), by task version.
    encoded_pb: EncodedCache<Bytes>,
}

/// Encodings of polled tasks kept per generation (see [`EncodedCache`]).
const ENCODED_CACHE_CAPACITY: usize = 4096;

impl std::fmt::Debug for A2aService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aService")
            .field("service", &self.inner.service)
            .finish()
    }
}

fn parse_id(id: &str) -> Result<TaskId> {
    TaskId::parse(id).map_err(|_| A2aError::task_not_found())
}

fn is_settled(t: &Task) -> bool {
    t.state.is_terminal() || t.state.is_interrupted()
}

impl A2aService {
    /// The service over the core, for this agent.
    pub fn new(service: TaskService, agent: Arc<dyn Agent>, config: A2aConfig) -> Self {
        let push = PushManager::new(service.clone(), &config);
        Self {
            inner: Arc::new(Inner {
                service,
                agent,
                config,
                push,
                encoded: EncodedCache::new(ENCODED_CACHE_CAPACITY),
                encoded_pb: EncodedCache::new(ENCODED_CACHE_CAPACITY),
            }),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &A2aConfig {
        &self.inner.config
    }

    /// The core service.
    pub fn core(&self) -> &TaskService {
        &self.inner.service
    }

    /// The push notification manager.
    pub fn push(&self) -> &PushManager {
        &self.inner.push
    }

    /// The public agent card.
    pub fn agent_card(&self) -> pb::AgentCard {
        card::build(
            &self.inner.agent.info().with_default_skill(),
            &self.inner.config,
            false,
        )
    }

    /// GetExtendedAgentCard. A card that does not declare
    /// `capabilities.extendedAgentCard` makes the call UnsupportedOperation
    /// (A2A 1.0 §3.3.4); ExtendedAgentCardNotConfigured is for an agent that
    /// declares one it has not configured, which taskwire never does (the card
    /// declares it exactly when it is served).
    pub fn extended_agent_card(&self, caller: &Caller) -> Result<pb::AgentCard> {
        caller.require(taskwire_core::Permission::Read)?;
        if !self.inner.config.extended_card {
            return Err(A2aError::new(
                A2aErrorKind::UnsupportedOperation,
                "this agent does not declare an extended agent card \
                 (capabilities.extendedAgentCard is false)",
            ));
        }
        Ok(card::build(
            &self.inner.agent.info().with_default_skill(),
            &self.inner.config,
            true,
        ))
    }

    fn check_content_types(&self, m: &taskwire_core::Message) -> Result<()> {
        let accepted = &self.inner.config.input_modes;
        for p in &m.parts {
            if let Some(mt) = &p.media_type {
                if !vocab::media_type_accepted(mt, accepted) {
                    return Err(A2aError::new(
                        A2aErrorKind::ContentTypeNotSupported,
                        format!(
                            "media type {mt:?} is not supported; accepted: {}",
                            accepted.join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Starts or continues a task from a SendMessage request. Returns the task
    /// (not yet waited on), or a direct reply.
    async fn start(
        &self,
        caller: &Caller,
        v: Requested,
        req: pb::SendMessageRequest,
    ) -> Result<Started> {
        // 1.1: a continuation is refused unless the task is at this generation.
        let if_match = req
            .configuration
            .as_ref()
            .and_then(|c| c.if_generation_match)
            .filter(|_| v.is_1_1());
        let Some(msg) = req.message else {
            return Err(A2aError::invalid_params("params.message", "is required"));
        };
        let context_id = msg.context_id.clone();
        let task_id = msg.task_id.clone();
        let message = convert::message_from_pb(msg)?;
        self.check_content_types(&message)?;
        let push_config = req
            .configuration
            .as_ref()
            .and_then(|c| c.task_push_notification_config.clone());
        if push_config.is_some() && !self.inner.config.push_notifications {
            return Err(push_unsupported());
        }
        let svc = &self.inner.service;
        let task = if !task_id.is_empty() {
            let id = parse_id(&task_id)?;
            let current = svc.get(caller, &id).await?;
            if !context_id.is_empty() && context_id != current.context_id {
                return Err(A2aError::invalid_params(
                    "message.contextId",
                    format!("does not match the task's context {}", current.context_id),
                ));
            }
            if current
                .history
                .iter()
                .any(|m| m.message_id == message.message_id)
            {
                // A retried continuation: already stored, nothing more to do.
                return Ok(Started::Task(Arc::new(current), None));
            }
            if let Some(want) = if_match {
                let have = i64::try_from(current.last_seq).unwrap_or(i64::MAX);
                if want != have {
                    return Err(A2aError::new(
                        A2aErrorKind::TaskGenerationMismatch,
                        format!(
                            "task generation mismatch: expected {want} but the task is at {have}"
                        ),
                    ));
                }
            }
            if current.state.is_terminal() {
                return Err(A2aError::new(
                    A2aErrorKind::UnsupportedOperation,
                    format!(
                        "task is {}, which is terminal; it accepts no more messages",
                        vocab::state_to_a2a(current.state).name()
                    ),
                ));
            }
            (Arc::new(svc.send_input(caller, &id, message).await?), None)
        } else {
            if let Some(reply) = self.inner.agent.direct_reply(caller, &message).await {
                let ctx = if context_id.is_empty() {
                    taskwire_core::ids::random_id()
                } else {
                    context_id
                };
                return Ok(Started::Reply(convert::direct_message_to_pb(&reply, &ctx)));
            }
            let mut create = CreateTask::new(message);
            create.context_id = (!context_id.is_empty()).then_some(context_id);
            create.metadata = req
                .metadata
                .as_ref()
                .map(convert::struct_to_map)
                .unwrap_or_default();
            let created = svc.create_watched(caller, create).await?;
            if !created.created {
                // A retried create: the first call registered its push config.
                return Ok(Started::Task(created.task, None));
            }
            (created.task, created.watch)
        };
        let (task, watch) = task;
        if let Some(mut pc) = push_config {
            pc.task_id = task.id.as_str().to_string();
            self.inner.push.create(caller, &task, pc).await?;
        }
        Ok(Started::Task(task, watch))
    }

    /// SendMessage: blocks until the task is terminal or interrupted unless
    /// `returnImmediately`; a retry with the same messageId returns the same task.
    pub async fn send_message(
        &self,
        caller: &Caller,
        v: Requested,
        req: pb::SendMessageRequest,
    ) -> Result<pb::SendMessageResponse> {
        self.inner.push.resume_once();
        use pb::send_message_response::Payload;
        let (history_length, immediate) = match &req.configuration {
            Some(c) => (
                convert::history_length(c.history_length, "params.configuration.historyLength")?,
                c.return_immediately,
            ),
            None => (None, false),
        };
        let task = match self.start(caller, v, req).await? {
            Started::Reply(m) => {
                return Ok(pb::SendMessageResponse {
                    payload: Some(Payload::Message(m)),
                })
            }
            Started::Task(t, watch) => (t, watch),
        };
        let (task, watch) = task;
        let timeout = self.inner.config.blocking_timeout;
        let task = if immediate || is_settled(&task) {
            task
        } else {
            let svc = &self.inner.service;
            match watch {
                Some(rx) => {
                    svc.wait_for_state_from(caller, task, rx, timeout, |s| s.is_interrupted())
                        .await?
                }
                None => {
                    svc.wait_for_state_shared(caller, &task.id, timeout, |s| s.is_interrupted())
                        .await?
                }
            }
        };
        let view = TaskView {
            history_length,
            without_artifacts: false,
            generation: v.is_1_1(),
        };
        Ok(pb::SendMessageResponse {
            payload: Some(Payload::Task(convert::task_to_pb(&task, view))),
        })
    }

    /// SendStreamingMessage: the task snapshot, then its updates until it is
    /// terminal or interrupted. With `last_event_id` (a reconnect with the same
    /// messageId), frames resume after that sequence number without a snapshot.
    pub async fn send_streaming_message(
        &self,
        caller: &Caller,
        v: Requested,
        req: pb::SendMessageRequest,
        last_event_id: Option<u64>,
    ) -> Result<FrameStream> {
        self.check_streaming()?;
        self.inner.push.resume_once();
        let history_length = match &req.configuration {
            Some(c) => {
                convert::history_length(c.history_length, "params.configuration.historyLength")?
            }
            None => None,
        };
        let task = match self.start(caller, v, req).await? {
            Started::Reply(m) => {
                let frame = pb::StreamResponse {
                    payload: Some(pb::stream_response::Payload::Message(m)),
                };
                return Ok(Box::pin(futures::stream::once(
                    async move { Ok((0, frame)) },
                )));
            }
            Started::Task(t, _) => Arc::unwrap_or_clone(t),
        };
        let view = TaskView {
            history_length,
            without_artifacts: false,
            generation: v.is_1_1(),
        };
        self.frames(caller, task, view, last_event_id, true).await
    }

    /// SubscribeToTask: the task snapshot, then updates until the task is terminal
    /// (staying open through interrupts). A terminal task is UnsupportedOperation,
    /// unless `last_event_id` asks to resume a stream that missed its end.
    pub async fn subscribe_to_task(
        &self,
        caller: &Caller,
        v: Requested,
        req: pb::SubscribeToTaskRequest,
        last_event_id: Option<u64>,
    ) -> Result<FrameStream> {
        self.check_streaming()?;
        self.inner.push.resume_once();
        let id = parse_id(&req.id)?;
        let task = self.inner.service.get(caller, &id).await?;
        let resumable = last_event_id.is_some_and(|n| n < task.last_seq);
        if task.state.is_terminal() && !resumable {
            return Err(A2aError::new(
                A2aErrorKind::UnsupportedOperation,
                format!(
                    "task is {}, which is terminal; there is nothing to subscribe to",
                    vocab::state_to_a2a(task.state).name()
                ),
            ));
        }
        let view = TaskView {
            generation: v.is_1_1(),
            ..TaskView::default()
        };
        self.frames(caller, task, view, last_event_id, false).await
    }

    async fn frames(
        &self,
        caller: &Caller,
        task: Task,
        view: TaskView,
        last_event_id: Option<u64>,
        close_on_interrupt: bool,
    ) -> Result<FrameStream> {
        let (after, first) = match last_event_id {
            Some(n) => (n, None),
            None => (
                task.last_seq,
                Some((task.last_seq, convert::task_frame(&task, view))),
            ),
        };
        let done_at_start = match last_event_id {
            None => task.state.is_terminal() || (close_on_interrupt && task.state.is_interrupted()),
            Some(n) => n >= task.last_seq && task.state.is_terminal(),
        };
        let head = futures::stream::iter(first.map(Ok));
        if done_at_start {
            return Ok(Box::pin(head));
        }
        let events = self
            .inner
            .service
            .subscribe(Access::Owner(caller), &task.id, after)
            .await?;
        let builder = FrameBuilder::new(&task).with_generation(view.generation);
        let tail = futures::stream::unfold(
            (events, builder, false),
            move |(mut events, mut b, done)| async move {
                if done {
                    return None;
                }
                loop {
                    match events.next().await {
                        None => return None,
                        Some(Err(e)) => return Some((Err(A2aError::from(e)), (events, b, true))),
                        Some(Ok(ev)) => {
                            let Some(frame) = b.frame(&ev) else { continue };
                            // Only a status change ends a stream.
                            let end = match &ev.kind {
                                EventKind::Status { to, .. } => {
                                    to.is_terminal() || (close_on_interrupt && to.is_interrupted())
                                }
                                _ => false,
                            };
                            return Some((Ok((ev.seq, frame)), (events, b, end)));
                        }
                    }
                }
            },
        );
        Ok(Box::pin(head.chain(tail)))
    }

    /// GetTask.
    pub async fn get_task(
        &self,
        caller: &Caller,
        v: Requested,
        req: pb::GetTaskRequest,
    ) -> Result<pb::Task> {
        let (task, view) = self.read_task(caller, v, &req).await?;
        Ok(convert::task_to_pb(&task, view))
    }

    /// GetTask answered as ProtoJSON text (the JSON-RPC binding's result). A task
    /// polled again without having changed reuses the encoding of its version.
    pub async fn get_task_json(
        &self,
        caller: &Caller,
        v: Requested,
        req: pb::GetTaskRequest,
    ) -> Result<Arc<str>> {
        let (task, view) = self.read_task(caller, v, &req).await?;
        if view.generation {
            // 1.1 answers are not cached: the cache holds 1.0 encodings.
            return Ok(crate::protojson::to_string(&convert::task_to_pb(&task, view))?.into());
        }
        let key = (task.id.clone(), task.version, view.history_length);
        if let Some(text) = self.inner.encoded.get(&key) {
            return Ok(text);
        }
        let text: Arc<str> = crate::protojson::to_string(&convert::task_to_pb(&task, view))?.into();
        self.inner.encoded.put(key, text.clone());
        Ok(text)
    }

    /// GetTask answered as an encoded protobuf `Task` (the gRPC binding's
    /// answer). A task polled again without having changed reuses the encoding
    /// of its version.
    pub async fn get_task_proto(
        &self,
        caller: &Caller,
        v: Requested,
        req: pb::GetTaskRequest,
    ) -> Result<Bytes> {
        let (task, view) = self.read_task(caller, v, &req).await?;
        if view.generation {
            return Ok(Bytes::from(
                convert::task_to_pb(&task, view).encode_to_vec(),
            ));
        }
        let key = (task.id.clone(), task.version, view.history_length);
        if let Some(bytes) = self.inner.encoded_pb.get(&key) {
            return Ok(bytes);
        }
        let bytes = Bytes::from(convert::task_to_pb(&task, view).encode_to_vec());
        self.inner.encoded_pb.put(key, bytes.clone());
        Ok(bytes)
    }

    /// What every GetTask answer starts from: the caller's task and the view asked for.
    /// With A2A 1.1's `currentGeneration` at or above the task's generation,
    /// the answer waits (long poll) until the task moves past it, or
    /// `long_poll_max` passes, or the task is terminal.
    async fn read_task(
        &self,
        caller: &Caller,
        v: Requested,
        req: &pb::GetTaskRequest,
    ) -> Result<(Arc<Task>, TaskView)> {
        self.inner.push.resume_once();
        let history_length = convert::history_length(req.history_length, "params.historyLength")?;
        let id = parse_id(&req.id)?;
        let mut task = self.inner.service.get_shared(caller, &id).await?;
        if let Some(g) = req.current_generation.filter(|_| v.is_1_1()) {
            task = self.long_poll(caller, task, g).await?;
        }
        Ok((
            task,
            TaskView {
                history_length,
                without_artifacts: false,
                generation: v.is_1_1(),
            },
        ))
    }

    /// Waits until `task`'s generation (its event-log sequence) is above
    /// `generation`: woken by the task's events, the same wake-ups streams use
    /// (so a change made on another node of a PostgreSQL store wakes it too);
    /// bounded by `long_poll_max`. Answers at once when the task is already
    /// past it or terminal.
    async fn long_poll(
        &self,
        caller: &Caller,
        task: Arc<Task>,
        generation: i64,
    ) -> Result<Arc<Task>> {
        let past = |seq: u64| i64::try_from(seq).unwrap_or(i64::MAX) > generation;
        if past(task.last_seq) || task.state.is_terminal() {
            return Ok(task);
        }
        let deadline = tokio::time::Instant::now() + self.inner.config.long_poll_max;
        let mut events = self
            .inner
            .service
            .subscribe(Access::Owner(caller), &task.id, task.last_seq)
            .await?;
        loop {
            match tokio::time::timeout_at(deadline, events.next()).await {
                Err(_) | Ok(None) => break,
                Ok(Some(Err(e))) => return Err(A2aError::from(e)),
                Ok(Some(Ok(ev))) if past(ev.seq) => break,
                Ok(Some(Ok(_))) => {}
            }
        }
        drop(events);
        Ok(self.inner.service.get_shared(caller, &task.id).await?)
    }

    /// ListTasks: the caller's tasks, filtered by context, state and status time,
    /// newest first, paged with an opaque token.
    pub async fn list_tasks(
        &self,
        caller: &Caller,
        v: Requested,
        req: pb::ListTasksRequest,
    ) -> Result<pb::ListTasksResponse> {
        self.inner.push.resume_once();
        let page_size = match req.page_size {
            None => 50,
            Some(n) if (1..=100).contains(&n) => n as usize,
            Some(_) => {
                return Err(A2aError::invalid_params(
                    "params.pageSize",
                    "must be between 1 and 100",
                ))
            }
        };
        let history_length = convert::history_length(req.history_length, "params.historyLength")?;
        let state = match req.status {
            0 => None,
            n => {
                let s = A2aState::from_number(n)
                    .ok_or_else(|| A2aError::invalid_params("params.status", "unknown state"))?;
                Some(vocab::state_from_a2a(s)?)
            }
        };
        let after = req
            .status_timestamp_after
            .map(|t| convert::timestamp_from_pb(t, "params.statusTimestampAfter"))
            .transpose()?;
        let mut q = ListQuery::default();
        q.context_id = (!req.context_id.is_empty()).then_some(req.context_id);
        q.state = state;
        // A2A lists newest status first, filtered by status time.
        q.changed_since = after;
        q.order = ListOrder::StateChanged;
        q.page_size = page_size;
        q.cursor = (!req.page_token.is_empty()).then_some(req.page_token);
        let page = self
            .inner
            .service
            .list(caller, q)
            .await
            .map_err(|e| match e {
                taskwire_core::CoreError::InvalidInput { field, reason }
                    if field == "pageToken" =>
                {
                    A2aError::invalid_params("params.pageToken", reason)
                }
                other => A2aError::from(other),
            })?;
        let view = TaskView {
            history_length,
            without_artifacts: !req.include_artifacts.unwrap_or(false),
            generation: v.is_1_1(),
        };
        let tasks = page
            .tasks
            .iter()
            .map(|t| convert::task_to_pb(t, view))
            .collect();
        Ok(pb::ListTasksResponse {
            tasks,
            next_page_token: page.next_cursor.unwrap_or_default(),
            page_size: page_size as i32,
            total_size: i32::try_from(page.total).unwrap_or(i32::MAX),
        })
    }

    /// CancelTask: idempotent on a canceled task; TaskNotCancelable on a task that
    /// ended otherwise.
    pub async fn cancel_task(
        &self,
        caller: &Caller,
        v: Requested,
        req: pb::CancelTaskRequest,
    ) -> Result<pb::Task> {
        self.inner.push.resume_once();
        let id = parse_id(&req.id)?;
        let task = self
            .inner
            .service
            .cancel(Access::Owner(caller), &id, None)
            .await?;
        let view = TaskView {
            generation: v.is_1_1(),
            ..TaskView::default()
        };
        Ok(convert::task_to_pb(&task, view))
    }

    /// A2A 1.0 §3.3.4: with `capabilities.streaming` false on the card,
    /// SendStreamingMessage and SubscribeToTask are UnsupportedOperation.
    fn check_streaming(&self) -> Result<()> {
        if self.inner.config.streaming {
            Ok(())
        } else {
            Err(A2aError::new(
                A2aErrorKind::UnsupportedOperation,
                "streaming is not enabled on this server (capabilities.streaming is false)",
            ))
        }
    }

    fn check_push(&self) -> Result<()> {
        if self.inner.config.push_notifications {
            Ok(())
        } else {
            Err(push_unsupported())
        }
    }

    /// CreateTaskPushNotificationConfig.
    pub async fn create_push_config(
        &self,
        caller: &Caller,
        req: pb::TaskPushNotificationConfig,
    ) -> Result<pb::TaskPushNotificationConfig> {
        caller.require(taskwire_core::Permission::Write)?;
        self.inner.push.resume_once();
        self.check_push()?;
        let id = parse_id(&req.task_id)?;
        let task = self.inner.service.get(caller, &id).await?;
        self.inner.push.create(caller, &task, req).await
    }

    /// GetTaskPushNotificationConfig.
    pub async fn get_push_config(
        &self,
        caller: &Caller,
        req: pb::GetTaskPushNotificationConfigRequest,
    ) -> Result<pb::TaskPushNotificationConfig> {
        self.inner.push.resume_once();
        self.check_push()?;
        let id = parse_id(&req.task_id)?;
        self.inner.service.get(caller, &id).await?;
        // A2A 1.0 §3.1.8: a config that does not exist is TaskNotFoundError.
        self.inner.push.get(&id, &req.id).await?.ok_or_else(|| {
            A2aError::new(
                A2aErrorKind::TaskNotFound,
                "no push notification config with this id on this task",
            )
        })
    }

    /// ListTaskPushNotificationConfigs.
    pub async fn list_push_configs(
        &self,
        caller: &Caller,
        req: pb::ListTaskPushNotificationConfigsRequest,
    ) -> Result<pb::ListTaskPushNotificationConfigsResponse> {
        self.inner.push.resume_once();
        self.check_push()?;
        let id = parse_id(&req.task_id)?;
        self.inner.service.get(caller, &id).await?;
        Ok(pb::ListTaskPushNotificationConfigsResponse {
            configs: self.inner.push.list(&id).await?,
            next_page_token: String::new(),
        })
    }

    /// DeleteTaskPushNotificationConfig: idempotent, as A2A 1.0 requires. Deleting
    /// a config that is already gone (or never was) succeeds; only a task the
    /// caller cannot see is an error (TaskNotFound).
    pub async fn delete_push_config(
        &self,
        caller: &Caller,
        req: pb::DeleteTaskPushNotificationConfigRequest,
    ) -> Result<()> {
        caller.require(taskwire_core::Permission::Write)?;
        self.inner.push.resume_once();
        self.check_push()?;
        let id = parse_id(&req.task_id)?;
        self.inner.service.get(caller, &id).await?;
        let removed = self.inner.push.delete(&id, &req.id).await?;
        if !removed {
            tracing::debug!(task = %id, config = %req.id, "a2a: push config already gone; delete succeeds");
        }
        Ok(())
    }
}

fn push_unsupported() -> A2aError {
    A2aError::new(
        A2aErrorKind::PushNotificationNotSupported,
        "push notifications are not enabled on this server",
    )
}

enum Started {
    /// The task, with a watch that began before it was stored when this call
    /// created it.
    Task(Arc<Task>, Option<tokio::sync::watch::Receiver<TaskWake>>),
    Reply(pb::Message),
}
