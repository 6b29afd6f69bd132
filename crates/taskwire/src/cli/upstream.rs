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

#[cfg(feature = "bridge")]
/// The value of a `[NAME=]VALUE` flag for each upstream of `names`: an
/// unnamed value applies to every upstream, a named one (later) to its own;
/// a name no `--upstream` has is refused.
fn per_upstream(
    flag: &str,
    values: &[String],
    names: &[Option<String>],
) -> Result<Vec<Option<String>>, Error> {
    let mut out: Vec<Option<String>> = vec![None; names.len()];
    for v in values {
        let (name, rest) = split_named(v);
        let rest = rest.trim().to_string();
        match name {
            None => out.iter_mut().for_each(|o| *o = Some(rest.clone())),
            Some(n) => match names.iter().position(|o| o.as_deref() == Some(n)) {
                Some(i) => out[i] = Some(rest),
                None => {
                    return Err(Error::Usage(format!(
                        "{flag} names {n}, which no --upstream NAME=URL names"
                    )))
                }
            },
        }
    }
    Ok(out)
}

/// The outbound OAuth configuration of each upstream of `names` (`None`: the
/// upstream gets no OAuth client), from the `--upstream-oauth-*` flags.
/// Secrets and keys come from files only, read here, at start.
#[cfg(feature = "bridge")]
pub(super) fn upstream_oauth(
    args: &UpstreamArgs,
    names: &[Option<String>],
) -> Result<Vec<Option<taskwire_bridge::oauth::OAuthConfig>>, Error> {
    use taskwire_bridge::oauth::{
        AssertionSource, AuthorizationServer, ClientAuth, OAuthConfig, Secret, SecretMethod,
    };
    let ids = per_upstream("--upstream-oauth-client-id", &args.oauth_client_id, names)?;
    let secrets = per_upstream(
        "--upstream-oauth-client-secret-file",
        &args.oauth_client_secret_file,
        names,
    )?;
    let keys = per_upstream(
        "--upstream-oauth-private-key-file",
        &args.oauth_private_key_file,
        names,
    )?;
    let algs = per_upstream(
        "--upstream-oauth-signing-alg",
        &args.oauth_signing_alg,
        names,
    )?;
    let assertions = per_upstream(
        "--upstream-oauth-assertion-file",
        &args.oauth_assertion_file,
        names,
    )?;
    let scopes = per_upstream("--upstream-oauth-scopes", &args.oauth_scopes, names)?;
    let methods = per_upstream(
        "--upstream-oauth-token-endpoint-auth",
        &args.oauth_token_endpoint_auth,
        names,
    )?;
    let issuers = per_upstream("--upstream-oauth-issuer", &args.oauth_issuer, names)?;
    let resources = per_upstream("--upstream-oauth-resource", &args.oauth_resource, names)?;
    let read = |flag: &str, path: &str| -> Result<Secret, Error> {
        let s = Secret::from_file(std::path::Path::new(path))
            .map_err(|e| Error::Usage(format!("{flag} {path}: {e}")))?;
        if s.expose().iter().all(u8::is_ascii_whitespace) {
            return Err(Error::Usage(format!("{flag} {path} is empty")));
        }
        Ok(s)
    };
    let mut out = Vec::with_capacity(names.len());
    for i in 0..names.len() {
        let who = names[i].as_deref().unwrap_or("the upstream");
        let wanted = ids[i].is_some()
            || secrets[i].is_some()
            || keys[i].is_some()
            || assertions[i].is_some();
        if !wanted {
            if scopes[i].is_some()
                || methods[i].is_some()
                || issuers[i].is_some()
                || resources[i].is_some()
            {
                return Err(Error::Usage(format!(
                    "--upstream-oauth-* flags for {who} need --upstream-oauth-client-id or --upstream-oauth-assertion-file"
                )));
            }
            out.push(None);
            continue;
        }
        if secrets[i].is_some() && keys[i].is_some() {
            return Err(Error::Usage(format!(
                "{who}: --upstream-oauth-client-secret-file and --upstream-oauth-private-key-file exclude each other"
            )));
        }
        let auth = match (methods[i].as_deref(), &secrets[i], &keys[i]) {
            (Some("none"), None, None) | (None, None, None) => ClientAuth::None,
            (m @ (Some("client_secret_basic" | "client_secret_post") | None), Some(f), None) => {
                ClientAuth::Secret {
                    secret: read("--upstream-oauth-client-secret-file", f)?,
                    method: match m {
                        Some("client_secret_basic") => Some(SecretMethod::Basic),
                        Some(_) => Some(SecretMethod::Post),
                        None => None,
                    },
                }
            }
            (Some("private_key_jwt") | None, None, Some(f)) => {
                let alg = algs[i].as_deref().unwrap_or("ES256");
                let algorithm: taskwire_bridge::oauth::SigningAlgorithm =
                    alg.parse().map_err(|_| {
                        Error::Usage(format!(
                            "--upstream-oauth-signing-alg {alg}: not a JWS algorithm"
                        ))
                    })?;
                ClientAuth::PrivateKeyJwt {
                    key_pem: read("--upstream-oauth-private-key-file", f)?,
                    algorithm,
                    key_id: None,
                }
            }
            (m, _, _) => {
                let m = m.unwrap_or("(default)");
                return Err(Error::Usage(format!(
                    "{who}: --upstream-oauth-token-endpoint-auth {m} does not fit the credentials given                      (client_secret_basic and client_secret_post take --upstream-oauth-client-secret-file,                      private_key_jwt --upstream-oauth-private-key-file, none neither)"
                )));
            }
        };
        if !matches!(auth, ClientAuth::None) && ids[i].is_none() {
            return Err(Error::Usage(format!(
                "{who}: a client secret or key needs --upstream-oauth-client-id"
            )));
        }
        let mut config = match &assertions[i] {
            Some(f) => {
                if !std::path::Path::new(f).is_file() {
                    return Err(Error::Usage(format!(
                        "--upstream-oauth-assertion-file {f}: not a readable file"
                    )));
                }
                OAuthConfig::jwt_bearer(ids[i].clone(), AssertionSource::File(f.into()))
                    .with_auth(auth)
            }
            None => OAuthConfig::client_credentials(ids[i].clone().unwrap_or_default(), auth),
        };
        if let Some(s) = &scopes[i] {
            let list: Vec<&str> = s.split_whitespace().collect();
            config = config.with_scopes(list.clone()).with_allowed_scopes(list);
        }
        if let Some(iss) = &issuers[i] {
            config = config.with_authorization_server(AuthorizationServer::Issuer(iss.clone()));
        }
        if let Some(r) = &resources[i] {
            config = config.with_resource(r.clone());
        }
        out.push(Some(config.with_max_step_ups(args.oauth_max_step_ups)));
    }
    Ok(out)
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
    let names: Vec<Option<String>> = list.iter().map(|e| e.name.clone()).collect();
    let mut oauth = Vec::with_capacity(list.len());
    for (c, e) in upstream_oauth(&args.upstream, &names)?
        .into_iter()
        .zip(&list)
    {
        oauth.push(match c {
            Some(mut c) => {
                c.root_certificates_pem = root_certificates_pem.clone();
                Some(
                    taskwire_bridge::oauth::OAuthClient::new(c).map_err(|err| {
                        Error::Usage(format!("outbound OAuth of {}: {err}", e.url))
                    })?,
                )
            }
            None => None,
        });
    }
    let options = |token: &Option<String>, oauth: &Option<taskwire_bridge::oauth::OAuthClient>| {
        taskwire_bridge::UpstreamOptions {
            bearer_token: token.clone(),
            oauth: oauth.clone(),
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
        }
    };
    match list.as_slice() {
        [one] => taskwire_bridge::connect(
            &one.url,
            &options(&one.token, &oauth[0]),
            mcp,
            Some(store.clone()),
        )
        .await
        .map_err(|e| upstream_error(&one.url, &e)),
        _ => {
            let named: Vec<_> = list
                .iter()
                .zip(&oauth)
                .map(|(e, o)| {
                    (
                        e.name.clone().unwrap_or_default(),
                        e.url.clone(),
                        options(&e.token, o),
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
