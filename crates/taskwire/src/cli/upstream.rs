//! Bridge mode from the command line: `--upstream` entries checked, named, and
//! turned into the bridged agent.

use std::sync::Arc;

use taskwire_core::{Agent, TaskStore};

use super::args::{ServeArgs, UpstreamArgs};
#[cfg(feature = "bridge")]
use super::tls_files::{read_ca_files, read_identity};
use crate::error::Error;

/// Most `--upstream` one server takes (the bridge's own limit,
/// `taskwire_bridge::many::MAX_UPSTREAMS`).
pub(super) const MAX_UPSTREAMS: usize = 32;

/// `NAME=REST` when the part before the first `=` names an upstream (letters,
/// digits, `_` and `-` only, so a URL, whose scheme has `:`, never does).
pub(crate) fn split_named(arg: &str) -> (Option<&str>, &str) {
    match arg.split_once('=') {
        Some((name, rest))
            if !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
        {
            (Some(name), rest)
        }
        _ => (None, arg),
    }
}

/// One upstream of `--upstream`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct UpstreamEntry {
    /// Its `NAME=` (several upstreams), or none (one).
    pub name: Option<String>,
    /// Its URL.
    pub url: String,
    /// Its bearer token (`--upstream-token`, or its `--upstream-token-file`).
    pub token: Option<String>,
}

/// The upstreams of `--upstream`, checked: one unnamed upstream, or several
/// with distinct names; token files name upstreams that exist, are readable
/// and not empty.
pub(super) fn upstreams_of(args: &UpstreamArgs) -> Result<Vec<UpstreamEntry>, Error> {
    let list: Vec<(Option<String>, String)> = args
        .url
        .iter()
        .map(|a| {
            let (n, u) = split_named(a);
            (n.map(str::to_string), u.trim().to_string())
        })
        .collect();
    if list.len() > MAX_UPSTREAMS {
        return Err(Error::Usage(format!(
            "{} --upstream: a bridge serves at most {MAX_UPSTREAMS}",
            list.len()
        )));
    }
    if list.len() > 1 {
        for (i, (n, u)) in list.iter().enumerate() {
            let Some(n) = n else {
                return Err(Error::Usage(format!(
                    "several --upstream need a name each (--upstream NAME=URL); {u} has none"
                )));
            };
            if list[..i]
                .iter()
                .any(|(o, _)| o.as_deref() == Some(n.as_str()))
            {
                return Err(Error::Usage(format!("two --upstream are named {n}")));
            }
        }
    }
    let mut tokens: Vec<Option<String>> = vec![args.token.clone(); list.len()];
    for f in &args.token_file {
        let (name, path) = split_named(f);
        let token = std::fs::read_to_string(path)
            .map_err(|e| Error::Usage(format!("--upstream-token-file {path}: {e}")))?
            .trim()
            .to_string();
        if token.is_empty() {
            return Err(Error::Usage(format!(
                "--upstream-token-file {path} is empty"
            )));
        }
        match name {
            None => tokens.iter_mut().for_each(|t| *t = Some(token.clone())),
            Some(n) => match list.iter().position(|(o, _)| o.as_deref() == Some(n)) {
                Some(i) => tokens[i] = Some(token),
                None => {
                    return Err(Error::Usage(format!(
                        "--upstream-token-file names {n}, which no --upstream NAME=URL names"
                    )))
                }
            },
        }
    }
    Ok(list
        .into_iter()
        .zip(tokens)
        .map(|((name, url), token)| UpstreamEntry { name, url, token })
        .collect())
}

/// The bridge agent of `--upstream` (discovers the upstreams).
#[cfg(feature = "bridge")]
pub(crate) async fn upstream_agent(
    args: &ServeArgs,
    store: &Arc<dyn TaskStore>,
) -> Result<Arc<dyn Agent>, Error> {
    let list = upstreams_of(&args.upstream)?;
    let mcp: taskwire_bridge::McpVersion = args
        .upstream
        .mcp_version
        .as_deref()
        .unwrap_or("auto")
        .parse()
        .map_err(|e: taskwire_bridge::BridgeError| Error::Usage(e.to_string()))?;
    let max_message_bytes = usize::try_from(args.upstream.max_message_bytes).unwrap_or(usize::MAX);
    let root_certificates_pem = read_ca_files("--upstream-ca-file", &args.upstream.ca_file)?;
    let client_identity = read_identity(
        (
            "--upstream-client-cert",
            args.upstream.client_cert.as_deref(),
        ),
        ("--upstream-client-key", args.upstream.client_key.as_deref()),
    )?
    .map(|i| taskwire_bridge::ClientIdentityPem::new(i.chain, i.key));
    let options = |token: &Option<String>| taskwire_bridge::UpstreamOptions {
        bearer_token: token.clone(),
        max_message_bytes,
        root_certificates_pem: root_certificates_pem.clone(),
        client_identity: client_identity.clone(),
        max_open_calls: args.upstream.max_open_calls as usize,
        max_open_calls_per_principal: args.upstream.max_open_calls_per_principal as usize,
        max_open_messages: args.upstream.max_open_messages as usize,
        max_list_pages: args.upstream.max_list_pages as usize,
        max_link_records: args.upstream.max_link_records as usize,
        catch_up_records: args.upstream.catch_up_records as usize,
        ..taskwire_bridge::UpstreamOptions::default()
    };
    match list.as_slice() {
        [one] => taskwire_bridge::connect(&one.url, &options(&one.token), mcp, Some(store.clone()))
            .await
            .map_err(|e| upstream_error(&one.url, &e)),
        _ => {
            let named: Vec<_> = list
                .iter()
                .map(|e| {
                    (
                        e.name.clone().unwrap_or_default(),
                        e.url.clone(),
                        options(&e.token),
                    )
                })
                .collect();
            let urls = list
                .iter()
                .map(|e| e.url.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            taskwire_bridge::connect_many(&named, mcp, Some(store.clone()))
                .await
                .map_err(|e| upstream_error(&urls, &e))
        }
    }
}

/// This build has no bridge: `--upstream` is refused.
#[cfg(not(feature = "bridge"))]
pub(crate) async fn upstream_agent(
    args: &ServeArgs,
    _store: &Arc<dyn TaskStore>,
) -> Result<Arc<dyn Agent>, Error> {
    Err(Error::Upstream {
        url: args.upstream.url.join(", "),
        reason: "this build has no bridge support (the `bridge` feature)".into(),
    })
}

#[cfg(feature = "bridge")]
pub(crate) fn upstream_error(url: &str, e: &taskwire_bridge::BridgeError) -> Error {
    Error::Upstream {
        url: url.to_string(),
        reason: e.to_string(),
    }
}
