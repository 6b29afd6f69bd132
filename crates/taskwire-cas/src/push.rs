//! Optional outbound push: the status object POSTed to a URL given at creation,
//! every time the revision changes (the same object polling returns: push is an
//! optimisation over polling, never a different contract).
//!
//! Off by default ([`PushConfig::enabled`]). A task asks for it with the
//! `CAS-Push-Url` header on `POST /cas/tasks` (and optionally `CAS-Push-Token`,
//! sent back as `X-CAS-Push-Token`). The subscription is a record of the store
//! (kind `CasSubscription`, attached to the task, swept with it) holding the
//! target, the last revision delivered and the delivery state; it is delivered
//! under a lease ([`taskwire_core::record_workers::RecordWorkers`]) by one worker at a
//! time, of this process or of another node sharing the store, and resumed after
//! a restart from the last revision delivered. Each object is tried `attempts`
//! times with a doubling back-off with jitter, then skipped (poll to catch up).
//! The delivery client refuses non-public addresses when it connects (unless
//! private addresses are allowed) and never follows redirects: an answer of 3xx
//! is a failed attempt.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use taskwire_core::record::{Record, RecordKind, RecordLease};
use taskwire_core::{Caller, StoreError, TaskId};
use taskwire_webhook::Backoff;
use tokio_util::sync::CancellationToken;

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
#[non_exhaustive]
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
    /// Lease of a worker on a subscription it delivers (renewed every third of
    /// it; another worker takes over once it lapses).
    pub lease: Duration,
    /// TLS of deliveries to `https` push URLs: certificates trusted besides
    /// the built-in Mozilla roots and the system's (a private CA), and a
    /// client certificate for receivers that ask for one. One that does not
    /// parse disables delivery, logged.
    pub tls: taskwire_webhook::Tls,
}

impl Default for PushConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            allow_private: false,
            timeout: Duration::from_secs(10),
            attempts: 3,
            lease: Duration::from_secs(30),
            tls: taskwire_webhook::Tls::default(),
        }
    }
}

/// A validated push target.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    url: reqwest::Url,
    token: Option<String>,
}

/// What a subscription's record holds.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SubscriptionData {
    url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token: Option<String>,
    /// The revision of the last status object delivered (or given up on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_revision: Option<String>,
    #[serde(default)]
    delivered: u64,
    #[serde(default)]
    failed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_error: Option<String>,
}

const KIND: RecordKind = RecordKind::CasSubscription;

fn record_id(task: &TaskId) -> String {
    format!("{task}/push")
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

/// Stores the subscription of a task just created, and has it delivered.
pub(crate) async fn subscribe(
    inner: &Arc<Inner>,
    caller: &Caller,
    id: &TaskId,
    target: Target,
) -> Result<(), CasError> {
    let data = SubscriptionData {
        url: target.url.to_string(),
        token: target.token,
        last_revision: None,
        delivered: 0,
        failed: 0,
        last_error: None,
    };
    let data = serde_json::to_value(&data).map_err(|e| {
        CasError::from(taskwire_core::CoreError::Store(StoreError::Backend(
            e.to_string(),
        )))
    })?;
    let rec = Record::new(KIND, record_id(id), &caller.tenant, &caller.principal, data)
        .for_task(id.clone())
        .active(true);
    inner
        .service
        .store()
        .put_record(rec, None)
        .await
        .map_err(taskwire_core::CoreError::from)?;
    start(inner);
    inner.workers.kick();
    Ok(())
}

/// Starts the workers that deliver subscriptions (once; needs a runtime).
pub(crate) fn start(inner: &Arc<Inner>) {
    if !inner.config.push.enabled
        || tokio::runtime::Handle::try_current().is_err()
        || inner
            .push_started
            .swap(true, std::sync::atomic::Ordering::AcqRel)
    {
        return;
    }
    let client = match taskwire_webhook::client_with_tls(
        inner.config.push.timeout,
        inner.config.push.allow_private,
        Arc::new(taskwire_webhook::SystemLookup),
        &inner.config.push.tls,
    ) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cas push delivery disabled");
            return;
        }
    };
    let weak = Arc::downgrade(inner);
    inner.workers.start(move |rec, lease, lost| {
        let weak = weak.clone();
        let client = client.clone();
        async move {
            let Some(inner) = weak.upgrade() else {
                return;
            };
            if let Err(e) = deliver(inner, client, rec, lease, lost).await {
                tracing::warn!(error = %e, "cas push delivery stopped");
            }
        }
    });
}

async fn deliver(
    inner: Arc<Inner>,
    client: reqwest::Client,
    mut rec: Record,
    lease: RecordLease,
    lost: CancellationToken,
) -> Result<(), CasError> {
    let Some(id) = rec.task_id.clone() else {
        return Ok(());
    };
    let mut data: SubscriptionData = serde_json::from_value(rec.data.clone()).map_err(|e| {
        CasError::from(taskwire_core::CoreError::Store(StoreError::Corrupt(
            e.to_string(),
        )))
    })?;
    let caller = Caller::new(rec.tenant.clone(), rec.owner.clone());
    let cfg = inner.config.push.clone();
    let mut objects = std::pin::pin!(crate::revisions(
        inner.clone(),
        caller,
        id.clone(),
        data.last_revision.clone(),
    ));
    let store = inner.service.store().clone();
    loop {
        let status = tokio::select! {
            _ = lost.cancelled() => return Ok(()),
            s = objects.next() => match s {
                Some(s) => s,
                None => break,
            },
        };
        let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(30));
        let mut outcome = Err(String::new());
        for attempt in 1..=cfg.attempts.max(1) {
            let mut req = client.post(&data.url).json(&status);
            if let Some(t) = &data.token {
                req = req.header(HEADER_PUSH_TOKEN_OUT, t);
            }
            match req.send().await {
                Ok(r) if r.status().is_success() => {
                    outcome = Ok(());
                    break;
                }
                Ok(r) => {
                    tracing::debug!(task = %id, status = %r.status(), attempt, "push refused");
                    outcome = Err(format!("receiver answered {}", r.status()));
                }
                Err(e) => {
                    let why = taskwire_webhook::describe_error(&e);
                    tracing::debug!(task = %id, error = %why, attempt, "push failed");
                    let refused = taskwire_webhook::refusal(&e).is_some();
                    outcome = Err(why);
                    if refused {
                        break;
                    }
                }
            }
            if attempt < cfg.attempts {
                tokio::select! {
                    _ = lost.cancelled() => return Ok(()),
                    _ = tokio::time::sleep(backoff.next_delay()) => {}
                }
            }
        }
        let label = match &outcome {
            Ok(()) => "delivered",
            Err(_) => "failed",
        };
        metrics::counter!("taskwire_push_deliveries_total", "protocol" => "cas", "outcome" => label)
            .increment(1);
        match outcome {
            Ok(()) => data.delivered += 1,
            Err(why) => {
                data.failed += 1;
                data.last_error = Some(why);
            }
        }
        data.last_revision = Some(status.status.revision.clone());
        if !save(&*store, &mut rec, &data, &lease).await? {
            return Ok(());
        }
    }
    rec.active = false;
    save(&*store, &mut rec, &data, &lease).await?;
    Ok(())
}

/// Writes the delivery state under the lease; false once delivery must stop.
async fn save(
    store: &dyn taskwire_core::TaskStore,
    rec: &mut Record,
    data: &SubscriptionData,
    lease: &RecordLease,
) -> Result<bool, CasError> {
    rec.data = serde_json::to_value(data).map_err(|e| {
        CasError::from(taskwire_core::CoreError::Store(StoreError::Backend(
            e.to_string(),
        )))
    })?;
    match store.update_record(rec, Some(lease)).await {
        Ok(v) => {
            rec.version = v;
            Ok(true)
        }
        Err(StoreError::NotFound | StoreError::LeaseLost | StoreError::Conflict) => Ok(false),
        Err(e) => Err(taskwire_core::CoreError::from(e).into()),
    }
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
