//! Push notifications: config CRUD, delivery with token and authentication,
//! SSRF refusal, "not supported", retries and resumption after a restart.

#![allow(clippy::unwrap_used, reason = "test helpers")]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use common::{check_fixture, send_params, start, test_config};
use serde_json::{json, Value};
use taskwire_a2a::push::PushManager;
use taskwire_a2a::{pb, A2aConfig};
use taskwire_core::{
    Caller, CreateTask, MemoryStore, Message, Runtime, RuntimeConfig, ScriptedAgent, TaskService,
};

type Posts = Arc<Mutex<Vec<(HeaderMap, Value)>>>;

/// A receiver on 127.0.0.1 recording posts; the first `fail_first` get a 503.
async fn receiver(fail_first: usize) -> (String, Posts) {
    let posts: Posts = Arc::default();
    let failures = Arc::new(Mutex::new(fail_first));
    let p = posts.clone();
    let app = Router::new().route(
        "/hook",
        post(move |headers: HeaderMap, body: String| {
            let p = p.clone();
            let failures = failures.clone();
            async move {
                {
                    let mut f = failures.lock().unwrap();
                    if *f > 0 {
                        *f -= 1;
                        return StatusCode::SERVICE_UNAVAILABLE;
                    }
                }
                p.lock()
                    .unwrap()
                    .push((headers, serde_json::from_str(&body).unwrap()));
                StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/hook"), posts)
}

/// A task of `caller`'s waiting for input (the scripted agent's `ask`).
async fn waiting_task(svc: &TaskService, caller: &Caller) -> taskwire_core::Task {
    let task = svc
        .create(caller, CreateTask::new(Message::user_text("ask go?")))
        .await
        .unwrap()
        .task;
    svc.wait_until(caller, &task.id, Duration::from_secs(10), |t| {
        t.state.is_interrupted()
    })
    .await
    .unwrap()
}

async fn wait_for_state(posts: &Posts, state: &str) -> Vec<(HeaderMap, Value)> {
    for _ in 0..400 {
        {
            let p = posts.lock().unwrap();
            if p.iter()
                .any(|(_, b)| b["statusUpdate"]["status"]["state"] == state)
            {
                return p.clone();
            }
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no {state} notification; got {:?}", posts.lock().unwrap());
}

#[tokio::test]
async fn config_crud_and_delivery() {
    let s = start(test_config()).await;
    let (url, posts) = receiver(0).await;
    let r = s.rpc("SendMessage", send_params("ask ok?", "m-push")).await;
    let id = r["result"]["task"]["id"].as_str().unwrap().to_string();
    let c = s
        .rpc(
            "CreateTaskPushNotificationConfig",
            json!({
                "taskId": id, "id": "fixed-cfg", "url": url, "token": "tok-1",
                "authentication": {"scheme": "Bearer", "credentials": "secret"}
            }),
        )
        .await;
    assert_eq!(c["result"]["id"], "fixed-cfg", "{c}");
    check_fixture("push_config", &c);
    let g = s
        .rpc(
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "fixed-cfg"}),
        )
        .await;
    assert_eq!(g["result"]["token"], "tok-1");
    let l = s
        .rpc("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert_eq!(l["result"]["configs"].as_array().unwrap().len(), 1);
    check_fixture("push_config_list", &l);
    let mut p = send_params("yes", "m-push-2");
    p["message"]["taskId"] = json!(id);
    s.rpc("SendMessage", p).await;
    let got = wait_for_state(&posts, "TASK_STATE_COMPLETED").await;
    for (h, _) in &got {
        assert_eq!(h["x-a2a-notification-token"], "tok-1");
        assert_eq!(h["authorization"], "Bearer secret");
    }
    let states: Vec<&Value> = got
        .iter()
        .filter_map(|(_, b)| b.get("statusUpdate"))
        .map(|u| &u["status"]["state"])
        .collect();
    assert_eq!(states.first().unwrap().as_str(), Some("TASK_STATE_WORKING"));
    let bodies: Vec<Value> = got.iter().map(|(_, b)| b.clone()).collect();
    check_fixture("push_notifications", &Value::Array(bodies));
    let d = s
        .rpc(
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": id, "id": "fixed-cfg"}),
        )
        .await;
    assert_eq!(d["result"], json!({}), "{d}");
    // Delete is idempotent: the config is gone, deleting it again succeeds.
    let again = s
        .rpc(
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": id, "id": "fixed-cfg"}),
        )
        .await;
    assert_eq!(again["result"], json!({}), "{again}");
    let never = s
        .rpc(
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": id, "id": "never-created"}),
        )
        .await;
    assert_eq!(never["result"], json!({}), "{never}");
    // An unknown task is still TaskNotFound.
    let unknown = s
        .rpc(
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": "0".repeat(32), "id": "fixed-cfg"}),
        )
        .await;
    assert_eq!(unknown["error"]["code"], -32001, "{unknown}");
    let l = s
        .rpc("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert!(l["result"]
        .get("configs")
        .is_none_or(|c| c.as_array().unwrap().is_empty()));
    let e = s
        .rpc(
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "fixed-cfg"}),
        )
        .await;
    // A2A 1.0 §3.1.8: a config that does not exist is TaskNotFoundError.
    assert_eq!(e["error"]["code"], -32001, "{e}");
    assert_eq!(e["error"]["data"][0]["reason"], "TASK_NOT_FOUND");
    s.stop().await;
}

#[tokio::test]
async fn config_in_send_message_configuration() {
    let s = start(test_config()).await;
    let (url, posts) = receiver(2).await;
    let mut p = send_params("sleep 50\nhi", "m-push-cfg");
    p["configuration"] = json!({
        "returnImmediately": true,
        "taskPushNotificationConfig": {"url": url, "token": "t2"}
    });
    let r = s.rpc("SendMessage", p).await;
    assert!(r.get("result").is_some(), "{r}");
    // The first two posts fail with 503 and are retried.
    let got = wait_for_state(&posts, "TASK_STATE_COMPLETED").await;
    assert!(got.iter().any(|(_, b)| b.get("artifactUpdate").is_some()));
    s.stop().await;
}

#[tokio::test]
async fn private_urls_are_refused_and_disabled_push_is_not_supported() {
    let mut cfg = test_config();
    cfg.push_allow_private = false;
    let s = start(cfg).await;
    let r = s.rpc("SendMessage", send_params("ask ok?", "m-ssrf")).await;
    let id = r["result"]["task"]["id"].as_str().unwrap().to_string();
    let e = s
        .rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": "http://127.0.0.1:9/hook"}),
        )
        .await;
    assert_eq!(e["error"]["code"], -32602, "{e}");
    let msg = e["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("loopback") && msg.contains("--push-allow-private"),
        "{msg}"
    );
    s.stop().await;

    let mut cfg = test_config();
    cfg.push_notifications = false;
    let s = start(cfg).await;
    let r = s
        .rpc("SendMessage", send_params("ask ok?", "m-nopush"))
        .await;
    let id = r["result"]["task"]["id"].as_str().unwrap().to_string();
    for (m, p) in [
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": "https://example.com/h"}),
        ),
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "x"}),
        ),
        ("ListTaskPushNotificationConfigs", json!({"taskId": id})),
        (
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": id, "id": "x"}),
        ),
    ] {
        let e = s.rpc(m, p).await;
        assert_eq!(e["error"]["code"], -32003, "{m}: {e}");
        assert_eq!(
            e["error"]["data"][0]["reason"],
            "PUSH_NOTIFICATION_NOT_SUPPORTED"
        );
    }
    let card: Value = s
        .client
        .get(format!("{}/.well-known/agent-card.json", s.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["capabilities"]["pushNotifications"], false);
    s.stop().await;
}

#[tokio::test]
async fn delivery_resumes_after_a_restart() {
    let store = Arc::new(MemoryStore::new());
    let svc = TaskService::new(store, "scripted");
    let rt = Runtime::start(
        svc.clone(),
        Arc::new(ScriptedAgent::new()),
        RuntimeConfig::default(),
    );
    let caller = Caller::new("default", "alice");
    let cfg = {
        let mut v = A2aConfig::default();
        v.push_allow_private = true;
        v.push_base_backoff = Duration::from_millis(20);
        v.push_lease = Duration::from_millis(300);
        v
    };
    let task = waiting_task(&svc, &caller).await;
    let (url, posts) = receiver(0).await;
    let first = PushManager::new(svc.clone(), &cfg);
    let created = first
        .create(
            &caller,
            &task,
            pb::TaskPushNotificationConfig {
                url,
                token: "t".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    // "Crash": delivery stops before the task moves on, and the lease is not
    // given back.
    first.shutdown();
    tokio::time::sleep(Duration::from_millis(50)).await;
    svc.send_input(&caller, &task.id, Message::user_text("now"))
        .await
        .unwrap();
    svc.wait_until(&caller, &task.id, Duration::from_secs(10), |_| false)
        .await
        .unwrap();
    assert!(posts.lock().unwrap().is_empty());
    // "Restart" (or another node): a new manager over the same store takes the
    // config over once the dead one's lease lapsed, and delivers what was missed
    // from the stored cursor.
    let second = PushManager::new(svc.clone(), &cfg);
    let got = wait_for_state(&posts, "TASK_STATE_COMPLETED").await;
    assert!(got
        .iter()
        .any(|(_, b)| b["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"));
    assert_eq!(second.list(&task.id).await.unwrap().len(), 1);
    // Everything was delivered; the config needs no worker any more.
    let mut state = None;
    for _ in 0..100 {
        state = second.delivery_state(&task.id, &created.id).await.unwrap();
        if state.as_ref().is_some_and(|s| !s.active) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let state = state.unwrap();
    assert!(!state.active, "{state:?}");
    assert_eq!(state.failed, 0);
    assert_eq!(state.delivered as usize, posts.lock().unwrap().len());
    let last = svc.get(&caller, &task.id).await.unwrap().last_seq;
    assert_eq!(state.cursor, last);
    second.shutdown();
    rt.shutdown(Duration::from_millis(100)).await;
}

/// Two managers over one store (two nodes): each config is delivered by one of
/// them at a time, so no notification arrives twice, and every one arrives once.
#[tokio::test]
async fn two_nodes_deliver_each_notification_once() {
    let store = Arc::new(MemoryStore::new());
    let svc = TaskService::new(store, "scripted");
    let rt = Runtime::start(
        svc.clone(),
        Arc::new(ScriptedAgent::new()),
        RuntimeConfig::default(),
    );
    let caller = Caller::new("default", "alice");
    let cfg = {
        let mut v = A2aConfig::default();
        v.push_allow_private = true;
        v.push_lease = Duration::from_millis(300);
        v
    };
    let a = PushManager::new(svc.clone(), &cfg);
    let b = PushManager::new(svc.clone(), &cfg);
    let task = waiting_task(&svc, &caller).await;
    let (url, posts) = receiver(0).await;
    for (i, m) in [&a, &b, &a].iter().enumerate() {
        m.create(
            &caller,
            &task,
            pb::TaskPushNotificationConfig {
                id: format!("c{i}"),
                url: url.clone(),
                token: format!("c{i}"),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    }
    svc.send_input(&caller, &task.id, Message::user_text("stream 4"))
        .await
        .unwrap();
    svc.wait_until(&caller, &task.id, Duration::from_secs(10), |_| false)
        .await
        .unwrap();
    for _ in 0..200 {
        let done = {
            let p = posts.lock().unwrap();
            (0..3).all(|i| {
                p.iter().any(|(h, b)| {
                    h["x-a2a-notification-token"] == format!("c{i}").as_str()
                        && b["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
                })
            })
        };
        if done {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let p = posts.lock().unwrap().clone();
    let mut per_config: Vec<Vec<String>> = vec![Vec::new(); 3];
    for (h, body) in &p {
        let token = h["x-a2a-notification-token"].to_str().unwrap();
        let i: usize = token[1..].parse().unwrap();
        per_config[i].push(body.to_string());
    }
    for (i, bodies) in per_config.iter().enumerate() {
        assert!(!bodies.is_empty(), "config c{i} got nothing");
        let mut unique = bodies.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), bodies.len(), "config c{i} got a duplicate");
        assert!(bodies.last().unwrap().contains("TASK_STATE_COMPLETED"));
    }
    // Every config got the same notifications, in the same order.
    assert_eq!(per_config[0], per_config[1]);
    assert_eq!(per_config[0], per_config[2]);
    a.shutdown();
    b.shutdown();
    rt.shutdown(Duration::from_millis(100)).await;
}

/// A host that resolves to a public address when the config is made and to
/// loopback at delivery (DNS rebinding) is refused when delivery connects; the
/// refusal is in the config's delivery state and in the metrics.
#[tokio::test]
async fn a_name_rebinding_to_loopback_is_refused_at_delivery() {
    #[derive(Debug, Default)]
    struct Rebinding(std::sync::atomic::AtomicUsize);
    impl taskwire_webhook::Lookup for Rebinding {
        fn lookup<'a>(
            &'a self,
            _host: &'a str,
            _port: u16,
        ) -> std::pin::Pin<
            Box<
                dyn std::future::Future<Output = std::io::Result<Vec<std::net::IpAddr>>>
                    + Send
                    + 'a,
            >,
        > {
            let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Box::pin(async move {
                Ok(vec![if n == 0 {
                    "93.184.216.34".parse().unwrap()
                } else {
                    "127.0.0.1".parse().unwrap()
                }])
            })
        }
    }
    let metrics = metrics();
    let store = Arc::new(MemoryStore::new());
    let svc = TaskService::new(store, "scripted");
    let rt = Runtime::start(
        svc.clone(),
        Arc::new(ScriptedAgent::new()),
        RuntimeConfig::default(),
    );
    let caller = Caller::new("default", "alice");
    let (url, posts) = receiver(0).await;
    let port = url.split(':').nth(2).unwrap().split('/').next().unwrap();
    let cfg = {
        let mut v = A2aConfig::default();
        v.push_max_attempts = 3;
        v.push_base_backoff = Duration::from_millis(10);
        v
    };
    let lookup = Arc::new(Rebinding::default());
    let push = PushManager::with_lookup(svc.clone(), &cfg, lookup.clone());
    let task = waiting_task(&svc, &caller).await;
    let created = push
        .create(
            &caller,
            &task,
            pb::TaskPushNotificationConfig {
                url: format!("http://rebind.example:{port}/hook"),
                ..Default::default()
            },
        )
        .await
        .expect("public when the config is made");
    svc.send_input(&caller, &task.id, Message::user_text("now"))
        .await
        .unwrap();
    let mut state = None;
    for _ in 0..200 {
        state = push.delivery_state(&task.id, &created.id).await.unwrap();
        if state.as_ref().is_some_and(|s| s.failed > 0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let state = state.unwrap();
    assert!(state.failed > 0, "{state:?}");
    assert_eq!(state.delivered, 0);
    let why = state.last_error.unwrap_or_default();
    assert!(why.contains("refused") && why.contains("loopback"), "{why}");
    assert!(lookup.0.load(std::sync::atomic::Ordering::SeqCst) >= 2);
    assert!(posts.lock().unwrap().is_empty(), "loopback was reached");
    let text = metrics.render();
    assert!(
        text.lines()
            .any(|l| l.starts_with("taskwire_push_deliveries_total")
                && l.contains("outcome=\"refused_address\"")),
        "{text}"
    );
    push.shutdown();
    rt.shutdown(Duration::from_millis(100)).await;
}

/// Push configs are bounded per caller: one caller over its quota is refused,
/// another caller is not affected.
#[tokio::test]
async fn push_configs_are_bounded_per_caller() {
    let store = Arc::new(MemoryStore::new());
    let svc = TaskService::new(store, "scripted");
    let cfg = {
        let mut v = A2aConfig::default();
        v.push_allow_private = true;
        v.push_max_configs_per_principal = 2;
        v
    };
    let push = PushManager::new(svc.clone(), &cfg);
    let mut tasks = Vec::new();
    for who in ["alice", "bob"] {
        let c = Caller::new("default", who);
        let t = svc
            .create(&c, CreateTask::new(Message::user_text("ask go?")))
            .await
            .unwrap()
            .task;
        tasks.push((c, t));
    }
    let config = |id: &str| pb::TaskPushNotificationConfig {
        id: id.into(),
        url: "http://127.0.0.1:9/hook".into(),
        ..Default::default()
    };
    let (alice, at) = &tasks[0];
    push.create(alice, at, config("a1")).await.unwrap();
    push.create(alice, at, config("a2")).await.unwrap();
    let e = push.create(alice, at, config("a3")).await.unwrap_err();
    assert!(e.message().contains("at most 2"), "{}", e.message());
    // Replacing one of one's own configs is not a new one.
    push.create(alice, at, config("a2")).await.unwrap();
    let (bob, bt) = &tasks[1];
    push.create(bob, bt, config("b1")).await.unwrap();
    push.create(bob, bt, config("b2")).await.unwrap();
    assert_eq!(push.list(&at.id).await.unwrap().len(), 2);
    push.shutdown();
}

/// The process's metrics, recorded from the first call on (one recorder per test
/// binary: metric names are global).
pub fn metrics() -> &'static metrics_exporter_prometheus::PrometheusHandle {
    static HANDLE: std::sync::OnceLock<metrics_exporter_prometheus::PrometheusHandle> =
        std::sync::OnceLock::new();
    HANDLE.get_or_init(|| {
        metrics_exporter_prometheus::PrometheusBuilder::new()
            .install_recorder()
            .unwrap()
    })
}
