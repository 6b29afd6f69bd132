//! Bridge mode end to end: `taskwire serve --upstream …` in front of a real
//! upstream, driven through the bridge's own surfaces and checked against the
//! upstream directly. One test binary (`cargo test -p taskwire --test
//! bridge`), one module per concern:
//!
//! - `over_a2a`: a taskwire upstream over A2A, each lifecycle once per
//!   upstream binding (`mod jsonrpc` and `mod grpc` of each);
//! - `over_mcp`, `over_agui`: taskwire upstreams over MCP and AG-UI;
//! - `sdk_a2a`, `sdk_mcp`, `sdk_mcp_2025_11_25`: upstreams (and clients) of
//!   the official SDKs (`#[ignore]`d: `.ci/test` installs them);
//! - `durability`: kills, restarts, cancels while down, sends made again;
//! - `limits`: upstream answers beyond the bridge's bounds;
//! - `setup`: flags, bad upstreams, readiness, metrics, several upstreams;
//! - `tls`: upstreams and push receivers over TLS and mutual TLS.
//!
//! What they share is here and in `tests/common/bridge.rs`.

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/pg.rs"]
mod pg;

use std::time::Duration;
use taskwire_client::A2aBinding as _;

use clap::Parser;
use taskwire::cli::{Cli, Command};
use taskwire_client::a2a::{self, pb, A2aClient};
use taskwire_client::cas::{CasClient, CasInput, CasPhase, TerminalReason};
use taskwire_client::ClientConfig;

use common::bridge::{
    a2a_client, artifact_texts, config, eventually_showing, free_ports, serve, serve_agent,
    settled, spawn_serve, state, status_text, task_of, Restartable, Running, LIMIT,
};

/// The binding the bridge calls its upstream over.
#[derive(Clone, Copy, Debug)]
enum Over {
    /// `a2a+http://…`.
    JsonRpc,
    /// `a2a+grpc://host:port` (taskwire serves gRPC on its one port).
    Grpc,
}

/// The `--upstream` URL of a taskwire at `base` over `over`.
fn upstream_url(base: &str, over: Over) -> String {
    match over {
        Over::JsonRpc => format!("a2a+{base}"),
        Over::Grpc => format!("a2a+grpc://{}", base.trim_start_matches("http://")),
    }
}

/// An upstream taskwire (scripted agent) and a bridging taskwire in front of
/// it, calling it over `over`.
async fn pair_over(over: Over) -> (Running, Running) {
    let up = serve(&[]).await;
    let url = upstream_url(&up.base, over);
    let bridge = serve(&["--upstream", &url]).await;
    (up, bridge)
}

/// Runs a lifecycle test once per upstream binding.
macro_rules! over_both {
    ($case:ident) => {
        mod $case {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn jsonrpc() {
                super::$case(super::Over::JsonRpc).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn grpc() {
                super::$case(super::Over::Grpc).await
            }
        }
    };
}

/// Every task the upstream holds (the bridge's caller is the local principal).
async fn upstream_tasks(up: &A2aClient) -> Vec<pb::Task> {
    up.list_tasks(pb::ListTasksRequest {
        include_artifacts: Some(true),
        history_length: Some(10),
        ..Default::default()
    })
    .await
    .expect("upstream ListTasks")
    .into_inner()
    .tasks
}

/// The one task of the upstream, once it is in `want` (within LIMIT).
async fn upstream_task_in(up: &A2aClient, want: pb::TaskState) -> pb::Task {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let tasks = upstream_tasks(up).await;
        assert!(tasks.len() <= 1, "more than one upstream task: {tasks:?}");
        if let Some(t) = tasks.first() {
            if state(t) == want {
                return t.clone();
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the upstream task did not reach {want:?}: {tasks:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A downstream task running `sleep 30000` (sent returning at once), and the
/// upstream's task for it once it is working.
async fn sleeping_task(down: &A2aClient, direct: &A2aClient) -> (pb::Task, pb::Task) {
    let t = task_of(
        down.send_text("sleep 30000", true)
            .await
            .expect("send")
            .into_inner(),
    );
    let ut = upstream_task_in(direct, pb::TaskState::Working).await;
    (t, ut)
}

/// Cancels downstream task `id`: it answers canceled, and the upstream's one
/// task, `upstream`, ends canceled (`what` names the case in failures).
async fn cancel_reaches_upstream(
    down: &A2aClient,
    direct: &A2aClient,
    id: &str,
    upstream: &str,
    what: &str,
) {
    let canceled = down.cancel_task(id).await.expect("cancel").into_inner();
    assert_eq!(state(&canceled), pb::TaskState::Canceled, "{what}");
    assert_eq!(
        upstream_task_in(direct, pb::TaskState::Canceled).await.id,
        upstream,
        "{what}"
    );
}

fn text_to_task(text: &str, task_id: &str) -> pb::SendMessageRequest {
    let mut m = a2a::text_message(text);
    m.task_id = task_id.to_string();
    a2a::send_request(m)
}

// The modules come last: `over_both!` is defined above.
mod durability;
mod limits;
mod over_a2a;
mod over_agui;
mod over_mcp;
mod sdk_a2a;
mod sdk_mcp;
mod sdk_mcp_2025_11_25;
mod setup;
mod tls;

#[allow(
    unused_imports,
    reason = "each module uses some of the others' helpers"
)]
use self::{durability::*, over_a2a::*, over_mcp::*, setup::*, tls::*};
