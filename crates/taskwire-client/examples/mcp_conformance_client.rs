//! taskwire's MCP client as the client under test of the official MCP
//! conformance suite (`conformance client --command …`, run by
//! `.ci/mcp-conformance-client.sh`).
//!
//! The suite starts a scenario's server (and authorization server), then runs
//! this program with the server URL as its last argument, the scenario's name
//! in `MCP_CONFORMANCE_SCENARIO`, its credentials (if any) in
//! `MCP_CONFORMANCE_CONTEXT` (JSON) and the revision in
//! `MCP_CONFORMANCE_PROTOCOL_VERSION`. Revision 2026-07-28 is spoken with
//! [`McpClient`] (stateless, `_meta` on every request), the older ones with
//! [`McpClient2025_11_25`] (initialize, session).
//!
//! Every request goes through taskwire-client's outbound OAuth client
//! ([`taskwire_client::oauth`]) configured from the context: client
//! credentials with a secret (`client_secret_basic` or `_post` as the
//! authorization server's metadata says) or with `private_key_jwt`, or the
//! JWT bearer grant with the workload token written to a file first, the way a
//! platform mounts one. Without a context the client still discovers the
//! authorization server from the first 401 (and refuses metadata that does not
//! check out), as a public client.

use std::process::ExitCode;
use std::str::FromStr;
use std::sync::Arc;

use serde_json::{json, Value};
use taskwire_client::mcp::{McpClient, McpClient2025_11_25, ToolCallOutcome};
use taskwire_client::oauth::{AssertionSource, ClientAuth, OAuthClient, OAuthConfig, Secret};
use taskwire_client::{ClientConfig, ClientError};

/// The revision spoken statelessly.
const STATELESS: &str = "2026-07-28";

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: MCP_CONFORMANCE_SCENARIO=NAME mcp_conformance_client SERVER_URL");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let version =
        std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_else(|_| "2025-11-25".into());
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    match run(&url, &scenario, &version, &context).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{scenario}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The OAuth client the context describes.
fn oauth(context: &Value) -> Result<OAuthClient, ClientError> {
    let s = |k: &str| context.get(k).and_then(Value::as_str).map(str::to_string);
    let client_id = s("client_id");
    let config = if let Some(jwt) = s("valid_jwt") {
        // The workload token as a platform would mount it: a file, read on
        // every token request.
        let path = std::env::temp_dir().join(format!("mcp-conformance-wif-{}", std::process::id()));
        std::fs::write(&path, jwt)
            .map_err(|e| ClientError::Config(format!("writing the workload token: {e}")))?;
        OAuthConfig::jwt_bearer(client_id, AssertionSource::File(path))
    } else if let (Some(id), Some(pem)) = (client_id.clone(), s("private_key_pem")) {
        let alg = s("signing_algorithm").unwrap_or_else(|| "ES256".into());
        let algorithm = jsonwebtoken::Algorithm::from_str(&alg)
            .map_err(|e| ClientError::Config(format!("signing algorithm {alg}: {e}")))?;
        OAuthConfig::client_credentials(
            id,
            ClientAuth::PrivateKeyJwt {
                key_pem: Secret::from(pem),
                algorithm,
                key_id: None,
            },
        )
    } else if let (Some(id), Some(secret)) = (client_id.clone(), s("client_secret")) {
        OAuthConfig::client_credentials(
            id,
            ClientAuth::Secret {
                secret: Secret::from(secret),
                method: None,
            },
        )
    } else {
        let mut c =
            OAuthConfig::client_credentials(client_id.unwrap_or_default(), ClientAuth::None);
        if c.client_id.as_deref() == Some("") {
            c.client_id = None;
        }
        c
    };
    OAuthClient::new(config)
}

async fn run(url: &str, scenario: &str, version: &str, context: &Value) -> Result<(), ClientError> {
    let config = ClientConfig::builder(url)
        .authorizer(Arc::new(oauth(context)?))
        .build();
    if version == STATELESS {
        let client = McpClient::with_endpoint(config, url)?.declare_tasks_extension(false);
        stateless(&client, scenario).await
    } else {
        let client = McpClient2025_11_25::with_endpoint(config, url)?;
        client.initialize(serde_json::Map::new()).await?;
        let r = stateful(&client, scenario).await;
        let _ = client.close().await;
        r
    }
}

/// SEP-2322's multi-round-trip choreography: answer each input request, send
/// back the `requestState` unchanged (none when none came), call an unrelated
/// tool in between without carrying anything over, and take a result without
/// `resultType` as complete.
async fn mrtr(client: &McpClient) -> Result<(), ClientError> {
    client.list_tools().await?;
    let answers = |ir: &taskwire_client::mcp::InputRequiredResult| {
        ir.input_requests
            .keys()
            .map(|k| {
                let mut content = serde_json::Map::new();
                content.insert("confirmed".into(), Value::Bool(true));
                (k.clone(), taskwire_client::mcp::elicit_accept(content))
            })
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let first = client.call_tool("test_mrtr_echo_state", json!({})).await?;
    if let ToolCallOutcome::InputRequired(ir) = first.value {
        client.call_tool("test_mrtr_unrelated", json!({})).await?;
        client
            .call_tool_answering(
                "test_mrtr_echo_state",
                json!({}),
                Some(answers(&ir)),
                ir.request_state.clone(),
            )
            .await?;
    }
    let second = client.call_tool("test_mrtr_no_state", json!({})).await?;
    if let ToolCallOutcome::InputRequired(ir) = second.value {
        client
            .call_tool_answering("test_mrtr_no_state", json!({}), Some(answers(&ir)), None)
            .await?;
    }
    // No resultType: complete, not retried.
    client
        .call_tool("test_mrtr_no_result_type", json!({}))
        .await?;
    Ok(())
}

async fn stateless(client: &McpClient, scenario: &str) -> Result<(), ClientError> {
    match scenario {
        "sep-2322-client-request-state" => mrtr(client).await?,
        "request-metadata" => {
            client.discover().await?;
            client.list_tools().await?;
        }
        "json-schema-ref-no-deref" => {
            client.list_tools().await?;
        }
        "json-schema-2020-12-preservation" => {
            let tools = client.list_tools().await?;
            let schema = focal_schema(&tools.raw)?;
            client
                .call_tool("json_schema_echo", json!({ "schema": schema }))
                .await?;
        }
        _ => {
            let tools = client.list_tools().await?;
            if let Some(name) = first_tool(&tools.raw) {
                let outcome = client.call_tool(&name, args_for(scenario)).await?;
                if let ToolCallOutcome::InputRequired { .. } = outcome.value {
                    eprintln!("{scenario}: input required");
                }
            }
        }
    }
    Ok(())
}

async fn stateful(client: &McpClient2025_11_25, scenario: &str) -> Result<(), ClientError> {
    let tools = client.list_tools().await?;
    match scenario {
        "json-schema-ref-no-deref" => {}
        "json-schema-2020-12-preservation" => {
            let schema = focal_schema(&tools.raw)?;
            client
                .call_tool("json_schema_echo", json!({ "schema": schema }))
                .await?;
        }
        _ => {
            if let Some(name) = first_tool(&tools.raw) {
                client.call_tool(&name, args_for(scenario)).await?;
            }
        }
    }
    Ok(())
}

/// The arguments of the first tool call: the numbers `tools_call` adds, an
/// empty object elsewhere.
fn args_for(scenario: &str) -> Value {
    match scenario {
        "tools_call" | "tools-call" | "initialize" => json!({ "a": 2, "b": 3 }),
        _ => json!({}),
    }
}

/// The raw `tools/list` answer is the tool array (or an object holding it).
fn tool_list(raw: &Value) -> Vec<Value> {
    raw.as_array()
        .cloned()
        .or_else(|| raw.get("tools").and_then(Value::as_array).cloned())
        .unwrap_or_default()
}

fn first_tool(raw: &Value) -> Option<String> {
    tool_list(raw)
        .first()
        .and_then(|t| t.get("name"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn focal_schema(raw: &Value) -> Result<Value, ClientError> {
    tool_list(raw)
        .into_iter()
        .find(|t| t.get("name").and_then(Value::as_str) == Some("json_schema_2020_12_tool"))
        .and_then(|t| t.get("inputSchema").cloned())
        .ok_or_else(|| ClientError::Protocol("json_schema_2020_12_tool not listed".into()))
}
