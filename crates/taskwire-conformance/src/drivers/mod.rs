//! The protocol drivers, built on taskwire-client. Every client shares one
//! [`ClientConfig`] whose exchange observer records each request and response
//! on the run's [`Wire`] and validates what came back against `schemas/`.

mod a2a;
mod agui;
mod cas;
pub(crate) mod common;
mod mcp;
mod mcp_2025_11_25;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use taskwire_client::{ClientConfig, ClientError, RawResponse};

use crate::discovery::Endpoints;
use crate::driver::{Driver, OpError, Wire};
use crate::error::Error;
use crate::protocol::Protocol;
use crate::scenario::ErrorClass;
use crate::Config;

/// Drivers by protocol.
pub type Drivers = BTreeMap<Protocol, Arc<dyn Driver>>;

/// Builds a driver for every offered protocol, as the first principal and (with
/// `token2`) as the second.
pub fn build(
    ep: &Endpoints,
    config: &Config,
    token2: Option<&str>,
    wire: &Wire,
) -> Result<(Drivers, Drivers), Error> {
    let first = build_one(ep, config, config.token.as_deref(), wire)?;
    let second = match token2 {
        Some(t) => build_one(ep, config, Some(t), wire)?,
        None => Drivers::new(),
    };
    Ok((first, second))
}

fn client_config(
    ep: &Endpoints,
    config: &Config,
    token: Option<&str>,
    wire: &Wire,
    column: Option<Protocol>,
) -> ClientConfig {
    let w = wire.clone();
    let mut b = ClientConfig::builder(ep.base.clone())
        .request_timeout(config.request_timeout)
        .stream_idle_timeout(std::time::Duration::from_secs(60))
        .observer(move |ex| observe(&w, ex, column));
    if let Some(t) = token {
        b = b.bearer_token(t);
    }
    b.build()
}

fn build_one(
    ep: &Endpoints,
    config: &Config,
    token: Option<&str>,
    wire: &Wire,
) -> Result<Drivers, Error> {
    let cc = client_config(ep, config, token, wire, None);
    let cerr = |e: ClientError| Error::Http(e.to_string());
    let mut out = Drivers::new();
    if let Some(u) = &ep.a2a {
        let c = taskwire_client::a2a::A2aClient::with_endpoint(cc.clone(), u).map_err(cerr)?;
        out.insert(
            Protocol::A2a,
            Arc::new(a2a::A2aDriver {
                protocol: Protocol::A2a,
                binding: Arc::new(c),
                wire: wire.clone(),
            }),
        );
    }
    if let Some(u) = &ep.grpc {
        let c = taskwire_client::grpc::A2aGrpcClient::with_target(cc.clone(), u).map_err(cerr)?;
        out.insert(
            Protocol::Grpc,
            Arc::new(a2a::A2aDriver {
                protocol: Protocol::Grpc,
                binding: Arc::new(c),
                wire: wire.clone(),
            }),
        );
    }
    if let Some(u) = &ep.a2a_rest {
        let c = taskwire_client::a2a_rest::A2aRestClient::with_url(cc.clone(), u).map_err(cerr)?;
        out.insert(
            Protocol::A2aRest,
            Arc::new(a2a::A2aDriver {
                protocol: Protocol::A2aRest,
                binding: Arc::new(c),
                wire: wire.clone(),
            }),
        );
    }
    if let Some(u) = &ep.mcp {
        let c = taskwire_client::mcp::McpClient::with_endpoint(cc.clone(), u)
            .map_err(cerr)?
            .client_info(taskwire_client::mcp::Implementation {
                name: "taskwire-conformance".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                other: serde_json::Map::new(),
            });
        out.insert(
            Protocol::Mcp,
            Arc::new(mcp::McpDriver {
                client: c,
                tool: ep
                    .mcp_tool
                    .clone()
                    .unwrap_or_else(|| crate::discovery::SCRIPTED_SKILL.into()),
                wire: wire.clone(),
            }),
        );
    }
    if let Some(u) = &ep.mcp_2025_11_25 {
        // Its own config, so its exchanges are recorded and validated as `mcp-2025`.
        let lc = client_config(ep, config, token, wire, Some(Protocol::Mcp2025));
        let c = taskwire_client::mcp::McpClient2025_11_25::with_endpoint(lc, u).map_err(cerr)?;
        out.insert(
            Protocol::Mcp2025,
            Arc::new(mcp_2025_11_25::McpDriver2025_11_25::new(
                c,
                ep.mcp_2025_11_25_tool
                    .clone()
                    .unwrap_or_else(|| crate::discovery::SCRIPTED_SKILL.into()),
                wire.clone(),
            )),
        );
    }
    if let Some(u) = &ep.agui {
        out.insert(
            Protocol::Agui,
            Arc::new(agui::AguiDriver::new(cc.clone(), u, wire.clone())?),
        );
    }
    if let Some(u) = &ep.cas {
        let c = taskwire_client::cas::CasClient::with_prefix(cc.clone(), u).map_err(cerr)?;
        out.insert(
            Protocol::Cas,
            Arc::new(cas::CasDriver {
                client: c,
                wire: wire.clone(),
            }),
        );
    }
    Ok(out)
}

/// Records a client exchange and validates its response; `column` names the
/// protocol where the client's own name is ambiguous (both MCP generations).
fn observe(wire: &Wire, ex: &taskwire_client::Exchange, column: Option<Protocol>) {
    let protocol = match (column, ex.protocol) {
        (Some(p), _) => p,
        (None, "grpc") => Protocol::Grpc,
        (None, taskwire_client::a2a_rest::PROTOCOL) => Protocol::A2aRest,
        (None, "mcp") => Protocol::Mcp,
        (None, "agui") => Protocol::Agui,
        (None, "cas") => Protocol::Cas,
        (None, _) => Protocol::A2a,
    };
    let req = if ex.request.is_null() {
        ex.operation.clone()
    } else {
        format!("{} {}", ex.operation, ex.request)
    };
    let status = ex
        .status
        .map(|s| s.to_string())
        .unwrap_or_else(|| "-".into());
    wire.record(protocol, req, format!("{status} {}", ex.response));
    let is_event = ex.operation.ends_with(" (event)");
    let op = ex.operation.trim_end_matches(" (event)");
    let r = &ex.response;
    match protocol {
        Protocol::A2aRest => {
            if op.starts_with("GET ") {
                return;
            }
            if is_event {
                if r.get("error").is_none() {
                    wire.validate(protocol, &["methods", op, "stream"], r);
                }
            } else if r.get("error").is_some() {
                wire.validate(protocol, &["rest", "error"], r);
            }
        }
        Protocol::A2a | Protocol::Grpc => {
            if op.starts_with("GET ") {
                return;
            }
            if is_event {
                let inner = if r.get("jsonrpc").is_some() {
                    &r["result"]
                } else {
                    r
                };
                wire.validate(protocol, &["methods", op, "stream"], inner);
            } else if r.get("error").is_some() && r.get("jsonrpc").is_some() {
                wire.validate(protocol, &["envelope", "error"], r);
            } else if r.get("jsonrpc").is_some() {
                wire.validate(protocol, &["envelope", "success"], r);
            }
        }
        Protocol::Mcp | Protocol::Mcp2025 => {
            let v = if protocol == Protocol::Mcp {
                crate::discovery::MCP_VERSION
            } else {
                crate::discovery::MCP_VERSION_2025_11_25
            };
            if r.get("error").is_some() {
                wire.validate(protocol, &["envelope", "error"], r);
            } else if let Some(res) = r.get("result") {
                wire.validate(protocol, &["methods", v, op, "result"], res);
            } else if let Some(m) = r.get("method").and_then(Value::as_str) {
                wire.validate(protocol, &["methods", v, m, "params"], &r["params"]);
            }
        }
        Protocol::Cas => {
            let Some((method, path)) = op.split_once(' ') else {
                return;
            };
            let path = path.split('?').next().unwrap_or(path);
            if ex.status.is_some_and(|s| s >= 400) {
                wire.validate(protocol, &["error"], r);
            } else if !r.is_null() {
                let t = cas_template(method, path);
                wire.validate(
                    protocol,
                    &[
                        "endpoints",
                        &t,
                        if is_event { "stream" } else { "response" },
                    ],
                    r,
                );
            }
        }
        Protocol::Agui => {
            if let Some(t) = r.get("type").and_then(Value::as_str) {
                wire.validate(protocol, &["events", t], r);
            }
        }
    }
}

/// `GET /cas/tasks/{id}` for `GET /tasks/0123…` (the client's paths are below `/cas`).
fn cas_template(method: &str, path: &str) -> String {
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let t: Vec<String> = match segs.as_slice() {
        ["tasks"] => vec!["tasks".into()],
        ["tasks", _] => vec!["tasks".into(), "{id}".into()],
        ["tasks", _, "authorizations", _] => vec![
            "tasks".into(),
            "{id}".into(),
            "authorizations".into(),
            "{provider}".into(),
        ],
        ["tasks", _, x] => vec!["tasks".into(), "{id}".into(), (*x).into()],
        ["host", "tasks", _, x] => vec!["host".into(), "tasks".into(), "{id}".into(), (*x).into()],
        ["reviews"] => vec!["reviews".into()],
        ["reviews", _, _] => vec!["reviews".into(), "{task_id}".into(), "{review_id}".into()],
        other => other.iter().map(|s| (*s).to_string()).collect(),
    };
    format!("{method} /cas/{}", t.join("/"))
}

/// The class of a JSON-RPC error code (A2A and MCP).
pub(crate) fn rpc_class(code: i64, message: &str) -> OpError {
    let class = match code {
        -32001 => ErrorClass::NotFound,
        -32002 => ErrorClass::NotCancelable,
        -32004 => ErrorClass::Terminal,
        -32700 | -32600 | -32601 | -32005 | -32020 | -32022 => ErrorClass::Invalid,
        // MCP reports unknown tasks as invalid params naming the task.
        -32602 if message.contains("unknown task") => ErrorClass::NotFound,
        -32602 => ErrorClass::Invalid,
        _ => ErrorClass::Other,
    };
    OpError::new(class, format!("JSON-RPC error {code}: {message}"))
}

/// The outcome of a raw request to a JSON-RPC endpoint (a malformed one), recorded
/// on `wire` as `request`: a JSON-RPC error in the body is classified by
/// `rpc_error` (given its code and the body), an HTTP error status by its class.
pub(crate) fn rpc_raw_outcome(
    wire: &Wire,
    protocol: Protocol,
    request: String,
    r: Result<RawResponse, ClientError>,
    rpc_error: impl FnOnce(i64, &Value) -> OpError,
) -> Result<(), OpError> {
    let raw = r.map_err(|e| classify(protocol, &e))?;
    let text = raw.text();
    wire.record(protocol, request, format!("{} {text}", raw.status));
    let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    if let Some(code) = v["error"]["code"].as_i64() {
        return Err(rpc_error(code, &v));
    }
    if raw.status >= 400 {
        return Err(http_class(raw.status, &text));
    }
    Ok(())
}

/// The class of an HTTP error status (CAS, AG-UI).
pub(crate) fn http_class(status: u16, body: &str) -> OpError {
    let class = match status {
        404 => ErrorClass::NotFound,
        409 if body.contains("task_terminal") || body.contains("wrong_state") => {
            ErrorClass::Terminal
        }
        409 => ErrorClass::NotCancelable,
        400 | 413 | 415 | 422 => ErrorClass::Invalid,
        _ => ErrorClass::Other,
    };
    OpError::new(
        class,
        format!("HTTP {status}: {}", crate::report::excerpt(body)),
    )
}

/// Classifies a client error.
pub(crate) fn classify(protocol: Protocol, e: &ClientError) -> OpError {
    match e {
        ClientError::Rpc(r) => {
            let mut o = rpc_class(r.code, &r.message);
            if let Some(reason) = &r.reason {
                o.detail.push_str(&format!(" [{reason}]"));
            }
            o
        }
        ClientError::Http { status, body, .. } => http_class(*status, body),
        ClientError::Grpc { code, message } => {
            // tonic codes: 3 INVALID_ARGUMENT, 5 NOT_FOUND, 9 FAILED_PRECONDITION.
            let class = match code {
                3 => ErrorClass::Invalid,
                5 => ErrorClass::NotFound,
                _ => ErrorClass::Other,
            };
            OpError::new(class, format!("gRPC status {code}: {message}"))
        }
        ClientError::NotImplemented(what) => OpError::unsupported(what),
        other => OpError::new(ErrorClass::Other, format!("{protocol}: {other}")),
    }
}

/// The members of a JSON object (an answer, a capability set); anything else has
/// none.
pub(crate) fn object(v: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    match v {
        serde_json::Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cas_paths_become_index_templates() {
        assert_eq!(cas_template("GET", "/tasks/abc"), "GET /cas/tasks/{id}");
        assert_eq!(cas_template("POST", "/tasks"), "POST /cas/tasks");
        assert_eq!(
            cas_template("POST", "/tasks/abc/input"),
            "POST /cas/tasks/{id}/input"
        );
        assert_eq!(
            cas_template("POST", "/tasks/abc/authorizations/github"),
            "POST /cas/tasks/{id}/authorizations/{provider}"
        );
        assert_eq!(
            cas_template("POST", "/host/tasks/abc/complete"),
            "POST /cas/host/tasks/{id}/complete"
        );
    }

    #[test]
    fn errors_are_classified() {
        assert_eq!(rpc_class(-32001, "x").class, ErrorClass::NotFound);
        assert_eq!(
            rpc_class(-32602, "unknown task: 1").class,
            ErrorClass::NotFound
        );
        assert_eq!(rpc_class(-32602, "bad").class, ErrorClass::Invalid);
        assert_eq!(rpc_class(-32004, "x").class, ErrorClass::Terminal);
        assert_eq!(
            http_class(409, "{\"error\":{\"code\":\"task_terminal\"}}").class,
            ErrorClass::Terminal
        );
        assert_eq!(http_class(404, "").class, ErrorClass::NotFound);
    }
}
