//! One trait for the three A2A bindings: [`A2aBinding`].
//!
//! A2A 1.0 defines one set of operations and messages and three ways to carry
//! them: JSON-RPC ([`A2aClient`]), HTTP+JSON ([`A2aRestClient`]) and gRPC
//! ([`A2aGrpcClient`]). Each client keeps its own inherent methods (and the
//! binding's raw probes: `post_raw`, REST `call_raw`); this trait is what code
//! that should not care which binding it talks to holds, as
//! `Arc<dyn A2aBinding>`: the bridge's A2A upstreams and the conformance
//! suite's A2A driver. What is the same over every binding is written here
//! once: [`A2aBinding::send_text`], [`A2aBinding::wait_task`],
//! [`A2aBinding::subscribe_to_task`] (a resubscription without a cursor) and
//! [`A2aBinding::probe`].
//!
//! Every call through `dyn A2aBinding` costs one boxed future per call (the
//! `async_trait` shape); streams are the clients' own [`A2aStream`], so no
//! event pays for the indirection.

use std::time::Duration;

use async_trait::async_trait;

use crate::a2a::{
    is_interrupted, is_terminal, pb, text_request, A2aClient, A2aStream, BINDING_GRPC,
    BINDING_JSONRPC,
};
use crate::a2a_rest::{A2aRestClient, BINDING_HTTP_JSON};
use crate::config::{ClientConfig, Received};
use crate::error::ClientError;
use crate::grpc::A2aGrpcClient;

/// A task id no agent holds, asked for by [`A2aBinding::probe`] over bindings
/// without a card to fetch.
const PROBE_TASK_ID: &str = "taskwire-probe-no-such-task";

/// The A2A operations, over whichever binding the implementor speaks.
///
/// Results are the typed `lf.a2a.v1` messages with the JSON they came from
/// ([`Received`]); every failure is a [`ClientError`] (JSON-RPC and HTTP+JSON
/// errors as [`ClientError::Rpc`], gRPC ones as [`ClientError::Grpc`]).
#[async_trait]
pub trait A2aBinding: std::fmt::Debug + Send + Sync + 'static {
    /// The binding's name as agent cards spell it ([`crate::a2a::BINDING_JSONRPC`],
    /// [`crate::a2a_rest::BINDING_HTTP_JSON`], [`crate::a2a::BINDING_GRPC`]).
    fn binding(&self) -> &'static str;

    /// Where the calls go: the JSON-RPC endpoint, the HTTP+JSON interface url
    /// or the gRPC target.
    fn endpoint(&self) -> &str;

    /// The client's configuration.
    fn config(&self) -> &ClientConfig;

    /// The client itself, for the binding's own raw calls (downcast it).
    fn as_any(&self) -> &dyn std::any::Any;

    /// `SendMessage`: blocking unless `configuration.returnImmediately`.
    async fn send_message(
        &self,
        req: pb::SendMessageRequest,
    ) -> Result<Received<pb::SendMessageResponse>, ClientError>;

    /// `SendStreamingMessage`: a reconnecting stream of events.
    async fn send_streaming_message(
        &self,
        req: pb::SendMessageRequest,
    ) -> Result<A2aStream, ClientError>;

    /// `SubscribeToTask` resuming after `last_event_id` (JSON-RPC and
    /// HTTP+JSON: `Last-Event-ID`; gRPC: taskwire's `last-event-id`
    /// metadata), from the snapshot when `None`.
    async fn resubscribe(
        &self,
        id: &str,
        last_event_id: Option<&str>,
    ) -> Result<A2aStream, ClientError>;

    /// `GetTask`, with `historyLength` when given.
    async fn get_task(
        &self,
        id: &str,
        history_length: Option<i32>,
    ) -> Result<Received<pb::Task>, ClientError>;

    /// `ListTasks`.
    async fn list_tasks(
        &self,
        req: pb::ListTasksRequest,
    ) -> Result<Received<pb::ListTasksResponse>, ClientError>;

    /// `CancelTask`.
    async fn cancel_task(&self, id: &str) -> Result<Received<pb::Task>, ClientError>;

    /// `CreateTaskPushNotificationConfig`.
    async fn create_push_config(
        &self,
        config: pb::TaskPushNotificationConfig,
    ) -> Result<Received<pb::TaskPushNotificationConfig>, ClientError>;

    /// `GetTaskPushNotificationConfig`.
    async fn get_push_config(
        &self,
        task_id: &str,
        id: &str,
    ) -> Result<Received<pb::TaskPushNotificationConfig>, ClientError>;

    /// `ListTaskPushNotificationConfigs`.
    async fn list_push_configs(
        &self,
        task_id: &str,
    ) -> Result<Received<pb::ListTaskPushNotificationConfigsResponse>, ClientError>;

    /// `DeleteTaskPushNotificationConfig`.
    async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<(), ClientError>;

    /// `GetExtendedAgentCard`.
    async fn extended_agent_card(&self) -> Result<Received<pb::AgentCard>, ClientError>;

    /// `SubscribeToTask`: the task snapshot, then its updates.
    async fn subscribe_to_task(&self, id: &str) -> Result<A2aStream, ClientError> {
        self.resubscribe(id, None).await
    }

    /// `SendMessage` with one text part; `return_immediately` as asked.
    async fn send_text(
        &self,
        text: &str,
        return_immediately: bool,
    ) -> Result<Received<pb::SendMessageResponse>, ClientError> {
        self.send_message(text_request(text, return_immediately))
            .await
    }

    /// Polls `GetTask` at the config's poll interval until the task is
    /// terminal or interrupted, at most for `limit`.
    async fn wait_task(
        &self,
        id: &str,
        limit: Duration,
    ) -> Result<Received<pb::Task>, ClientError> {
        let poll = self.config().poll_interval;
        let deadline = crate::config::after(limit);
        loop {
            let t = self.get_task(id, None).await?;
            let state = t.status.as_ref().map(|s| s.state());
            if state.is_some_and(|s| is_terminal(s) || is_interrupted(s)) {
                return Ok(t);
            }
            if crate::config::after(poll) > deadline {
                return Err(ClientError::Timeout(format!(
                    "task {id} still {state:?} after {} ms",
                    limit.as_millis()
                )));
            }
            tokio::time::sleep(poll).await;
        }
    }

    /// Whether the server answers at all: by default a `GetTask` of a task
    /// no agent holds, where any A2A error is an answer; the HTTP bindings
    /// fetch the agent card instead. `Err` is what kept it from answering.
    async fn probe(&self) -> Result<(), ClientError> {
        probe_by_get_task(self).await
    }
}

/// The default [`A2aBinding::probe`]: a `GetTask` of a task no agent holds,
/// where any A2A error (not a transient one) is an answer.
async fn probe_by_get_task<B: A2aBinding + ?Sized>(b: &B) -> Result<(), ClientError> {
    match b.get_task(PROBE_TASK_ID, None).await {
        Ok(_) => Ok(()),
        Err(e)
            if !e.is_transient() && matches!(e, ClientError::Rpc(_) | ClientError::Grpc { .. }) =>
        {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Implements [`A2aBinding`] for a client whose inherent methods already have
/// the trait's names and shapes; `$endpoint` names its endpoint accessor and
/// `$probe` how it shows it answers (`card`: fetch the agent card; `default`:
/// the trait's `GetTask` probe).
macro_rules! a2a_binding {
    ($ty:ty, $name:expr, $endpoint:ident, $probe:tt) => {
        #[async_trait]
        impl A2aBinding for $ty {
            fn binding(&self) -> &'static str {
                $name
            }
            fn endpoint(&self) -> &str {
                <$ty>::$endpoint(self)
            }
            fn config(&self) -> &ClientConfig {
                <$ty>::config(self)
            }
            fn as_any(&self) -> &dyn std::any::Any {
                self
            }
            async fn send_message(
                &self,
                req: pb::SendMessageRequest,
            ) -> Result<Received<pb::SendMessageResponse>, ClientError> {
                <$ty>::send_message(self, req).await
            }
            async fn send_streaming_message(
                &self,
                req: pb::SendMessageRequest,
            ) -> Result<A2aStream, ClientError> {
                <$ty>::send_streaming_message(self, req).await
            }
            async fn resubscribe(
                &self,
                id: &str,
                last_event_id: Option<&str>,
            ) -> Result<A2aStream, ClientError> {
                <$ty>::resubscribe(self, id, last_event_id).await
            }
            async fn get_task(
                &self,
                id: &str,
                history_length: Option<i32>,
            ) -> Result<Received<pb::Task>, ClientError> {
                <$ty>::get_task(self, id, history_length).await
            }
            async fn list_tasks(
                &self,
                req: pb::ListTasksRequest,
            ) -> Result<Received<pb::ListTasksResponse>, ClientError> {
                <$ty>::list_tasks(self, req).await
            }
            async fn cancel_task(&self, id: &str) -> Result<Received<pb::Task>, ClientError> {
                <$ty>::cancel_task(self, id).await
            }
            async fn create_push_config(
                &self,
                config: pb::TaskPushNotificationConfig,
            ) -> Result<Received<pb::TaskPushNotificationConfig>, ClientError> {
                <$ty>::create_push_config(self, config).await
            }
            async fn get_push_config(
                &self,
                task_id: &str,
                id: &str,
            ) -> Result<Received<pb::TaskPushNotificationConfig>, ClientError> {
                <$ty>::get_push_config(self, task_id, id).await
            }
            async fn list_push_configs(
                &self,
                task_id: &str,
            ) -> Result<Received<pb::ListTaskPushNotificationConfigsResponse>, ClientError> {
                <$ty>::list_push_configs(self, task_id).await
            }
            async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<(), ClientError> {
                <$ty>::delete_push_config(self, task_id, id).await
            }
            async fn extended_agent_card(&self) -> Result<Received<pb::AgentCard>, ClientError> {
                <$ty>::extended_agent_card(self).await
            }
            async fn probe(&self) -> Result<(), ClientError> {
                a2a_binding!(@probe $probe self, $ty)
            }
        }
    };
    (@probe card $self:ident, $ty:ty) => {
        <$ty>::agent_card($self).await.map(|_| ())
    };
    (@probe default $self:ident, $ty:ty) => {
        probe_by_get_task($self).await
    };
}

a2a_binding!(A2aClient, BINDING_JSONRPC, endpoint, card);
a2a_binding!(A2aRestClient, BINDING_HTTP_JSON, url, card);
a2a_binding!(A2aGrpcClient, BINDING_GRPC, target, default);
