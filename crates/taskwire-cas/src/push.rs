//! Optional outbound push: the status object POSTed to a URL given at creation,
//! every time the revision changes (the same object polling returns: push is an
//! optimisation over polling, never a different contract).
//!
//! Off by default ([`PushConfig::enabled`]). A task asks for it with the
//! `CAS-Push-Url` header on `POST /cas/tasks` (and optionally `CAS-Push-Token`,
//! sent back as `X-CAS-Push-Token`). Delivery runs in the process that created the
//! task and is best effort: each object is tried `attempts` times with a doubling
//! back-off; a restart ends it (poll to catch up).

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use taskwire_core::{Caller, TaskId};

use crate::error::CasError;
use crate::Inner;

/// Request header naming the URL to push status objects to.
pub const HEADER_PUSH_URL: &str = "cas-push-url";
/// Request header with a token the receiver can check.
pub const HEADER_PUSH_TOKEN: &str = "cas-push-token";
/// Header carrying that token on each push.
pub const HEADER_PUSH_TOKEN_OUT: &str = "x-cas-push-token";

/// Outbound push settings.
#[derive(Clone, Debug)]
pub struct PushConfig {
    /// Accept `CAS-Push-Url` at all (default false).
    pub enabled: bool,
    /// Allow URLs that resolve to loopback, private or link-local addresses
    /// (default false: refused, to keep the server from being used against its
    /// own network).
    pub allow_private: bool,
    /// Timeout of one delivery attempt.
    pub timeout: Duration,
    /// Attempts per status object.
    pub attempts: u32,
}

impl Default for PushConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            allow_private: false,
            timeout: Duration::from_secs(10),
            attempts: 3,
        }
    }
}

/// A validated push target.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    url: reqwest::Url,
    token: Option<String>,
}

fn why_private(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => {
            if v4.is_loopback() {
                Some("loopback")
            } else if v4.is_private() {
                Some("private")
            } else if v4.is_link_local() {
                Some("link-local")
            } else if v4.is_unspecified() || v4.is_broadcast() {
                Some("unspecified")
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return why_private(IpAddr::V4(v4));
            }
            let seg = v6.segments()[0];
            if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if seg & 0xfe00 == 0xfc00 {
                Some("private")
            } else if seg & 0xffc0 == 0xfe80 {
                Some("link-local")
            } else {
                None
            }
        }
    }
}

/// Checks a push URL: http(s), a host, and (unless allowed) no address that is
/// loopback, private or link-local.
pub(crate) async fn target(
    cfg: &PushConfig,
    url: &str,
    token: Option<String>,
) -> Result<Target, CasError> {
    let bad = |reason: String| CasError::invalid(HEADER_PUSH_URL, reason);
    if !cfg.enabled {
        return Err(bad("push is not enabled on this server".into()));
    }
    let parsed = reqwest::Url::parse(url).map_err(|e| bad(format!("not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("only http and https URLs".into()));
    }
    let host = parsed
        .host_str()
        .ok_or_else(|| bad("the URL needs a host".into()))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    if !cfg.allow_private {
        let port = parsed.port_or_known_default().unwrap_or(80);
        let addrs = tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|e| bad(format!("cannot resolve {host}: {e}")))?;
        for a in addrs {
            if let Some(why) = why_private(a.ip()) {
                return Err(bad(format!("{host} resolves to a {why} address")));
            }
        }
    }
    Ok(Target { url: parsed, token })
}

/// Starts delivering the task's status objects to `target` until it is terminal.
pub(crate) fn spawn(inner: Arc<Inner>, caller: Caller, id: TaskId, target: Target) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        tracing::warn!(task = %id, "no runtime: push not started");
        return;
    };
    handle.spawn(async move {
        let cfg = inner.config.push.clone();
        let client = match reqwest::Client::builder().timeout(cfg.timeout).build() {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(task = %id, error = %e, "push client");
                return;
            }
        };
        let rx = inner.service.store().hub().watch(&id);
        let mut objects = std::pin::pin!(crate::revisions(
            inner.clone(),
            caller,
            id.clone(),
            rx,
            None
        ));
        while let Some(status) = objects.next().await {
            let mut delay = Duration::from_millis(200);
            for attempt in 1..=cfg.attempts.max(1) {
                let mut req = client.post(target.url.clone()).json(&status);
                if let Some(t) = &target.token {
                    req = req.header(HEADER_PUSH_TOKEN_OUT, t);
                }
                match req.send().await {
                    Ok(r) if r.status().is_success() => break,
                    Ok(r) => {
                        tracing::debug!(task = %id, status = %r.status(), attempt, "push refused")
                    }
                    Err(e) => tracing::debug!(task = %id, error = %e, attempt, "push failed"),
                }
                if attempt < cfg.attempts {
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_are_named() {
        assert_eq!(why_private("127.0.0.1".parse().unwrap()), Some("loopback"));
        assert_eq!(why_private("10.1.2.3".parse().unwrap()), Some("private"));
        assert_eq!(
            why_private("169.254.1.1".parse().unwrap()),
            Some("link-local")
        );
        assert_eq!(why_private("::1".parse().unwrap()), Some("loopback"));
        assert_eq!(why_private("fd00::1".parse().unwrap()), Some("private"));
        assert_eq!(
            why_private("::ffff:127.0.0.1".parse().unwrap()),
            Some("loopback")
        );
        assert_eq!(why_private("93.184.216.34".parse().unwrap()), None);
    }

    #[tokio::test]
    async fn targets_are_checked() {
        let off = PushConfig::default();
        assert!(target(&off, "http://93.184.216.34/", None).await.is_err());
        let on = PushConfig {
            enabled: true,
            ..PushConfig::default()
        };
        assert!(target(&on, "ftp://93.184.216.34/", None).await.is_err());
        let e = target(&on, "http://127.0.0.1:9/hook", None)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("loopback"), "{e}");
        assert!(target(&on, "http://93.184.216.34/hook", None).await.is_ok());
        let lan = PushConfig {
            allow_private: true,
            ..on
        };
        assert!(target(&lan, "http://127.0.0.1:9/hook", None).await.is_ok());
    }
}
