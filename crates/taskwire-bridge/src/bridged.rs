//! The one bridged executor: [`Bridged`] implements [`Agent`] once for every
//! upstream protocol.
//!
//! What every bridged turn does is written here: the turn's number (a re-run
//! of a turn that had started is the same turn), the upstream link read from
//! the downstream task's agent state, the `bridged_turn` span naming both
//! tasks, the failure of an upstream call mapped to the
//! task's end (`outcome::turn_result`), and readiness cached for `/readyz`.
//! Each upstream protocol ([`Upstream`], under `upstream/`) supplies only
//! what differs: how its link reads, what a turn does first (its plan, a
//! pure decision the unit tests read), and how the plan is carried out
//! (sending, following the upstream task, cancelling it).

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;

use serde_json::Value;
use taskwire_core::{async_trait, Agent, AgentError, AgentInfo, TurnContext, TurnOutcome};
use tracing::{info_span, Instrument};

use crate::error::BridgeError;
use crate::ready::ReadyCache;

/// The link of a downstream task to what it runs upstream, kept in the
/// downstream task's agent state (under [`crate::upstream::a2a::LINK_KEY`]).
pub trait Link: Sized + Send + Sync {
    /// The link stored in an agent state (`None` without one, or with
    /// another protocol's).
    fn read(state: Option<&Value>) -> Option<Self>;

    /// The upstream task (or run) it names, for the turn's span.
    fn upstream_task(&self) -> Option<&str>;
}

/// One downstream turn as the generic executor hands it to a protocol.
#[derive(Debug)]
pub struct TurnStart<'a, L> {
    /// The turn.
    pub ctx: &'a TurnContext,
    /// The turn's number: stable across re-runs of the turn.
    pub number: u32,
    /// The link the task's agent state holds (from an earlier turn, or from
    /// an earlier run of this one).
    pub link: Option<L>,
}

/// One upstream protocol: what a bridged turn does that depends on it.
///
/// `run` and `probe` return their futures unboxed (not `async_trait`), so a
/// turn has one boxed future, [`Bridged`]'s `run_turn`, not two.
pub trait Upstream: Send + Sync + 'static {
    /// The link this protocol keeps in the task's agent state.
    type Link: Link;
    /// What a turn does first.
    type Plan: Debug + Send;

    /// The protocol's label in spans and metrics (`a2a`, `a2a-grpc`, `mcp`,
    /// `agui`).
    fn protocol(&self) -> &'static str;

    /// The protocol revision spoken, when the protocol has several.
    fn revision(&self) -> Option<&'static str> {
        None
    }

    /// The agent the upstream is offered as.
    fn info(&self) -> &AgentInfo;

    /// The upstream task (or run) the turn's span names before the link does.
    fn span_task(&self, turn: &TurnStart<'_, Self::Link>) -> Option<String> {
        turn.link
            .as_ref()
            .and_then(Link::upstream_task)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
    }

    /// What the turn does first, from the turn alone (no I/O).
    fn plan(&self, turn: &TurnStart<'_, Self::Link>) -> Self::Plan;

    /// Carries the plan out: sends what it says, follows the upstream until
    /// the turn ends, cancels upstream when the downstream task is canceled.
    fn run<'a>(
        &'a self,
        turn: TurnStart<'a, Self::Link>,
        plan: Self::Plan,
    ) -> impl Future<Output = Result<TurnOutcome, BridgeError>> + Send + 'a;

    /// Whether the upstream answers (uncached; [`Bridged`] caches it).
    fn probe(&self) -> impl Future<Output = Result<(), String>> + Send + '_;
}

/// An upstream agent run as this server's agent.
#[derive(Clone, Debug)]
pub struct Bridged<U> {
    upstream: U,
    ready: Arc<ReadyCache>,
}

impl<U> Bridged<U> {
    /// The agent whose turns `upstream` runs.
    pub fn new(upstream: U) -> Self {
        Self {
            upstream,
            ready: Arc::new(ReadyCache::default()),
        }
    }

    /// The protocol part.
    pub fn upstream(&self) -> &U {
        &self.upstream
    }

    /// The same agent with its protocol part changed by `f`.
    pub(crate) fn map(self, f: impl FnOnce(U) -> U) -> Self {
        Self {
            upstream: f(self.upstream),
            ready: self.ready,
        }
    }
}

#[async_trait]
impl<U: Upstream> Agent for Bridged<U> {
    fn info(&self) -> AgentInfo {
        self.upstream.info().clone()
    }

    async fn run_turn(&self, ctx: &TurnContext) -> Result<TurnOutcome, AgentError> {
        let turn = TurnStart {
            ctx,
            number: crate::link::turn_number(ctx.task()),
            link: U::Link::read(ctx.state()),
        };
        let span = info_span!("bridged_turn", protocol = self.upstream.protocol(),
            version = self.upstream.revision(), task = %ctx.task().id, turn = turn.number,
            upstream_task = tracing::field::Empty);
        if let Some(t) = self.upstream.span_task(&turn) {
            span.record("upstream_task", t.as_str());
        }
        let plan = self.upstream.plan(&turn);
        let r = self.upstream.run(turn, plan).instrument(span).await;
        crate::outcome::turn_result(ctx, r)
    }

    async fn ready(&self) -> Result<(), String> {
        self.ready.check(|| self.upstream.probe()).await
    }
}
