//! Push notifications: configs stored with the task (durably, in a JSON file when
//! a path is configured) and delivery driven from the event log. Each update is a
//! `StreamResponse` in ProtoJSON, POSTed to the config's url with its token
//! (`X-A2A-Notification-Token`) and authentication (`Authorization`), retried with
//! exponential backoff and jitter: at least once, resuming after a restart from
//! the last delivered sequence number. Delivery never follows a redirect and never
//! connects to a non-public address unless private addresses are allowed
//! (`taskwire_webhook`: the URL is checked at creation and the address again at
//! every connection).

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use taskwire_core::{Access, Caller, Task, TaskId, TaskService};
use taskwire_webhook::Backoff;
use tokio_util::sync::CancellationToken;

use crate::convert::FrameBuilder;
use crate::error::{A2aError, Result};
use crate::{pb, protojson, A2aConfig};

/// The header carrying a config's token on each notification.
pub const TOKEN_HEADER: &str = "X-A2A-Notification-Token";

/// Maximum configs per task.
const MAX_CONFIGS_PER_TASK: usize = 16;

#[derive(Default, Serialize, Deserialize)]
struct PushState {
    tasks: BTreeMap<String, TaskPush>,
}

#[derive(Default, Serialize, Deserialize)]
struct TaskPush {
    configs: Vec<pb::TaskPushNotificationConfig>,
    /// Sequence number of the last event delivered (or skipped) for this task.
    delivered_seq: u64,
}

/// Stores push configs and delivers notifications.
#[derive(Clone)]
pub struct PushManager {
    inner: Arc<Inner>,
}

struct Inner {
    service: TaskService,
    allow_private: bool,
    path: Option<PathBuf>,
    max_attempts: u32,
    base_backoff: Duration,
    state: Mutex<PushState>,
    running: Mutex<HashSet<String>>,
    /// None when the guarded client could not be built: nothing is delivered.
    client: Option<reqwest::Client>,
    stop: CancellationToken,
    resumed: AtomicBool,
}

impl std::fmt::Debug for PushManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushManager")
            .field("path", &self.inner.path)
            .finish()
    }
}

impl PushManager {
    /// A manager; loads stored configs and resumes their delivery when a path is
    /// configured and a tokio runtime is running.
    pub fn new(service: TaskService, config: &A2aConfig) -> Self {
        let state = config
            .push_store_path
            .as_ref()
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|b| serde_json::from_slice::<PushState>(&b).ok())
            .unwrap_or_default();
        // No fallback to a default client: it would follow redirects and resolve
        // to any address. Without the guarded client, delivery is off.
        let client =
            match taskwire_webhook::client(Duration::from_secs(10), config.push_allow_private) {
                Ok(c) => Some(c),
                Err(e) => {
                    tracing::error!(error = %e, "push delivery disabled");
                    None
                }
            };
        let m = Self {
            inner: Arc::new(Inner {
                service,
                allow_private: config.push_allow_private,
                path: config.push_store_path.clone(),
                max_attempts: config.push_max_attempts.max(1),
                base_backoff: config.push_base_backoff,
                state: Mutex::new(state),
                running: Mutex::new(HashSet::new()),
                client,
                stop: CancellationToken::new(),
                resumed: AtomicBool::new(false),
            }),
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            m.resume_once();
        }
        m
    }

    /// Resumes the delivery of every stored config, once (at construction when a
    /// runtime is running, else on the first request).
    pub fn resume_once(&self) {
        if self.inner.resumed.swap(true, Ordering::AcqRel) {
            return;
        }
        let ids: Vec<String> = self
            .lock_state()
            .map(|s| {
                s.tasks
                    .iter()
                    .filter(|(_, t)| !t.configs.is_empty())
                    .map(|(k, _)| k.clone())
                    .collect()
            })
            .unwrap_or_default();
        for id in ids {
            if let Ok(id) = TaskId::parse(&id) {
                self.ensure_delivery(&id);
            }
        }
    }

    fn lock_state(&self) -> Result<std::sync::MutexGuard<'_, PushState>> {
        self.inner
            .state
            .lock()
            .map_err(|_| A2aError::internal("push state lock poisoned"))
    }

    fn persist(&self, state: &PushState) -> Result<()> {
        let Some(path) = &self.inner.path else {
            return Ok(());
        };
        let bytes = serde_json::to_vec(state).map_err(A2aError::internal)?;
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, bytes)
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(A2aError::internal)
    }

    /// Validates and stores a config for `task` (whose ownership the caller checked).
    pub async fn create(
        &self,
        _caller: &Caller,
        task: &Task,
        mut cfg: pb::TaskPushNotificationConfig,
    ) -> Result<pb::TaskPushNotificationConfig> {
        check_url(&cfg.url, self.inner.allow_private).await?;
        if cfg.id.is_empty() {
            cfg.id = taskwire_core::ids::random_id();
        }
        taskwire_core::ids::validate_external_id("id", &cfg.id)
            .map_err(|e| A2aError::invalid_params("params.id", e))?;
        cfg.task_id = task.id.as_str().to_string();
        {
            let mut st = self.lock_state()?;
            let entry = st
                .tasks
                .entry(cfg.task_id.clone())
                .or_insert_with(|| TaskPush {
                    configs: Vec::new(),
                    delivered_seq: task.last_seq,
                });
            entry.configs.retain(|c| c.id != cfg.id);
            if entry.configs.len() >= MAX_CONFIGS_PER_TASK {
                return Err(A2aError::invalid_params(
                    "params",
                    format!("at most {MAX_CONFIGS_PER_TASK} push configs per task"),
                ));
            }
            entry.configs.push(cfg.clone());
            self.persist(&st)?;
        }
        self.ensure_delivery(&task.id);
        Ok(cfg)
    }

    /// A config by task and id.
    pub fn get(&self, task: &TaskId, id: &str) -> Option<pb::TaskPushNotificationConfig> {
        let st = self.lock_state().ok()?;
        st.tasks
            .get(task.as_str())?
            .configs
            .iter()
            .find(|c| c.id == id)
            .cloned()
    }

    /// The configs of a task.
    pub fn list(&self, task: &TaskId) -> Vec<pb::TaskPushNotificationConfig> {
        self.lock_state()
            .ok()
            .and_then(|st| st.tasks.get(task.as_str()).map(|t| t.configs.clone()))
            .unwrap_or_default()
    }

    /// Deletes a config; false if there was none.
    pub async fn delete(&self, task: &TaskId, id: &str) -> Result<bool> {
        let mut st = self.lock_state()?;
        let Some(t) = st.tasks.get_mut(task.as_str()) else {
            return Ok(false);
        };
        let before = t.configs.len();
        t.configs.retain(|c| c.id != id);
        let removed = t.configs.len() != before;
        if removed {
            self.persist(&st)?;
        }
        Ok(removed)
    }

    /// Stops every delivery (pending notifications stay recorded and resume when
    /// a manager is created again over the same store path).
    pub fn shutdown(&self) {
        self.inner.stop.cancel();
    }

    fn ensure_delivery(&self, id: &TaskId) {
        if self.inner.stop.is_cancelled() {
            return;
        }
        let key = id.as_str().to_string();
        match self.inner.running.lock() {
            Ok(mut r) => {
                if !r.insert(key.clone()) {
                    return;
                }
            }
            Err(_) => return,
        }
        let me = self.clone();
        let id = id.clone();
        tokio::spawn(async move {
            if let Err(e) = me.deliver(&id).await {
                tracing::warn!(task = %id.as_str(), error = %e, "push delivery stopped");
            }
            if let Ok(mut r) = me.inner.running.lock() {
                r.remove(&key);
            }
        });
    }

    async fn deliver(&self, id: &TaskId) -> Result<()> {
        let svc = &self.inner.service;
        let task = svc.get_as(Access::System, id).await?;
        let after = self
            .lock_state()?
            .tasks
            .get(id.as_str())
            .map_or(task.last_seq, |t| t.delivered_seq);
        let mut builder = FrameBuilder::new(&task);
        let mut events = svc.subscribe(Access::System, id, after).await?;
        loop {
            let ev = tokio::select! {
                _ = self.inner.stop.cancelled() => return Ok(()),
                ev = events.next() => match ev {
                    None => return Ok(()),
                    Some(ev) => ev?,
                },
            };
            if let Some(frame) = builder.frame(&ev) {
                let body = protojson::to_string(&frame)?;
                for cfg in self.list(id) {
                    if !self.post(&cfg, &body).await {
                        // Stopped mid-delivery: the event stays undelivered.
                        return Ok(());
                    }
                }
            }
            let mut st = self.lock_state()?;
            if let Some(t) = st.tasks.get_mut(id.as_str()) {
                t.delivered_seq = ev.seq;
                self.persist(&st)?;
            }
        }
    }

    /// Delivers one notification, retrying; false if the manager was stopped.
    async fn post(&self, cfg: &pb::TaskPushNotificationConfig, body: &str) -> bool {
        let Some(client) = &self.inner.client else {
            return true;
        };
        let mut backoff = Backoff::new(self.inner.base_backoff, Duration::from_secs(30));
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
                Ok(r) if r.status().is_success() => return true,
                Ok(r) => {
                    let s = r.status();
                    if s.is_client_error() && s.as_u16() != 408 && s.as_u16() != 429 {
                        tracing::warn!(url = %cfg.url, status = %s, "push refused by receiver; not retried");
                        return true;
                    }
                    tracing::debug!(url = %cfg.url, status = %s, attempt, "push failed; retrying");
                }
                Err(e) => {
                    tracing::debug!(url = %cfg.url, error = %e, attempt, "push failed; retrying")
                }
            }
            if attempt == self.inner.max_attempts {
                tracing::warn!(url = %cfg.url, "push gave up after {attempt} attempts");
                return true;
            }
            tokio::select! {
                _ = self.inner.stop.cancelled() => return false,
                _ = tokio::time::sleep(backoff.next_delay()) => {}
            }
        }
        true
    }
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
