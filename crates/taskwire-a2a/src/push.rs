//! Push notifications: each config is a record of the store
//! ([`taskwire_core::record`], kind `PushConfig`) attached to its task, holding the
//! config, its delivery cursor (the sequence number of the last event delivered or
//! skipped) and its delivery state; it goes with the task when the task is swept.
//! Delivery is driven from the event log: each update is a `StreamResponse` in
//! ProtoJSON, POSTed to the config's url with its token (`X-A2A-Notification-Token`)
//! and authentication (`Authorization`), retried with exponential backoff and
//! jitter. It is at least once and in order per config, and leased like a turn:
//! exactly one worker (of this process or of another node sharing the store)
//! delivers a config at a time, advancing the cursor under its fence, and a
//! config whose worker died is taken over from its cursor once the lease lapses.
//! Delivery never follows a redirect and never connects to a non-public address
//! unless private addresses are allowed (`taskwire_webhook`: the URL is checked at
//! creation and the address again at every connection).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use taskwire_core::record::{PutOutcome, Quota, Record, RecordKind, RecordLease, RecordScope};
use taskwire_core::record_workers::RecordWorkers;
use taskwire_core::{Access, Caller, StoreError, Task, TaskId, TaskService};
use taskwire_webhook::{Backoff, Lookup, SystemLookup};
use tokio_util::sync::CancellationToken;

use crate::convert::FrameBuilder;
use crate::error::{A2aError, Result};
use crate::{pb, protojson, A2aConfig};

/// The header carrying a config's token on each notification.
pub const TOKEN_HEADER: &str = "X-A2A-Notification-Token";

/// Maximum configs per task.
const MAX_CONFIGS_PER_TASK: usize = 16;

const KIND: RecordKind = RecordKind::PushConfig;

/// What a config's record holds.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PushData {
    config: pb::TaskPushNotificationConfig,
    #[serde(default)]
    delivered: u64,
    #[serde(default)]
    failed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_error: Option<String>,
}

/// How delivery to one config stands (what its record says).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeliveryState {
    /// Sequence number of the last event delivered or given up on.
    pub cursor: u64,
    /// Notifications the receiver accepted.
    pub delivered: u64,
    /// Notifications not accepted (refused, unreachable, or given up after every
    /// attempt).
    pub failed: u64,
    /// Why the last one failed.
    pub last_error: Option<String>,
    /// Whether more may be delivered (false once the task ended and all of it was).
    pub active: bool,
}

/// Stores push configs and delivers notifications.
#[derive(Clone)]
pub struct PushManager {
    inner: Arc<Inner>,
}

struct Inner {
    service: TaskService,
    allow_private: bool,
    max_attempts: u32,
    base_backoff: Duration,
    max_per_principal: usize,
    /// Claim, lease and hand out the configs to deliver.
    workers: RecordWorkers,
    /// None when the guarded client could not be built: nothing is delivered.
    client: Option<reqwest::Client>,
    resumed: AtomicBool,
    /// Resolves push hosts (the system's resolver unless a test gives its own).
    lookup: Arc<dyn Lookup>,
}

impl std::fmt::Debug for PushManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushManager")
            .field("workers", &self.inner.workers)
            .finish()
    }
}

fn key(task: &TaskId, id: &str) -> String {
    format!("{}/{}", task.as_str(), id)
}

fn data_of(rec: &Record) -> Result<PushData> {
    serde_json::from_value(rec.data.clone())
        .map_err(|e| A2aError::internal(format!("stored push config {}: {e}", rec.id)))
}

fn to_data(d: &PushData) -> Result<serde_json::Value> {
    serde_json::to_value(d).map_err(A2aError::internal)
}

impl PushManager {
    /// A manager over the service's store; starts delivering (the stored configs
    /// that need a worker, and those created later) when a tokio runtime is running,
    /// else on the first request.
    pub fn new(service: TaskService, config: &A2aConfig) -> Self {
        Self::with_lookup(service, config, Arc::new(SystemLookup))
    }

    /// [`PushManager::new`], resolving push hosts with `lookup` both when a config
    /// is created and at every connection of delivery.
    pub fn with_lookup(service: TaskService, config: &A2aConfig, lookup: Arc<dyn Lookup>) -> Self {
        // No fallback to a default client: it would follow redirects and resolve
        // to any address. Without the guarded client, delivery is off.
        let client = match taskwire_webhook::client_with_tls(
            Duration::from_secs(10),
            config.push_allow_private,
            lookup.clone(),
            &config.push_tls,
        ) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::error!(error = %e, "push delivery disabled");
                None
            }
        };
        let m = Self {
            inner: Arc::new(Inner {
                service: service.clone(),
                allow_private: config.push_allow_private,
                max_attempts: config.push_max_attempts.max(1),
                base_backoff: config.push_base_backoff,
                max_per_principal: config.push_max_configs_per_principal.max(1),
                workers: RecordWorkers::new(
                    service.store().clone(),
                    KIND,
                    format!("push-{}", &taskwire_core::ids::random_id()[..12]),
                    config.push_lease,
                ),
                client,
                resumed: AtomicBool::new(false),
                lookup,
            }),
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            m.resume_once();
        }
        m
    }

    /// Starts the dispatcher, once: it claims the configs that need a worker (new
    /// ones, and those whose worker's lease lapsed) and delivers them.
    pub fn resume_once(&self) {
        if self.inner.resumed.swap(true, Ordering::AcqRel) || self.inner.client.is_none() {
            return;
        }
        let me = self.clone();
        self.inner.workers.start(move |rec, lease, lost| {
            let me = me.clone();
            async move {
                let id = rec.id.clone();
                if let Err(e) = me.deliver(rec, &lease, &lost).await {
                    tracing::warn!(config = %id, error = %e, "push delivery stopped");
                }
            }
        });
    }

    /// Validates and stores a config for `task` (whose ownership the caller checked).
    pub async fn create(
        &self,
        caller: &Caller,
        task: &Task,
        mut cfg: pb::TaskPushNotificationConfig,
    ) -> Result<pb::TaskPushNotificationConfig> {
        taskwire_webhook::check_url_with(&cfg.url, self.inner.allow_private, &*self.inner.lookup)
            .await
            .map_err(|e| A2aError::invalid_params("params.url", e.to_string()))?;
        if cfg.id.is_empty() {
            cfg.id = taskwire_core::ids::random_id();
        }
        taskwire_core::ids::validate_external_id("id", &cfg.id)
            .map_err(|e| A2aError::invalid_params("params.id", e))?;
        cfg.task_id = task.id.as_str().to_string();
        let store = self.inner.service.store();
        let existing = store
            .list_records(KIND, &RecordScope::Task(task.id.clone()))
            .await?;
        let id = key(&task.id, &cfg.id);
        if existing.len() >= MAX_CONFIGS_PER_TASK && !existing.iter().any(|r| r.id == id) {
            return Err(A2aError::invalid_params(
                "params",
                format!("at most {MAX_CONFIGS_PER_TASK} push configs per task"),
            ));
        }
        let data = PushData {
            config: cfg.clone(),
            delivered: 0,
            failed: 0,
            last_error: None,
        };
        let rec = Record::new(KIND, id, &caller.tenant, &caller.principal, to_data(&data)?)
            .for_task(task.id.clone())
            .at(task.last_seq)
            .active(!task.state.is_terminal());
        let quota = Quota {
            max: self.inner.max_per_principal,
            now: Utc::now(),
        };
        match store.put_record(rec, Some(quota)).await {
            Ok(PutOutcome::Stored { .. }) => {}
            Ok(PutOutcome::OverQuota { max }) => {
                metrics::counter!("taskwire_quota_refusals_total", "resource" => "a2a_push_config")
                    .increment(1);
                return Err(A2aError::invalid_params(
                    "params",
                    format!("at most {max} push configs of live tasks per caller"),
                ));
            }
            Err(StoreError::NotFound) => return Err(taskwire_core::CoreError::NotFound.into()),
            Err(e) => return Err(e.into()),
        }
        self.inner.workers.kick();
        Ok(cfg)
    }

    /// A config by task and id.
    pub async fn get(
        &self,
        task: &TaskId,
        id: &str,
    ) -> Result<Option<pb::TaskPushNotificationConfig>> {
        let store = self.inner.service.store();
        match store.get_record(KIND, &key(task, id)).await? {
            Some(rec) => Ok(Some(data_of(&rec)?.config)),
            None => Ok(None),
        }
    }

    /// The configs of a task.
    pub async fn list(&self, task: &TaskId) -> Result<Vec<pb::TaskPushNotificationConfig>> {
        let store = self.inner.service.store();
        store
            .list_records(KIND, &RecordScope::Task(task.clone()))
            .await?
            .iter()
            .map(|r| data_of(r).map(|d| d.config))
            .collect()
    }

    /// How delivery to a config stands.
    pub async fn delivery_state(&self, task: &TaskId, id: &str) -> Result<Option<DeliveryState>> {
        let store = self.inner.service.store();
        let Some(rec) = store.get_record(KIND, &key(task, id)).await? else {
            return Ok(None);
        };
        let d = data_of(&rec)?;
        Ok(Some(DeliveryState {
            cursor: rec.cursor,
            delivered: d.delivered,
            failed: d.failed,
            last_error: d.last_error,
            active: rec.active,
        }))
    }

    /// Deletes a config; false if there was none.
    pub async fn delete(&self, task: &TaskId, id: &str) -> Result<bool> {
        let store = self.inner.service.store();
        Ok(store.delete_record(KIND, &key(task, id)).await?)
    }

    /// Stops every delivery of this manager; leases it holds lapse (pending
    /// notifications stay recorded, and this or another manager over the same
    /// store resumes them from their cursors).
    pub fn shutdown(&self) {
        self.inner.workers.stop();
    }

    async fn deliver(
        &self,
        mut rec: Record,
        lease: &RecordLease,
        lost: &CancellationToken,
    ) -> Result<()> {
        let svc = &self.inner.service;
        let Some(task_id) = rec.task_id.clone() else {
            return Err(A2aError::internal("a push config record without a task"));
        };
        let mut data = data_of(&rec)?;
        let task = match svc.get_as(Access::System, &task_id).await {
            Ok(t) => t,
            // Gone with its task.
            Err(taskwire_core::CoreError::NotFound) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let mut builder = FrameBuilder::new(&task);
        let mut events = svc.subscribe(Access::System, &task_id, rec.cursor).await?;
        loop {
            let ev = tokio::select! {
                _ = lost.cancelled() => return Ok(()),
                ev = events.next() => match ev {
                    None => break,
                    Some(ev) => ev?,
                },
            };
            if let Some(frame) = builder.frame(&ev) {
                let body = protojson::to_string(&frame)?;
                match self.post(&data.config, &body, lost).await {
                    Posted::Delivered => data.delivered += 1,
                    Posted::Failed(why) => {
                        data.failed += 1;
                        data.last_error = Some(why);
                    }
                    // Stopped mid-delivery: the event stays undelivered.
                    Posted::Stopped => return Ok(()),
                }
            }
            rec.cursor = ev.seq;
            rec.data = to_data(&data)?;
            if !self.save(&mut rec, &mut data, lease).await? {
                return Ok(());
            }
        }
        // The task ended and everything up to its end was handled.
        rec.active = false;
        self.save(&mut rec, &mut data, lease).await?;
        Ok(())
    }

    /// Writes the cursor and state under the lease; false when delivery must stop
    /// (the config was deleted or the lease lost). A config replaced meanwhile (a
    /// create with the same id) keeps this cursor and delivers to its new target.
    async fn save(
        &self,
        rec: &mut Record,
        data: &mut PushData,
        lease: &RecordLease,
    ) -> Result<bool> {
        let store = self.inner.service.store();
        for _ in 0..3 {
            match store.update_record(rec, Some(lease)).await {
                Ok(v) => {
                    rec.version = v;
                    return Ok(true);
                }
                Err(StoreError::Conflict) => {
                    let Some(fresh) = store.get_record(KIND, &rec.id).await? else {
                        return Ok(false);
                    };
                    data.config = data_of(&fresh)?.config;
                    rec.version = fresh.version;
                    rec.data = to_data(data)?;
                }
                Err(StoreError::NotFound) | Err(StoreError::LeaseLost) => return Ok(false),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(false)
    }

    /// Delivers one notification, retrying.
    async fn post(
        &self,
        cfg: &pb::TaskPushNotificationConfig,
        body: &str,
        lost: &CancellationToken,
    ) -> Posted {
        let Some(client) = &self.inner.client else {
            return Posted::Failed("no delivery client".into());
        };
        let mut backoff = Backoff::new(self.inner.base_backoff, Duration::from_secs(30));
        let mut last = String::new();
        for attempt in 1..=self.inner.max_attempts {
            let mut req = client
                .post(&cfg.url)
                .header("content-type", "application/json")
                .body(body.to_string());
            if !cfg.token.is_empty() {
                req = req.header(TOKEN_HEADER, &cfg.token);
            }
            if let Some(a) = &cfg.authentication {
                if !a.scheme.is_empty() && !a.credentials.is_empty() {
                    req = req.header("authorization", format!("{} {}", a.scheme, a.credentials));
                }
            }
            match req.send().await {
                Ok(r) if r.status().is_success() => {
                    metrics::counter!("taskwire_push_deliveries_total", "protocol" => "a2a", "outcome" => "delivered").increment(1);
                    return Posted::Delivered;
                }
                Ok(r) => {
                    let s = r.status();
                    last = format!("receiver answered {s}");
                    if s.is_redirection() {
                        last = format!("receiver answered {s}; redirects are not followed");
                    }
                    if s.is_client_error() && s.as_u16() != 408 && s.as_u16() != 429 {
                        tracing::warn!(url = %cfg.url, status = %s, "push refused by receiver; not retried");
                        metrics::counter!("taskwire_push_deliveries_total", "protocol" => "a2a", "outcome" => "refused").increment(1);
                        return Posted::Failed(last);
                    }
                    tracing::debug!(url = %cfg.url, status = %s, attempt, "push failed; retrying");
                }
                Err(e) => {
                    last = taskwire_webhook::describe_error(&e);
                    if taskwire_webhook::refusal(&e).is_some() {
                        // Resolving again will not make the address public.
                        tracing::warn!(url = %cfg.url, error = %last, "push address refused; not retried");
                        metrics::counter!("taskwire_push_deliveries_total", "protocol" => "a2a", "outcome" => "refused_address").increment(1);
                        return Posted::Failed(last);
                    }
                    tracing::debug!(url = %cfg.url, error = %last, attempt, "push failed; retrying")
                }
            }
            if attempt == self.inner.max_attempts {
                tracing::warn!(url = %cfg.url, "push gave up after {attempt} attempts: {last}");
                metrics::counter!("taskwire_push_deliveries_total", "protocol" => "a2a", "outcome" => "failed").increment(1);
                return Posted::Failed(last);
            }
            tokio::select! {
                _ = lost.cancelled() => return Posted::Stopped,
                _ = tokio::time::sleep(backoff.next_delay()) => {}
            }
        }
        Posted::Failed(last)
    }
}

enum Posted {
    Delivered,
    Failed(String),
    Stopped,
}

/// Refuses urls that are not http(s) or that resolve to loopback, private or
/// link-local addresses (unless `allow_private`), saying why
/// ([`taskwire_webhook::check_url`]).
pub async fn check_url(url: &str, allow_private: bool) -> Result<()> {
    taskwire_webhook::check_url(url, allow_private)
        .await
        .map(|_| ())
        .map_err(|e| A2aError::invalid_params("params.url", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn private_urls_are_refused_with_a_reason() {
        let e = check_url("http://127.0.0.1:9/x", false).await.unwrap_err();
        assert!(e.message().contains("loopback"), "{}", e.message());
        let e = check_url("http://10.1.2.3/x", false).await.unwrap_err();
        assert!(e.message().contains("private"));
        let e = check_url("http://169.254.169.254/", false)
            .await
            .unwrap_err();
        assert!(e.message().contains("link-local"));
        let e = check_url("http://[::1]:80/", false).await.unwrap_err();
        assert!(e.message().contains("loopback"));
        assert!(check_url("http://127.0.0.1:9/x", true).await.is_ok());
        assert!(check_url("ftp://example.com/", true).await.is_err());
        assert!(check_url("http://8.8.8.8/hook", false).await.is_ok());
    }
}
