//! What an MCP turn does first, in both revisions.

use super::link::McpLink;
use crate::bridged::TurnStart;

/// What an MCP turn does first (both revisions).
#[derive(Debug, PartialEq)]
pub enum Plan {
    /// Call the tool: the task's first turn.
    Call,
    /// Go on with a call that answered with questions and no task:
    /// 2026-07-28 calls again with the answers and the call's `requestState`
    /// (SEP-2322); 2025-11-25 answers the blocking call this process still
    /// holds, else calls an idempotent tool again.
    Resume(McpLink),
    /// Follow the upstream task this turn made (a re-run of the turn).
    Reattach(McpLink),
    /// Send the turn's answers to the upstream task, then follow it.
    Answer(McpLink),
    /// An earlier run of this turn made a blocking `tools/call` and stopped
    /// before reading its answer (the bridge crashed or was killed): the
    /// upstream may have run the tool. Called again only if the tool is
    /// marked `idempotentHint`; otherwise the task fails saying so (both
    /// revisions, `LOSS_MCP_BLOCKING_CALL_LOST`).
    Lost(McpLink),
}

/// The plan of a turn (see [`Plan`]).
pub(crate) fn plan(turn: &TurnStart<'_, McpLink>) -> Plan {
    match &turn.link {
        None => Plan::Call,
        Some(l) if l.blocking && l.turn >= turn.number => Plan::Lost(l.clone()),
        Some(l) if l.repeat || l.call.is_some() => Plan::Resume(l.clone()),
        Some(l) if l.turn >= turn.number => Plan::Reattach(l.clone()),
        Some(l) => Plan::Answer(l.clone()),
    }
}
