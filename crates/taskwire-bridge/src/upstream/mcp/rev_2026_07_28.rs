//! The MCP upstream executor's revision 2026-07-28 part: a server that
//! answers `server/discover`, over Streamable HTTP.
//!
//! When the server offers the tasks extension, a turn's `tools/call` is
//! answered with a task, which the turn follows by polling `tasks/get`; an
//! `input_required` upstream task's input requests become the downstream
//! task's (form elicitations as keyed input requests with the same key, prompt
//! and schema; URL elicitations as provider authorisations), and the next
//! turn sends the downstream answers back with `tasks/update`. A server
//! without the extension is called with a plain blocking `tools/call`; one
//! that answers `input_required` without a task (SEP-2322) is called again
//! with the answers and its `requestState`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use taskwire_client::mcp::{
    DetailedTask, DiscoverResult, ElicitResult, McpClient, ToolCallOutcome,
};
use taskwire_client::ClientError;
use taskwire_core::{CoreError, Message, TaskStore, TurnContext, TurnOutcome};
use taskwire_vocab::upstream::mcp::{self as vocab, UpstreamAsk};
use taskwire_vocab::upstream::UpstreamState;
use tracing::{debug, info, warn};

use super::link::{Asked, McpLink, PROTOCOL};
use super::plan::Plan;
use super::served::{agent_info, choose_tools, Served};
use crate::bridged::TurnStart;
use crate::cancel_watch::{downstream_canceled, end_canceled, watch_cancels};
use crate::error::BridgeError;
use crate::options::{retrying, UpstreamOptions};
use crate::retry::answered;
use crate::telemetry::{reattached, timed};

/// The longest wait between two `tasks/get` polls, whatever the upstream
/// suggests.
const MAX_POLL: Duration = Duration::from_secs(5);

/// An MCP upstream spoken to in revision 2026-07-28.
#[derive(Clone)]
pub struct Upstream2026_07_28 {
    client: McpClient,
    pub(crate) served: Served,
    /// The tools marked idempotent (`annotations.idempotentHint`): a blocking
    /// call of one lost with its bridge process is made again.
    idempotent: Arc<std::collections::HashSet<String>>,
}

impl Upstream2026_07_28 {
    /// The upstream that answered `server/discover` with `discovered`:
    /// its tools listed (`tools/list`), `tool` alone or all of them.
    pub(crate) async fn discovered(
        endpoint: &str,
        tool: Option<&str>,
        opts: &UpstreamOptions,
        client: McpClient,
        discovered: DiscoverResult,
    ) -> Result<Self, BridgeError> {
        let tasks = McpClient::offers_tasks(&discovered) && opts.mcp_tasks;
        let listed = retrying(endpoint, opts, "tools/list", || client.list_tools())
            .await?
            .into_inner();
        let chosen = choose_tools(listed, tool)?;
        let idempotent = chosen
            .iter()
            .filter(|t| vocab::tool_is_idempotent(t))
            .map(|t| t.name.clone())
            .collect();
        let (name, version) = discovered
            .meta
            .as_ref()
            .map(|m| (m.server_info.name.clone(), m.server_info.version.clone()))
            .unwrap_or_else(|| ("upstream".to_string(), String::new()));
        let (info, tools) = agent_info(
            endpoint,
            name,
            version,
            discovered.instructions.clone(),
            &chosen,
        );
        info!(upstream = %endpoint, tasks, tools = ?tools.iter().map(|t| &t.0).collect::<Vec<_>>(),
            "MCP upstream discovered");
        Ok(Self {
            client: client.declare_tasks_extension(tasks),
            served: Served::new(endpoint, info, tools, tasks, opts),
            idempotent: Arc::new(idempotent),
        })
    }

    /// With the store: a watcher cancelling (`tasks/cancel`) the upstream
    /// task of a linked downstream task canceled while no turn runs.
    pub(crate) fn with_store(
        mut self,
        store: Arc<dyn TaskStore>,
        route: Option<crate::many::Route>,
    ) -> Self {
        let client = self.client.clone();
        let watcher = watch_cancels(
            store.clone(),
            PROTOCOL,
            route,
            self.served.link_bounds,
            move |task_id| {
                let client = client.clone();
                async move {
                    timed(PROTOCOL, "tasks/cancel", client.cancel_task(&task_id))
                        .await
                        .map(|_| ())
                }
            },
        );
        self.served = self.served.with_store(store, watcher);
        self
    }

    /// Ready when `server/discover` is answered (any JSON-RPC answer counts).
    pub(crate) async fn probe(&self) -> Result<(), String> {
        match timed(PROTOCOL, "server/discover", self.client.discover()).await {
            Ok(_) => Ok(()),
            Err(e) if answered(&e) => Ok(()),
            Err(e) => Err(format!("upstream {}: {e}", self.served.endpoint)),
        }
    }

    /// Carries out the plan of one downstream turn.
    pub(crate) async fn run(
        &self,
        turn: TurnStart<'_, McpLink>,
        plan: Plan,
    ) -> Result<TurnOutcome, BridgeError> {
        Turn::new(self, turn).run(plan).await
    }
}

/// How a turn whose blocking call was lost ends when the tool is not
/// idempotent (both revisions): failed, saying the upstream may have run it.
pub(super) fn lost_call(tool: &str) -> TurnOutcome {
    TurnOutcome::Failed {
        message: format!(
            "the blocking call of upstream tool {tool} was cut when the bridge stopped (crashed or was killed) before its answer was read; the upstream may have run the tool, which is not marked idempotent (annotations.idempotentHint), so it was not called again: {}",
            vocab::LOSS_MCP_BLOCKING_CALL_LOST.0
        ),
    }
}

/// One downstream turn.
struct Turn<'a> {
    up: &'a Served,
    idempotent: &'a std::collections::HashSet<String>,
    client: &'a McpClient,
    ctx: &'a TurnContext,
    number: u32,
    link: Option<McpLink>,
}

impl<'a> Turn<'a> {
    fn new(up: &'a Upstream2026_07_28, turn: TurnStart<'a, McpLink>) -> Self {
        Self {
            up: &up.served,
            idempotent: &up.idempotent,
            client: &up.client,
            ctx: turn.ctx,
            number: turn.number,
            link: turn.link,
        }
    }

    async fn run(mut self, plan: Plan) -> Result<TurnOutcome, BridgeError> {
        match plan {
            Plan::Resume(l) => {
                let responses = self.responses(&l);
                let tool = l.tool.clone();
                self.call_tool(tool, Some(responses), l.request_state.clone())
                    .await
            }
            Plan::Reattach(l) => {
                info!(task = %self.ctx.task().id, upstream_task = %l.task_id, turn = self.number,
                    "re-attaching to the upstream MCP task");
                reattached(PROTOCOL);
                self.follow(&l.task_id).await
            }
            Plan::Answer(l) => {
                let responses = self.responses(&l);
                if !responses.is_empty() {
                    debug!(task = %self.ctx.task().id, upstream_task = %l.task_id,
                        keys = ?responses.keys().collect::<Vec<_>>(), "answering upstream");
                    // Sent again only when nothing of it reached the
                    // upstream: answers given twice may be refused.
                    let sent = crate::retry::sent_again(
                        self.ctx,
                        &self.up.backoff,
                        "tasks/update",
                        ClientError::is_unsent,
                        || {
                            timed(
                                PROTOCOL,
                                "tasks/update",
                                self.client.update_task(&l.task_id, responses.clone()),
                            )
                        },
                    )
                    .await?;
                    if sent.is_none() {
                        return self.stopped().await;
                    }
                }
                let next = McpLink {
                    turn: self.number,
                    asked: Vec::new(),
                    ..l.clone()
                };
                self.store_link(next).await?;
                // Without a usable answer the upstream task still asks: the
                // follow raises its requests again.
                self.follow(&l.task_id).await
            }
            Plan::Call => self.call().await,
            Plan::Lost(l) => {
                if !self.idempotent.contains(&l.tool) {
                    warn!(task = %self.ctx.task().id, tool = %l.tool,
                        "a blocking upstream call was cut by a stop of the bridge; the tool is not idempotent, so it is not called again");
                    return Ok(lost_call(&l.tool));
                }
                info!(task = %self.ctx.task().id, tool = %l.tool,
                    "the blocking call of an idempotent upstream tool was lost; calling it again");
                reattached(PROTOCOL);
                let responses = l.repeat.then(|| self.responses(&l));
                self.call_tool(l.tool.clone(), responses, l.request_state.clone())
                    .await
            }
        }
    }

    /// The first turn: calls the tool.
    async fn call(&mut self) -> Result<TurnOutcome, BridgeError> {
        let names = self.up.tool_names();
        let tool = match crate::outcome::chosen_tool(self.ctx.task(), &names) {
            Ok(t) => t,
            Err(refused) => return Ok(refused),
        };
        self.call_tool(tool, None, None).await
    }

    /// Calls `tool` with the arguments of the task's first message (the
    /// first call, or a repeat with answers after an `input_required`
    /// answer) and continues with what it answers.
    async fn call_tool(
        &mut self,
        tool: String,
        input_responses: Option<BTreeMap<String, ElicitResult>>,
        request_state: Option<String>,
    ) -> Result<TurnOutcome, BridgeError> {
        let args = self.up.arguments(&tool, self.ctx);
        debug!(task = %self.ctx.task().id, tool = %tool, tasks = self.up.tasks,
            repeat = input_responses.is_some(), "calling the upstream tool");
        if !self.up.tasks {
            // A blocking call: committed as made before it is, so that a
            // re-run of this turn knows the upstream may have run the tool.
            let base = self
                .link
                .clone()
                .unwrap_or_else(|| McpLink::new(String::new(), tool.clone(), self.number));
            self.store_link(McpLink {
                tool: tool.clone(),
                turn: self.number,
                blocking: true,
                ..base
            })
            .await?;
        }
        // Made again only when nothing of it reached the upstream: a
        // `tools/call` has no idempotency key.
        let call = crate::retry::sent_again(
            self.ctx,
            &self.up.backoff,
            "tools/call",
            ClientError::is_unsent,
            || {
                timed(
                    PROTOCOL,
                    "tools/call",
                    self.client.call_tool_answering(
                        &tool,
                        Value::Object(args.clone()),
                        input_responses.clone(),
                        request_state.clone(),
                    ),
                )
            },
        );
        // A call answered with a task is not given up on a cancel: it answers
        // at once with the task the cancel must reach (a blocking call is,
        // dropping its connection being the only cancel 2026-07-28 has).
        let called = if self.up.tasks {
            call.await
        } else {
            tokio::select! {
                biased;
                _ = self.ctx.cancelled() => return self.stopped().await,
                r = call => r,
            }
        };
        let Some(outcome) = called? else {
            return self.stopped().await;
        };
        match outcome.into_inner() {
            ToolCallOutcome::Task(t) => {
                let link = McpLink::new(t.task_id.clone(), tool, self.number);
                if let Err(e) = self.store_link(link.clone()).await {
                    if self.ctx.is_cancelled() {
                        // Canceled while the task was being created: it is
                        // canceled upstream too.
                        self.link = Some(link);
                        return self.stopped().await;
                    }
                    return Err(e);
                }
                self.follow(&t.task_id).await
            }
            ToolCallOutcome::Complete(r) => self.finish(&r).await,
            ToolCallOutcome::InputRequired(r) => {
                let asks = vocab::asks_of(&r.input_requests);
                let (asked, prompt) = match self.raise(asks)? {
                    Ok(raised) => raised,
                    Err(refused) => return Ok(refused),
                };
                let link = McpLink {
                    asked,
                    repeat: true,
                    request_state: r.request_state,
                    ..McpLink::new(String::new(), tool, self.number)
                };
                self.ctx.set_state(link.to_state()).await?;
                self.link = Some(link);
                Ok(TurnOutcome::Waiting {
                    message: Some(Message::agent_text(if prompt.is_empty() {
                        "the upstream tool asks for input".to_string()
                    } else {
                        prompt
                    })),
                })
            }
        }
    }

    /// Stores the link and commits it before anything else of the turn.
    async fn store_link(&mut self, link: McpLink) -> Result<(), BridgeError> {
        self.ctx.set_state(link.to_state()).await?;
        self.ctx.flush().await?;
        tracing::Span::current().record("upstream_task", link.task_id.as_str());
        debug!(task = %self.ctx.task().id, upstream_task = %link.task_id, turn = link.turn,
            "upstream link stored");
        self.link = Some(link);
        Ok(())
    }

    /// The downstream answers to what the last turn asked, as input responses.
    fn responses(&self, link: &McpLink) -> BTreeMap<String, ElicitResult> {
        super::link::responses(self.ctx, &link.asked)
    }

    /// Follows the upstream task by polling `tasks/get` until the turn ends.
    async fn follow(&mut self, task_id: &str) -> Result<TurnOutcome, BridgeError> {
        let _record = self
            .up
            .link_records()
            .map(|r| r.running(self.ctx.task(), task_id));
        let backoff = self.up.backoff.clone();
        let mut failures: u32 = 0;
        let mut last_message: Option<String> = None;
        loop {
            let got = tokio::select! {
                biased;
                _ = self.ctx.cancelled() => return self.stopped().await,
                r = timed(PROTOCOL, "tasks/get", self.client.get_task(task_id)) => r,
            };
            let wait = match got {
                Ok(t) => {
                    failures = 0;
                    let t = t.into_inner();
                    let suggested = t.poll_interval_ms.map(Duration::from_millis);
                    match self.apply(t, &mut last_message).await {
                        Ok(Some(outcome)) => return Ok(outcome),
                        Ok(None) => {}
                        Err(BridgeError::Core(_)) if self.ctx.is_cancelled() => {
                            return self.stopped().await
                        }
                        Err(e) => return Err(e),
                    }
                    suggested.unwrap_or(self.up.poll_interval).min(MAX_POLL)
                }
                Err(e) => crate::retry::after_failed_poll(
                    &backoff,
                    &mut failures,
                    e,
                    "tasks/get",
                    task_id,
                )?,
            };
            tokio::select! {
                biased;
                _ = self.ctx.cancelled() => return self.stopped().await,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Applies one polled upstream task; `Some` when the turn ends with it.
    async fn apply(
        &mut self,
        t: DetailedTask,
        last_message: &mut Option<String>,
    ) -> Result<Option<TurnOutcome>, BridgeError> {
        let ctx = self.ctx;
        let t = t.task;
        match vocab::upstream_state_of_mcp(t.status) {
            UpstreamState::Running | UpstreamState::Unknown => {
                // A working upstream's new status message is progress.
                if let Some(m) = t.status_message.filter(|m| !m.trim().is_empty()) {
                    if last_message.as_ref() != Some(&m) {
                        ctx.emit_message(Message::agent_text(m.clone())).await?;
                        *last_message = Some(m);
                    }
                }
                Ok(None)
            }
            UpstreamState::Completed => match &t.result {
                Some(r) => self.finish(r).await.map(Some),
                None => Ok(Some(TurnOutcome::Completed { message: None })),
            },
            UpstreamState::Failed => Ok(Some(TurnOutcome::Failed {
                message: t
                    .error
                    .map(|e| e.message)
                    .or(t.status_message)
                    .unwrap_or_else(|| "the upstream task failed".into()),
            })),
            UpstreamState::Canceled => end_canceled(
                self.up.store.as_ref(),
                &self.up.info.name,
                &self.ctx.task().id,
            )
            .await
            .map(Some),
            UpstreamState::InputRequired | UpstreamState::AuthRequired => {
                let requests = t.input_requests.unwrap_or_default();
                let asks = vocab::asks_of(&requests);
                if asks.is_empty() {
                    // input_required without requests: wait for the next poll.
                    return Ok(None);
                }
                let (asked, prompt) = match self.raise(asks)? {
                    Ok(raised) => raised,
                    Err(refused) => return Ok(Some(refused)),
                };
                if let Some(mut l) = self.link.clone() {
                    l.asked = asked;
                    ctx.set_state(l.to_state()).await?;
                    self.link = Some(l);
                }
                let prompt = t.status_message.unwrap_or(prompt);
                Ok(Some(TurnOutcome::Waiting {
                    message: Some(Message::agent_text(prompt)),
                }))
            }
            UpstreamState::Rejected => Ok(Some(TurnOutcome::Rejected {
                reason: t
                    .status_message
                    .unwrap_or_else(|| "the upstream rejected the task".into()),
            })),
        }
    }

    /// Raises the upstream's input requests on the downstream task
    /// ([`crate::outcome::raise`]).
    fn raise(
        &self,
        asks: Vec<UpstreamAsk>,
    ) -> Result<Result<(Vec<Asked>, String), TurnOutcome>, BridgeError> {
        Ok(
            crate::outcome::raise(self.ctx, asks, "input request")?.map(|(raised, prompt)| {
                let asked = raised
                    .into_iter()
                    .map(|r| Asked {
                        key: r.key,
                        provider: r.provider,
                        schema: r.schema,
                        request_id: None,
                        prompt: None,
                        url: None,
                    })
                    .collect();
                (asked, prompt)
            }),
        )
    }

    /// Ends the turn with an upstream tool result: a failure for `isError`,
    /// else its content as one artifact.
    async fn finish(
        &mut self,
        r: &taskwire_client::mcp::CallToolResult,
    ) -> Result<TurnOutcome, BridgeError> {
        super::link::finish(self.ctx, self.number, r).await
    }

    /// The turn's cancellation token fired: cancel upstream if the downstream
    /// task was canceled; leave it for the next worker otherwise.
    async fn stopped(&mut self) -> Result<TurnOutcome, BridgeError> {
        let id = &self.ctx.task().id;
        if !downstream_canceled(self.up.store.as_ref(), id).await {
            debug!(task = %id, "turn stopped without a downstream cancel; the upstream task is left running");
            return Err(BridgeError::Core(CoreError::LeaseLost));
        }
        match self.link.as_ref().filter(|l| !l.task_id.is_empty()) {
            Some(l) => match timed(
                PROTOCOL,
                "tasks/cancel",
                self.client.cancel_task(&l.task_id),
            )
            .await
            {
                Ok(_) => info!(task = %id, upstream_task = %l.task_id, "upstream task canceled"),
                Err(e) => warn!(task = %id, upstream_task = %l.task_id, error = %e,
                    "canceling the upstream task failed"),
            },
            None => {
                debug!(task = %id, "no upstream task to cancel (none named yet, or a call without a task)")
            }
        }
        Err(BridgeError::Core(CoreError::Terminal {
            state: taskwire_core::TaskState::Canceled,
        }))
    }
}
