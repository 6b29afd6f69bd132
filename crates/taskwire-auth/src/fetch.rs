//! Bounded fetches of issuer metadata and key sets: https only (http only to a
//! loopback host), a timeout, no redirects, a size bound.

use std::net::IpAddr;
use std::time::Duration;

use reqwest::Url;

use crate::AuthError;

/// An HTTP client for one issuer's documents.
#[derive(Clone, Debug)]
pub(crate) struct Fetcher {
    client: reqwest::Client,
    max_bytes: usize,
}

impl Fetcher {
    pub(crate) fn new(timeout: Duration, max_bytes: usize) -> Result<Self, AuthError> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("taskwire/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| AuthError::Config(format!("HTTP client: {e}")))?;
        Ok(Self { client, max_bytes })
    }

    /// GETs `url` as JSON within the bounds.
    pub(crate) async fn json(&self, url: &Url) -> Result<serde_json::Value, AuthError> {
        let err = |reason: String| AuthError::Fetch {
            url: url.to_string(),
            reason,
        };
        let mut res = self
            .client
            .get(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| err(e.to_string()))?;
        if !res.status().is_success() {
            return Err(err(format!("status {}", res.status())));
        }
        if res
            .content_length()
            .is_some_and(|n| n > self.max_bytes as u64)
        {
            return Err(err(format!("larger than {} bytes", self.max_bytes)));
        }
        let mut body = Vec::new();
        while let Some(chunk) = res.chunk().await.map_err(|e| err(e.to_string()))? {
            if body.len() + chunk.len() > self.max_bytes {
                return Err(err(format!("larger than {} bytes", self.max_bytes)));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|e| err(format!("not JSON: {e}")))
    }
}

/// Parses `url` and checks it may be fetched: https, or http to a loopback host.
pub(crate) fn checked_url(what: &'static str, url: &str) -> Result<Url, AuthError> {
    let bad = |reason: &str| AuthError::Url {
        what,
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let u = Url::parse(url).map_err(|e| bad(&e.to_string()))?;
    match u.scheme() {
        "https" => {}
        "http" if is_loopback(&u) => {}
        "http" => return Err(bad("must be https (http only on a loopback host)")),
        _ => return Err(bad("must be an https URL")),
    }
    if u.fragment().is_some() || u.query().is_some() {
        return Err(bad("must have no query or fragment"));
    }
    Ok(u)
}

/// True if the URL's host is `localhost` or a loopback address.
pub(crate) fn is_loopback(u: &Url) -> bool {
    match u.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(a)) => IpAddr::V4(a).is_loopback(),
        Some(url::Host::Ipv6(a)) => IpAddr::V6(a).is_loopback(),
        None => false,
    }
}

/// Where an issuer's metadata may be, in the order the MCP authorization spec
/// gives: RFC 8414 (path inserted after `/.well-known/`), then OpenID Connect
/// Discovery path-inserted, then appended (the form OpenID Connect Discovery 1.0
/// itself defines).
pub(crate) fn metadata_urls(issuer: &Url) -> Vec<(Url, bool)> {
    let path = issuer.path().trim_end_matches('/');
    let mut base = issuer.clone();
    base.set_path("");
    let at = |p: String| {
        let mut u = base.clone();
        u.set_path(&p);
        u
    };
    let mut v = vec![
        (
            at(format!("/.well-known/oauth-authorization-server{path}")),
            false,
        ),
        (at(format!("/.well-known/openid-configuration{path}")), true),
    ];
    if !path.is_empty() {
        v.push((at(format!("{path}/.well-known/openid-configuration")), true));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http() {
        assert!(checked_url("issuer", "https://id.example.com/realms/x").is_ok());
        assert!(checked_url("issuer", "http://127.0.0.1:8080").is_ok());
        assert!(checked_url("issuer", "http://[::1]:8080/").is_ok());
        assert!(checked_url("issuer", "http://localhost:3000").is_ok());
        assert!(checked_url("issuer", "http://id.example.com").is_err());
        assert!(checked_url("issuer", "http://127.0.0.1.example.com").is_err());
        assert!(checked_url("issuer", "ftp://id.example.com").is_err());
        assert!(checked_url("issuer", "https://id.example.com/?a=b").is_err());
    }

    #[test]
    fn metadata_urls_follow_rfc_8414_and_oidc_discovery() {
        let urls = |i: &str| -> Vec<String> {
            metadata_urls(&Url::parse(i).expect("url"))
                .into_iter()
                .map(|(u, _)| u.to_string())
                .collect()
        };
        assert_eq!(
            urls("https://id.example.com"),
            [
                "https://id.example.com/.well-known/oauth-authorization-server",
                "https://id.example.com/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            urls("https://id.example.com/realms/acme"),
            [
                "https://id.example.com/.well-known/oauth-authorization-server/realms/acme",
                "https://id.example.com/.well-known/openid-configuration/realms/acme",
                "https://id.example.com/realms/acme/.well-known/openid-configuration"
            ]
        );
        // Auth0's issuer ends with a slash.
        assert_eq!(urls("https://t.auth0.com/").len(), 2);
    }
}
