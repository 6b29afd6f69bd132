//! Optional outbound push: the status object POSTed to a URL given at creation,
//! every time the revision changes (the same object polling returns: push is an
//! optimisation over polling, never a different contract).
//!
//! Off by default ([`PushConfig::enabled`]). A task asks for it with the
//! `CAS-Push-Url` header on `POST /cas/tasks` (and optionally `CAS-Push-Token`,
//! sent back as `X-CAS-Push-Token`). Delivery runs in the process that created the
//! task and is best effort: each object is tried `attempts` times with a doubling
//! back-off with jitter; a restart ends it (poll to catch up). The delivery client
//! refuses non-public addresses when it connects (unless private addresses are
//! allowed) and never follows redirects: an answer of 3xx is a failed attempt.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use taskwire_core::{Caller, TaskId};
use taskwire_webhook::Backoff;

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

/// Checks a push URL with [`taskwire_webhook::check_url`]: http(s), a host, and
/// (unless private addresses are allowed) no address that is loopback, private,
/// link-local, shared or non-routable. Delivery checks the address again when it
/// connects and never follows a redirect.
pub(crate) async fn target(
    cfg: &PushConfig,
    url: &str,
    token: Option<String>,
) -> Result<Target, CasError> {
    if !cfg.enabled {
        return Err(CasError::invalid(
            HEADER_PUSH_URL,
            "push is not enabled on this server",
        ));
    }
    let url = taskwire_webhook::check_url(url, cfg.allow_private)
        .await
        .map_err(|e| CasError::invalid(HEADER_PUSH_URL, e.to_string()))?;
    Ok(Target { url, token })
}

/// Starts delivering the task's status objects to `target` until it is terminal.
pub(crate) fn spawn(inner: Arc<Inner>, caller: Caller, id: TaskId, target: Target) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        tracing::warn!(task = %id, "no runtime: push not started");
        return;
    };
    handle.spawn(async move {
        let cfg = inner.config.push.clone();
        let client = match taskwire_webhook::client(cfg.timeout, cfg.allow_private) {
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
            let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(30));
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
                    tokio::time::sleep(backoff.next_delay()).await;
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

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
