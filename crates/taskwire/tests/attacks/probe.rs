//! The well-behaved client: on its own thread and runtime (so that the
//! attackers cannot starve it in this process), over connections opened before
//! the attack, it asks `GET /healthz` over one HTTP/1.1 keep-alive connection
//! and a gRPC `GetTask` over one h2c channel, in turn, and records how long
//! each answer took.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use taskwire_a2a::pb;
use taskwire_grpc::A2aServiceClient;
use tonic::transport::Channel;

use crate::http1::H1;

/// A probe request that takes longer than this is recorded as failed.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// The pause between two rounds (one `/healthz`, one `GetTask`).
const PROBE_PAUSE: Duration = Duration::from_millis(5);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum What {
    Healthz,
    GetTask,
}

#[derive(Clone, Debug)]
struct Sample {
    what: What,
    took: Duration,
    error: Option<String>,
}

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    samples: Mutex<Vec<Sample>>,
}

/// The running probe.
pub(crate) struct Probe {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Latencies of one kind of probe request.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Stats {
    pub(crate) n: usize,
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
    pub(crate) max: Duration,
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "n {} p50 {:.1} ms p99 {:.1} ms max {:.1} ms",
            self.n,
            self.p50.as_secs_f64() * 1e3,
            self.p99.as_secs_f64() * 1e3,
            self.max.as_secs_f64() * 1e3
        )
    }
}

/// What the probe saw in a window.
#[derive(Clone, Debug, Default)]
pub(crate) struct Report {
    pub(crate) healthz: Stats,
    pub(crate) get_task: Stats,
    pub(crate) errors: Vec<String>,
}

fn stats(mut took: Vec<Duration>) -> Stats {
    took.sort();
    let n = took.len();
    if n == 0 {
        return Stats::default();
    }
    let at = |q: f64| took[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    Stats {
        n,
        p50: at(0.50),
        p99: at(0.99),
        max: took[n - 1],
    }
}

impl Probe {
    /// Opens the probe's connections, creates its task (SendMessage), checks
    /// one round, and starts probing.
    pub(crate) fn start(addr: SocketAddr) -> Probe {
        let shared = Arc::new(Shared::default());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let sh = shared.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("probe runtime");
            rt.block_on(run(addr, sh, ready_tx));
        });
        match ready_rx.recv_timeout(Duration::from_secs(30)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => panic!("the probe could not start: {e}"),
            Err(e) => panic!("the probe did not start: {e}"),
        }
        Probe {
            shared,
            thread: Some(thread),
        }
    }

    /// Forgets the samples so far: a new window starts.
    pub(crate) fn begin(&self) {
        self.shared
            .samples
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// The samples since [`Probe::begin`].
    pub(crate) fn report(&self) -> Report {
        let samples = self
            .shared
            .samples
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let of = |w: What| {
            stats(
                samples
                    .iter()
                    .filter(|s| s.what == w)
                    .map(|s| s.took)
                    .collect(),
            )
        };
        Report {
            healthz: of(What::Healthz),
            get_task: of(What::GetTask),
            errors: samples
                .iter()
                .filter_map(|s| s.error.as_ref().map(|e| format!("{:?}: {e}", s.what)))
                .collect(),
        }
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn versioned<T>(msg: T) -> tonic::Request<T> {
    let mut req = tonic::Request::new(msg);
    req.metadata_mut().insert(
        "a2a-version",
        tonic::metadata::MetadataValue::from_static("1.0"),
    );
    req
}

async fn healthz(h1: &mut H1) -> Result<(), String> {
    let a = h1.get("/healthz").await.map_err(|e| e.to_string())?;
    if a.status == 200 && a.body == b"ok" {
        Ok(())
    } else {
        Err(format!(
            "status {} body {:?}",
            a.status,
            String::from_utf8_lossy(&a.body)
        ))
    }
}

async fn get_task(c: &mut A2aServiceClient<Channel>, id: &str) -> Result<(), String> {
    let t = c
        .get_task(versioned(pb::GetTaskRequest {
            id: id.to_string(),
            ..Default::default()
        }))
        .await
        .map_err(|e| format!("{:?} {}", e.code(), e.message()))?
        .into_inner();
    if t.id == id {
        Ok(())
    } else {
        Err(format!("another task: {}", t.id))
    }
}

async fn setup(addr: SocketAddr) -> Result<(H1, A2aServiceClient<Channel>, String), String> {
    let mut h1 = H1::connect(addr).await.map_err(|e| e.to_string())?;
    let ch = Channel::from_shared(format!("http://{addr}"))
        .map_err(|e| e.to_string())?
        .connect()
        .await
        .map_err(|e| format!("gRPC channel: {e}"))?;
    let mut grpc = A2aServiceClient::new(ch);
    let sent = grpc
        .send_message(versioned(pb::SendMessageRequest {
            message: Some(pb::Message {
                message_id: "probe".into(),
                role: pb::Role::User as i32,
                parts: vec![pb::Part {
                    content: Some(pb::part::Content::Text("probe".into())),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }))
        .await
        .map_err(|e| format!("SendMessage: {e}"))?
        .into_inner();
    let id = match sent.payload {
        Some(pb::send_message_response::Payload::Task(t)) => t.id,
        other => return Err(format!("SendMessage answered {other:?}")),
    };
    healthz(&mut h1).await?;
    get_task(&mut grpc, &id).await?;
    Ok((h1, grpc, id))
}

async fn run(
    addr: SocketAddr,
    sh: Arc<Shared>,
    ready: std::sync::mpsc::Sender<Result<(), String>>,
) {
    let (mut h1, mut grpc, id) = match setup(addr).await {
        Ok(v) => {
            let _ = ready.send(Ok(()));
            v
        }
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let record = |what, took, error| {
        sh.samples
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Sample { what, took, error });
    };
    while !sh.stop.load(Ordering::SeqCst) {
        let t = Instant::now();
        let r = tokio::time::timeout(PROBE_TIMEOUT, healthz(&mut h1))
            .await
            .unwrap_or_else(|_| Err("timed out".into()));
        let failed = r.is_err();
        record(What::Healthz, t.elapsed(), r.err());
        if failed {
            // Go on measuring over a new connection (the failure is recorded).
            if let Ok(Ok(c)) = tokio::time::timeout(PROBE_TIMEOUT, H1::connect(addr)).await {
                h1 = c;
            }
        }
        let t = Instant::now();
        let r = tokio::time::timeout(PROBE_TIMEOUT, get_task(&mut grpc, &id))
            .await
            .unwrap_or_else(|_| Err("timed out".into()));
        record(What::GetTask, t.elapsed(), r.err());
        tokio::time::sleep(PROBE_PAUSE).await;
    }
}
