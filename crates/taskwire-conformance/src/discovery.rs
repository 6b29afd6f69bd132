//! What the target offers: the A2A agent card (its `supportedInterfaces` name the
//! JSON-RPC url, the gRPC host:port and the HTTP+JSON url), MCP `server/discover` (else `initialize`)
//! at `/mcp`, and the AG-UI and CAS paths taskwire serves (`/agui`, `/cas`).
//! A protocol not offered is skipped with the reason. Also decides whether the
//! target runs the scripted reference agent and whether a second principal exists.
//!
//! Discovery uses plain HTTP probes (reqwest) rather than the protocol clients:
//! it looks at status codes and bodies the clients treat as errors.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use crate::driver::Wire;
use crate::drivers::common::field_texts;
use crate::error::Error;
use crate::protocol::Protocol;
use crate::report::Offer;
use crate::runner::Suite;
use crate::Config;

/// Name of the scripted reference agent on its agent card / CAS status objects.
pub const SCRIPTED_AGENT_NAME: &str = "scripted";
/// Skill (and MCP tool) of the scripted reference agent.
pub const SCRIPTED_SKILL: &str = "run_script";
/// The MCP revision the suite drives.
pub const MCP_VERSION: &str = "2026-07-28";
/// The earlier MCP revision whose experimental tasks the `mcp-2025` column drives.
pub const MCP_VERSION_2025_11_25: &str = "2025-11-25";
/// The MCP tasks extension id.
pub const MCP_TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Where each protocol is served.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Endpoints {
    /// Base url of the target.
    pub base: String,
    /// A2A JSON-RPC endpoint url.
    pub a2a: Option<String>,
    /// A2A gRPC endpoint (`http://host:port`).
    pub grpc: Option<String>,
    /// A2A HTTP+JSON interface url.
    pub a2a_rest: Option<String>,
    /// MCP endpoint url.
    pub mcp: Option<String>,
    /// AG-UI endpoint url.
    pub agui: Option<String>,
    /// CAS base url (`…/cas`).
    pub cas: Option<String>,
    /// The MCP tool that runs tasks (the scripted agent's `run_script`, or the first tool).
    pub mcp_tool: Option<String>,
    /// MCP 2025-11-25 endpoint url (a session negotiated 2025-11-25 with tasks).
    pub mcp_2025_11_25: Option<String>,
    /// The tool the 2025-11-25 session runs tasks with.
    pub mcp_2025_11_25_tool: Option<String>,
}

/// The result of discovery.
pub struct Found {
    /// The runner's view of the target.
    pub suite: Suite,
    /// What each protocol offers (for the report).
    pub offers: Vec<Offer>,
    /// Where each protocol is served.
    pub endpoints: Endpoints,
}

/// A response to a probe.
struct Probe {
    status: u16,
    body: Value,
    text: String,
}

async fn probe(
    http: &reqwest::Client,
    req: reqwest::RequestBuilder,
    token: Option<&str>,
) -> Result<Probe, String> {
    let req = match token {
        Some(t) => req.bearer_auth(t),
        None => req,
    };
    let _ = http;
    let resp = req.send().await.map_err(|e| format!("no answer: {e}"))?;
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    Ok(Probe { status, body, text })
}

fn why(p: &Result<Probe, String>, what: &str) -> String {
    match p {
        Err(e) => format!("{what}: {e}"),
        Ok(p) if p.status == 401 || p.status == 403 => {
            format!(
                "{what}: HTTP {} (a bearer token is needed: --token)",
                p.status
            )
        }
        Ok(p) => format!(
            "{what}: HTTP {} {}",
            p.status,
            crate::report::excerpt(&p.text)
                .chars()
                .take(120)
                .collect::<String>()
        ),
    }
}

/// The `_meta` every 2026-07-28 MCP request carries.
pub fn mcp_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MCP_VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "taskwire-conformance", "version": env!("CARGO_PKG_VERSION")},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {MCP_TASKS_EXTENSION: {}}},
    })
}

fn mcp_request(
    http: &reqwest::Client,
    url: &str,
    id: u64,
    method: &str,
    name: Option<&str>,
    params: Value,
) -> reqwest::RequestBuilder {
    let mut params = params;
    params["_meta"] = mcp_meta();
    let mut rb = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("MCP-Protocol-Version", MCP_VERSION)
        .header("Mcp-Method", method);
    if let Some(n) = name {
        rb = rb.header("Mcp-Name", n);
    }
    rb.body(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string())
}

/// `initialize` asking for 2025-11-25, then `tools/list` in the session it opened
/// (closed again with `DELETE`): the initialize result and the tools/list result.
async fn probe_2025_11_25(
    http: &reqwest::Client,
    url: &str,
    token: Option<&str>,
) -> Result<(Value, Value), String> {
    let what = format!("MCP initialize ({MCP_VERSION_2025_11_25}) at /mcp");
    let post = |body: Value, sid: Option<&str>| {
        let mut rb = http
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(s) = sid {
            rb = rb
                .header("Mcp-Session-Id", s)
                .header("MCP-Protocol-Version", MCP_VERSION_2025_11_25);
        }
        match token {
            Some(t) => rb.bearer_auth(t),
            None => rb,
        }
    };
    let resp = post(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": MCP_VERSION_2025_11_25,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "taskwire-conformance", "version": env!("CARGO_PKG_VERSION")}}}),
        None,
    )
    .send()
    .await
    .map_err(|e| format!("{what}: no answer: {e}"))?;
    let status = resp.status().as_u16();
    let sid = resp
        .headers()
        .get("Mcp-Session-Id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = resp.text().await.unwrap_or_default();
    let body = json_rpc_body(&text);
    let init = body["result"].clone();
    if status != 200 || !init.is_object() {
        let p = Ok(Probe { status, body, text });
        return Err(why(&p, &what));
    }
    let mut tools = Value::Null;
    if let Ok(r) = post(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        sid.as_deref(),
    )
    .send()
    .await
    {
        let _ = r.bytes().await;
        if let Ok(r) = post(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
            sid.as_deref(),
        )
        .send()
        .await
        {
            tools = json_rpc_body(&r.text().await.unwrap_or_default())["result"].clone();
        }
    }
    if let Some(s) = &sid {
        let mut rb = http.delete(url).header("Mcp-Session-Id", s);
        if let Some(t) = token {
            rb = rb.bearer_auth(t);
        }
        let _ = rb.send().await;
    }
    Ok((init, tools))
}

/// A JSON-RPC message from a JSON body or the first `data:` line of an SSE body.
fn json_rpc_body(text: &str) -> Value {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return v;
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("result").is_some() || v.get("error").is_some())
        .unwrap_or(Value::Null)
}

/// Looks at the target and builds the drivers of every offered, selected protocol.
pub async fn discover(target: &str, config: &Config, wire: &Wire) -> Result<Found, Error> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| Error::Http(e.to_string()))?;
    let token = config.token.as_deref();
    let mut ep = Endpoints {
        base: target.to_string(),
        ..Endpoints::default()
    };
    let mut reasons: BTreeMap<Protocol, String> = BTreeMap::new();
    let mut scripted: Option<String> = None;
    let mut not_scripted = Vec::new();
    let mut echo = false;
    let mut ask = false;

    // A2A: the agent card.
    let card_url = format!("{target}/.well-known/agent-card.json");
    let card = probe(
        &http,
        http.get(&card_url).header("A2A-Version", "1.0"),
        token,
    )
    .await;
    match &card {
        Ok(p) if p.status == 200 && p.body.is_object() => {
            wire.record(
                Protocol::A2a,
                format!("GET {card_url}"),
                format!("200 {}", p.text),
            );
            wire.validate(Protocol::A2a, &["agent_card"], &p.body);
            let ifaces = p.body["supportedInterfaces"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let find = |b: &str| {
                ifaces
                    .iter()
                    .find(|i| {
                        i["protocolBinding"]
                            .as_str()
                            .is_some_and(|x| x.eq_ignore_ascii_case(b))
                    })
                    .and_then(|i| i["url"].as_str().map(str::to_string))
            };
            match find("JSONRPC") {
                Some(u) => ep.a2a = Some(u),
                None => {
                    reasons.insert(
                        Protocol::A2a,
                        "the agent card lists no JSONRPC interface".into(),
                    );
                }
            }
            match find("GRPC") {
                Some(u) => {
                    ep.grpc = Some(if u.contains("://") {
                        u
                    } else {
                        format!("http://{u}")
                    })
                }
                None => {
                    reasons.insert(
                        Protocol::Grpc,
                        "the agent card lists no GRPC interface".into(),
                    );
                }
            }
            match find("HTTP+JSON") {
                Some(u) => ep.a2a_rest = Some(u),
                None => {
                    reasons.insert(
                        Protocol::A2aRest,
                        "the agent card lists no HTTP+JSON interface".into(),
                    );
                }
            }
            let name = p.body["name"].as_str().unwrap_or_default().to_string();
            let skills: Vec<String> = p.body["skills"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s["id"].as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            if name == SCRIPTED_AGENT_NAME && skills.iter().any(|s| s == SCRIPTED_SKILL) {
                scripted = Some(format!(
                    "agent card: name `{SCRIPTED_AGENT_NAME}`, skill `{SCRIPTED_SKILL}`"
                ));
            } else if config.upstream.as_deref() == Some("mcp")
                && skills.iter().any(|s| s == SCRIPTED_SKILL)
            {
                // An MCP hop carries tools, not the agent's name.
                scripted = Some(format!(
                    "agent card: skill `{SCRIPTED_SKILL}` behind the bridge's MCP upstream (an MCP server names no agent)"
                ));
            } else if config.upstream.as_deref() == Some("agui") {
                // An AG-UI endpoint describes nothing: the run says what is behind it.
                scripted = Some(
                    "--upstream agui: an AG-UI agent names itself nowhere, so the run's word is taken that the scripted agent is behind the bridge".into(),
                );
            } else {
                not_scripted.push(format!("agent card name `{name}`, skills {skills:?}"));
            }
            echo = skills.iter().any(|s| s == "echo");
            ask = skills.iter().any(|s| s == "ask");
        }
        other => {
            let r = why(other, "no agent card at /.well-known/agent-card.json");
            reasons.insert(Protocol::A2a, r.clone());
            reasons.insert(Protocol::A2aRest, r.clone());
            reasons.insert(Protocol::Grpc, r);
        }
    }

    // MCP: server/discover (2026-07-28), else initialize (2025-11-25 only).
    let mcp_url = format!("{target}/mcp");
    let disc = probe(
        &http,
        mcp_request(&http, &mcp_url, 1, "server/discover", None, json!({})),
        token,
    )
    .await;
    match &disc {
        Ok(p) if p.status == 200 && p.body["result"].is_object() => {
            let r = &p.body["result"];
            wire.validate(
                Protocol::Mcp,
                &["methods", MCP_VERSION, "server/discover", "result"],
                r,
            );
            let versions: Vec<&str> = r["supportedVersions"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let has_tasks = !r["capabilities"]["extensions"][MCP_TASKS_EXTENSION].is_null();
            if !versions.contains(&MCP_VERSION) {
                reasons.insert(
                    Protocol::Mcp,
                    format!("MCP server/discover offers {versions:?}, not {MCP_VERSION}"),
                );
            } else if !has_tasks {
                reasons.insert(
                    Protocol::Mcp,
                    "MCP server/discover declares no tasks extension".into(),
                );
            } else {
                ep.mcp = Some(mcp_url.clone());
                let tools = probe(
                    &http,
                    mcp_request(&http, &mcp_url, 2, "tools/list", None, json!({})),
                    token,
                )
                .await;
                if let Ok(t) = tools {
                    let names = field_texts(&t.body["result"]["tools"], "name");
                    if names.iter().any(|n| n == SCRIPTED_SKILL) {
                        ep.mcp_tool = Some(SCRIPTED_SKILL.into());
                        if scripted.is_none() && not_scripted.is_empty() {
                            scripted = Some(format!("MCP tools/list has `{SCRIPTED_SKILL}`"));
                        }
                    } else {
                        ep.mcp_tool = names.first().cloned();
                    }
                }
            }
        }
        other => {
            let init = probe(
                &http,
                http.post(&mcp_url)
                    .header("accept", "application/json, text/event-stream")
                    .header("content-type", "application/json")
                    .body(
                        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                        "protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "taskwire-conformance", "version": "1"}}})
                        .to_string(),
                    ),
                token,
            )
            .await;
            let r = match init {
                Ok(p) if p.status == 200 && p.text.contains("\"result\"") => format!(
                    "MCP answers initialize (2025-11-25) but not server/discover ({}); the `mcp` column drives the {MCP_VERSION} tasks extension (2025-11-25 is the `mcp-2025` column)",
                    why(other, "server/discover")
                ),
                _ => why(other, "no MCP server/discover at /mcp"),
            };
            reasons.insert(Protocol::Mcp, r);
        }
    }

    // MCP 2025-11-25: initialize asking for that revision; the server must
    // negotiate it and declare tasks for `tools/call`.
    match probe_2025_11_25(&http, &mcp_url, token).await {
        Ok((init, tools)) => {
            wire.validate(
                Protocol::Mcp2025,
                &["methods", MCP_VERSION_2025_11_25, "initialize", "result"],
                &init,
            );
            wire.validate(
                Protocol::Mcp2025,
                &["methods", MCP_VERSION_2025_11_25, "tools/list", "result"],
                &tools,
            );
            let version = init["protocolVersion"].as_str().unwrap_or_default();
            let task_calls = init["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object();
            if version != MCP_VERSION_2025_11_25 {
                reasons.insert(
                    Protocol::Mcp2025,
                    format!(
                        "MCP initialize asking for {MCP_VERSION_2025_11_25} negotiated {version:?}"
                    ),
                );
            } else if !task_calls {
                reasons.insert(
                    Protocol::Mcp2025,
                    format!("MCP initialize ({MCP_VERSION_2025_11_25}) declares no capabilities.tasks.requests.tools.call"),
                );
            } else {
                let names = field_texts(&tools["tools"], "name");
                ep.mcp_2025_11_25 = Some(mcp_url.clone());
                ep.mcp_2025_11_25_tool = if names.iter().any(|n| n == SCRIPTED_SKILL) {
                    Some(SCRIPTED_SKILL.into())
                } else {
                    names.first().cloned()
                };
            }
        }
        Err(r) => {
            reasons.insert(Protocol::Mcp2025, r);
        }
    }

    // AG-UI: POST /agui with a body that is not a RunAgentInput; a missing route is 404/405.
    let agui_url = format!("{target}/agui");
    let ag = probe(
        &http,
        http.post(&agui_url)
            .header("content-type", "application/json")
            .body("{}"),
        token,
    )
    .await;
    match &ag {
        Ok(p) if !matches!(p.status, 404 | 405 | 401 | 403) => ep.agui = Some(agui_url),
        other => {
            reasons.insert(
                Protocol::Agui,
                why(other, "no AG-UI endpoint at POST /agui"),
            );
        }
    }

    // CAS: an unknown task id answers 404 with the CAS error body `not_found`.
    let cas_url = format!("{target}/cas");
    let cp = probe(
        &http,
        http.get(format!("{cas_url}/tasks/{}", "0".repeat(32))),
        token,
    )
    .await;
    match &cp {
        Ok(p) if p.status == 404 && p.body["error"]["code"] == "not_found" => {
            ep.cas = Some(cas_url)
        }
        other => {
            reasons.insert(
                Protocol::Cas,
                why(other, "no CAS task status surface at /cas/tasks"),
            );
        }
    }

    // A second principal needs a second token, and a target that checks tokens.
    let mut no_second = String::new();
    let token2 = match (&config.token2, token) {
        (None, _) => {
            no_second = "no second token given (--token2)".into();
            None
        }
        (Some(t2), _) => {
            let bogus = probe(
                &http,
                http.get(format!("{target}/cas/tasks/{}", "0".repeat(32))),
                Some("taskwire-conformance-invalid-token"),
            )
            .await;
            let mcp_bogus = probe(
                &http,
                mcp_request(&http, &mcp_url, 3, "tools/list", None, json!({})),
                Some("taskwire-conformance-invalid-token"),
            )
            .await;
            let accepts_any = matches!(&bogus, Ok(p) if p.status != 401 && p.status != 403)
                && matches!(&mcp_bogus, Ok(p) if p.status != 401 && p.status != 403);
            if accepts_any {
                no_second = "the target accepts any bearer token (no authentication), so it has no second principal".into();
                None
            } else {
                Some(t2.clone())
            }
        }
    };

    let scripted = match scripted {
        Some(r) => (true, r),
        None if not_scripted.is_empty() => (
            false,
            "no agent card or MCP tool names the scripted agent".into(),
        ),
        None => (
            false,
            format!("not the scripted agent: {}", not_scripted.join("; ")),
        ),
    };
    let (drivers, second) = crate::drivers::build(&ep, config, token2.as_deref(), wire)?;
    let mut offers = Vec::new();
    let mut unavailable = BTreeMap::new();
    for p in Protocol::ALL {
        let endpoint = match p {
            Protocol::A2a => ep.a2a.clone(),
            Protocol::Grpc => ep.grpc.clone(),
            Protocol::A2aRest => ep.a2a_rest.clone(),
            Protocol::Mcp => ep.mcp.clone(),
            Protocol::Mcp2025 => ep.mcp_2025_11_25.clone(),
            Protocol::Agui => ep.agui.clone(),
            Protocol::Cas => ep.cas.clone(),
        };
        let skipped = if !config.protocols.contains(&p) {
            Some("not selected (--protocols)".to_string())
        } else if let Some(r) = reasons.get(&p) {
            Some(r.clone())
        } else if !drivers.contains_key(&p) {
            Some(format!(
                "{p} is offered but this build has no driver for it"
            ))
        } else {
            None
        };
        if let Some(r) = &skipped {
            unavailable.insert(p, r.clone());
        }
        offers.push(Offer {
            protocol: p,
            endpoint: if skipped.is_none() { endpoint } else { None },
            skipped,
        });
    }
    let drivers = drivers
        .into_iter()
        .filter(|(p, _)| !unavailable.contains_key(p))
        .collect();
    let suite = Suite {
        drivers,
        second,
        unavailable,
        selected: config.protocols.clone(),
        scripted,
        ask,
        echo,
        wire: wire.clone(),
        no_second_reason: no_second,
        upstream: config.upstream.clone(),
    };
    Ok(Found {
        suite,
        offers,
        endpoints: ep,
    })
}
