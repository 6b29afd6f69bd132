//! AG-UI (`AguiClient`): a task is a thread (its core context id) and each run a
//! turn of it. Create posts a `RunAgentInput`; the view of a task is how the
//! thread's last closed run ended (from the thread replay); answers and
//! authorisations are `resume` entries on a new run; cancel cancels a run this
//! driver started.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{json, Value};
use taskwire_client::agui::{
    AguiClient, AguiEncoding, AguiEvent, AguiStream, ResumeEntry, ResumeStatus, RunAgentInput,
};
use taskwire_client::{ClientConfig, ClientError};

use super::classify;
use super::common::Frames;
use crate::driver::{Driver, OpError, ResumeObs, StreamObs, TaskRef, Wire};
use crate::error::Error;
use crate::protocol::Protocol;
use crate::scenario::ErrorClass;
use crate::views::{agui_interrupt_word, View};

/// CUSTOM event naming the core task a run created.
const TASK_CREATED: &str = "taskwire:task_created";

/// The AG-UI driver.
pub(crate) struct AguiDriver {
    client: AguiClient,
    wire: Wire,
}

impl AguiDriver {
    pub(crate) fn new(config: ClientConfig, url: &str, wire: Wire) -> Result<AguiDriver, Error> {
        let client =
            AguiClient::with_endpoint(config, url).map_err(|e| Error::Http(e.to_string()))?;
        Ok(AguiDriver { client, wire })
    }

    fn err(&self, e: ClientError) -> OpError {
        classify(Protocol::Agui, &e)
    }
}

fn fresh(prefix: &str) -> String {
    let mut b = [0u8; 8];
    let _ = getrandom::fill(&mut b);
    format!(
        "{prefix}-{}",
        b.iter().map(|x| format!("{x:02x}")).collect::<String>()
    )
}

fn parts_text(parts: &Value) -> String {
    parts
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<String>()
        })
        .unwrap_or_default()
}

/// The view word of an event that ends a run.
fn end_word(ev: &Value) -> Option<String> {
    match ev["type"].as_str()? {
        "RUN_ERROR" => Some(format!("error:{}", ev["code"].as_str().unwrap_or("?"))),
        "RUN_FINISHED" => Some(match ev["outcome"]["type"].as_str() {
            None | Some("success") => "success".into(),
            Some("interrupt") => {
                let reasons: Vec<&str> = ev["outcome"]["interrupts"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|i| i["reason"].as_str()).collect())
                    .unwrap_or_default();
                agui_interrupt_word(&reasons)
            }
            Some(other) => other.to_string(),
        }),
        _ => None,
    }
}

/// Folds one event into an observation; returns the task id a
/// `taskwire:task_created` names.
fn observe(obs: &mut StreamObs, ev: &AguiEvent) -> Option<String> {
    obs.frames += 1;
    if let Some(id) = &ev.id {
        obs.ids.push(id.clone());
    }
    let r = &ev.raw;
    match ev.kind.as_str() {
        "RUN_STARTED" => obs.push_state("open"),
        "ACTIVITY_SNAPSHOT" => {
            let id = r["messageId"].as_str().unwrap_or_default().to_string();
            obs.artifacts.insert(id, parts_text(&r["content"]["parts"]));
        }
        "ACTIVITY_DELTA" => {
            let id = r["messageId"].as_str().unwrap_or_default().to_string();
            let e = obs.artifacts.entry(id).or_default();
            for op in r["patch"].as_array().into_iter().flatten() {
                if op["op"] == "add" && op["path"] == "/parts/-" {
                    if let Some(t) = op["value"]["text"].as_str() {
                        e.push_str(t);
                    }
                }
            }
        }
        "CUSTOM" if r["name"] == TASK_CREATED => {
            return r["value"]["taskId"].as_str().map(str::to_string);
        }
        "RUN_FINISHED" => {
            if let Some(id) = r["result"]["taskId"].as_str() {
                for a in r["result"]["artifacts"].as_array().into_iter().flatten() {
                    let key = format!(
                        "{id}/artifact/{}",
                        a["artifactId"].as_str().unwrap_or_default()
                    );
                    obs.artifacts.insert(key, parts_text(&a["parts"]));
                }
            }
        }
        _ => {}
    }
    if let Some(w) = end_word(r) {
        obs.push_state(w);
    }
    None
}

impl AguiDriver {
    async fn read(
        &self,
        s: &mut AguiStream,
        obs: &mut StreamObs,
        task_id: &mut Option<String>,
        until_task: bool,
        max_frames: Option<usize>,
        limit_ms: u64,
    ) -> Result<Option<Value>, OpError> {
        let mut frames = Frames::within_ms(limit_ms, max_frames);
        while let Some(ev) = frames.next_into(s, obs).await.map_err(|e| self.err(e))? {
            self.wire
                .validate(Protocol::Agui, &["events", &ev.kind], &ev.raw);
            self.wire
                .record(Protocol::Agui, "(event)", ev.raw.to_string());
            if let Some(t) = observe(obs, &ev) {
                *task_id = Some(t);
                if until_task {
                    return Ok(None);
                }
            }
            if ev.ends_run() {
                obs.ended = true;
                return Ok(Some(ev.raw));
            }
        }
        Ok(None)
    }

    /// Reads a run's stream until it ends (or, with `until_task`, until it names
    /// its task) or `limit_ms` passes; a run refused at once is its error.
    async fn follow(
        &self,
        s: &mut AguiStream,
        until_task: bool,
        limit_ms: u64,
    ) -> Result<Followed, OpError> {
        let mut obs = StreamObs::default();
        let mut task_id = None;
        let end = self
            .read(s, &mut obs, &mut task_id, until_task, None, limit_ms)
            .await?;
        run_error(end.as_ref(), obs.frames)?;
        Ok(Followed { obs, task_id, end })
    }

    /// Starts a task on a new thread and run; returns the thread, the run and the open stream.
    async fn start_new(
        &self,
        text: &str,
        message_id: &str,
    ) -> Result<(String, String, AguiStream), OpError> {
        let thread = fresh("conf-thread");
        let run = fresh("conf-run");
        let s = self.start(text, message_id, &thread, &run).await?;
        Ok((thread, run, s))
    }

    /// Starts a run; returns the task ref and the open stream.
    async fn start(
        &self,
        text: &str,
        message_id: &str,
        thread: &str,
        run: &str,
    ) -> Result<AguiStream, OpError> {
        let input = RunAgentInput::new(thread, run).user_message(message_id, text);
        self.client
            .run(&input, AguiEncoding::Sse)
            .await
            .map_err(|e| self.err(e))
    }

    /// The thread replay: every event of the closed runs.
    async fn replay(&self, thread: &str) -> Result<Vec<Value>, OpError> {
        let s = self
            .client
            .replay_thread(thread, AguiEncoding::Sse)
            .await
            .map_err(|e| self.err(e))?;
        let evs = s.collect_all().await.map_err(|e| self.err(e))?;
        for ev in &evs {
            self.wire
                .validate(Protocol::Agui, &["events", &ev.kind], &ev.raw);
        }
        self.wire.record(
            Protocol::Agui,
            format!("GET /threads/{thread}"),
            format!(
                "{} events, last {}",
                evs.len(),
                evs.last().map(|e| e.raw.to_string()).unwrap_or_default()
            ),
        );
        Ok(evs.into_iter().map(|e| e.raw).collect())
    }

    fn thread_of(&self, task: &TaskRef) -> Result<String, OpError> {
        task.context_id.clone().ok_or_else(|| {
            OpError::unsupported("AG-UI addresses a task by its thread (context id), and no protocol showed this task's context id")
        })
    }

    /// Resumes every open interrupt whose id satisfies `pick` with `payload`,
    /// reading the new run to its end.
    async fn resume(
        &self,
        task: &mut TaskRef,
        pick: impl Fn(&str) -> bool,
        payload: Value,
    ) -> Result<(), OpError> {
        let thread = self.thread_of(task)?;
        let evs = self.replay(&thread).await?;
        let last_end = evs.iter().rev().find(|e| end_word(e).is_some());
        let ids: Vec<String> = last_end
            .and_then(|e| e["outcome"]["interrupts"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|i| i["id"].as_str().map(str::to_string))
            .filter(|id| pick(id))
            .collect();
        if ids.is_empty() {
            return Err(OpError::new(
                ErrorClass::Other,
                format!(
                    "the thread's last run shows no matching open interrupt ({})",
                    last_end.map(|e| e.to_string()).unwrap_or_default()
                ),
            ));
        }
        let run = fresh("conf-run");
        let entries = ids
            .into_iter()
            .map(|id| ResumeEntry {
                interrupt_id: id,
                status: ResumeStatus::Resolved.into(),
                payload: Some(payload.clone()),
                metadata: None,
            })
            .collect();
        let input = RunAgentInput::new(&thread, &run).resume(entries);
        let mut s = self
            .client
            .run(&input, AguiEncoding::Sse)
            .await
            .map_err(|e| self.err(e))?;
        task.agui_run = Some(run);
        self.follow(&mut s, false, 30_000).await.map(|_| ())
    }
}

/// What [`AguiDriver::follow`] read of a run.
struct Followed {
    obs: StreamObs,
    /// The task the run named.
    task_id: Option<String>,
    /// The event that ended the run.
    end: Option<Value>,
}

/// The task a run on `thread` started, as the AG-UI driver knows it.
fn task_on(id: String, message_id: &str, text: &str, thread: String, run: String) -> TaskRef {
    TaskRef {
        context_id: Some(thread),
        agui_run: Some(run),
        ..TaskRef::created(id, message_id, text)
    }
}

/// A run that is refused at once is a lone `RUN_ERROR`: its code classifies the error.
fn run_error(end: Option<&Value>, frames: usize) -> Result<(), OpError> {
    match end {
        Some(e) if e["type"] == "RUN_ERROR" && frames <= 1 => {
            let code = e["code"].as_str().unwrap_or_default();
            let class = match code {
                "not_found" | "interrupt_unknown" => ErrorClass::NotFound,
                "invalid_input" | "too_large" | "no_new_input" => ErrorClass::Invalid,
                "interrupt_expired" | "wrong_state" => ErrorClass::Terminal,
                _ => ErrorClass::Other,
            };
            Err(OpError::new(
                class,
                format!("RUN_ERROR {code}: {}", e["message"]),
            ))
        }
        _ => Ok(()),
    }
}

#[async_trait]
impl Driver for AguiDriver {
    fn protocol(&self) -> Protocol {
        Protocol::Agui
    }

    async fn create(&self, text: &str, message_id: &str) -> Result<TaskRef, OpError> {
        let (thread, run, mut s) = self.start_new(text, message_id).await?;
        let f = self.follow(&mut s, true, 15_000).await?;
        let id = f.task_id.ok_or_else(|| OpError::new(ErrorClass::Other, format!("the run named no task (no {TASK_CREATED} event and no RUN_FINISHED result.taskId)")))?;
        Ok(task_on(id, message_id, text, thread, run))
    }

    async fn create_retry(&self, task: &TaskRef) -> Result<TaskRef, OpError> {
        let thread = self.thread_of(task)?;
        let run = task.agui_run.clone().unwrap_or_else(|| fresh("conf-run"));
        let mut s = self
            .start(&task.text, &task.message_id, &thread, &run)
            .await?;
        let f = self.follow(&mut s, false, 15_000).await?;
        let id = f
            .task_id
            .or_else(|| {
                f.end
                    .as_ref()
                    .and_then(|e| e["result"]["taskId"].as_str().map(str::to_string))
            })
            .ok_or_else(|| OpError::new(ErrorClass::Other, "the repeated run named no task"))?;
        Ok(TaskRef { id, ..task.clone() })
    }

    async fn create_stream(
        &self,
        text: &str,
        message_id: &str,
        limit_ms: u64,
    ) -> Result<(TaskRef, StreamObs), OpError> {
        let (thread, run, mut s) = self.start_new(text, message_id).await?;
        let f = self.follow(&mut s, false, limit_ms).await?;
        let id = f.task_id.unwrap_or_default();
        Ok((task_on(id, message_id, text, thread, run), f.obs))
    }

    async fn get(&self, task: &mut TaskRef) -> Result<View, OpError> {
        let thread = self.thread_of(task)?;
        let evs = self.replay(&thread).await?;
        // Only this task's runs (a thread may hold several tasks).
        let mine = |e: &Value| e["result"]["taskId"].as_str().is_none_or(|t| t == task.id);
        let last = evs.iter().rev().find(|e| end_word(e).is_some() && mine(e));
        let mut view = View {
            state: last.and_then(end_word).unwrap_or_else(|| "open".into()),
            context_id: Some(thread),
            ..View::default()
        };
        if let Some(e) = last {
            for a in e["result"]["artifacts"].as_array().into_iter().flatten() {
                view.artifacts.push(parts_text(&a["parts"]));
            }
            for i in e["outcome"]["interrupts"].as_array().into_iter().flatten() {
                view.pending
                    .push(i["id"].as_str().unwrap_or_default().to_string());
                if view.status_message.is_none() {
                    view.status_message = i["message"].as_str().map(str::to_string);
                }
            }
            if e["type"] == "RUN_ERROR" {
                view.status_message = e["message"].as_str().map(str::to_string);
            }
        }
        // Artifacts restated in the thread's messages (activity messages).
        for e in &evs {
            if e["type"] == "MESSAGES_SNAPSHOT" {
                for m in e["messages"].as_array().into_iter().flatten() {
                    let content = if m["activityContent"].is_object() {
                        &m["activityContent"]
                    } else {
                        &m["content"]
                    };
                    if m["role"] == "activity" && content["parts"].is_array() {
                        let t = parts_text(&content["parts"]);
                        if !view.artifacts.contains(&t) {
                            view.artifacts.push(t);
                        }
                    }
                }
            }
        }
        Ok(view)
    }

    async fn answer(&self, task: &mut TaskRef, text: &str) -> Result<(), OpError> {
        self.resume(task, |id| id.contains("/input/"), json!({"answer": text}))
            .await
    }

    async fn authorize(&self, task: &mut TaskRef, provider: &str) -> Result<(), OpError> {
        let suffix = format!("/auth/{provider}");
        self.resume(task, |id| id.ends_with(&suffix), json!({}))
            .await
    }

    async fn approve(&self, task: &mut TaskRef) -> Result<(), OpError> {
        self.resume(
            task,
            |id| id.contains("/review/"),
            json!({"approved": true}),
        )
        .await
    }

    async fn cancel(&self, task: &mut TaskRef) -> Result<(), OpError> {
        let thread = self.thread_of(task)?;
        let Some(run) = task.agui_run.clone() else {
            return Err(OpError::unsupported(
                "AG-UI cancels a run by its id, and this task has no run started over AG-UI",
            ));
        };
        self.wire.record(
            Protocol::Agui,
            format!("POST /threads/{thread}/runs/{run}/cancel"),
            "…",
        );
        self.client
            .cancel_run(&thread, &run)
            .await
            .map_err(|e| self.err(e))
    }

    async fn send(&self, task: &mut TaskRef, text: &str) -> Result<(), OpError> {
        let thread = self.thread_of(task)?;
        let run = fresh("conf-run");
        let mut s = self.start(text, &fresh("conf-msg"), &thread, &run).await?;
        self.follow(&mut s, false, 15_000).await.map(|_| ())
    }

    async fn stream(
        &self,
        task: &mut TaskRef,
        stop: &[String],
        limit_ms: u64,
    ) -> Result<StreamObs, OpError> {
        let thread = self.thread_of(task)?;
        let Some(run) = task.agui_run.clone() else {
            return Err(OpError::unsupported(
                "AG-UI streams runs it started; this task has no AG-UI run",
            ));
        };
        let mut s = self
            .client
            .run_events(&thread, &run, None, AguiEncoding::Sse)
            .await
            .map_err(|e| self.err(e))?;
        let mut obs = StreamObs::default();
        let mut tid = None;
        let deadline = Instant::now() + Duration::from_millis(limit_ms);
        loop {
            let left = deadline
                .saturating_duration_since(Instant::now())
                .as_millis() as u64;
            self.read(&mut s, &mut obs, &mut tid, false, None, left)
                .await?;
            if obs.ended
                || obs
                    .last_state()
                    .is_some_and(|w| stop.iter().any(|x| x == w))
                || left == 0
            {
                return Ok(obs);
            }
        }
    }

    async fn stream_resume(
        &self,
        text: &str,
        message_id: &str,
        frames: usize,
        limit_ms: u64,
    ) -> Result<ResumeObs, OpError> {
        let (thread, run, mut s) = self.start_new(text, message_id).await?;
        let mut first = StreamObs::default();
        let mut tid = None;
        self.read(&mut s, &mut first, &mut tid, false, Some(frames), limit_ms)
            .await?;
        drop(s);
        let cursor = first.ids.last().cloned().unwrap_or_default();
        let mut s = self
            .client
            .run_events(
                &thread,
                &run,
                Some(&cursor).filter(|c| !c.is_empty()).map(String::as_str),
                AguiEncoding::Sse,
            )
            .await
            .map_err(|e| self.err(e))?;
        let mut rest = StreamObs {
            artifacts: first.artifacts.clone(),
            ..StreamObs::default()
        };
        self.read(&mut s, &mut rest, &mut tid, false, None, limit_ms)
            .await?;
        Ok(ResumeObs {
            task: task_on(tid.unwrap_or_default(), message_id, text, thread, run),
            first,
            cursor,
            rest,
        })
    }

    async fn malformed(&self) -> Vec<(String, Result<(), OpError>)> {
        let mut out = Vec::new();
        for (label, body) in [
            ("a body that is not JSON", "{\"threadId\": ".to_string()),
            ("a RunAgentInput whose messages is not a list", json!({"threadId": "t", "runId": "r", "messages": "hi", "tools": [], "context": []}).to_string()),
        ] {
            let r = self.client.post_raw(body.clone(), &[]).await;
            let o = match r {
                Err(e) => Err(self.err(e)),
                Ok(raw) => {
                    let text = raw.text();
                    self.wire.record(Protocol::Agui, format!("POST {body}"), format!("{} {text}", raw.status));
                    if raw.status >= 400 {
                        Err(super::http_class(raw.status, &text))
                    } else if let Some(line) = text.lines().find(|l| l.starts_with("data:") && l.contains("RUN_ERROR")) {
                        let v: Value = serde_json::from_str(line.trim_start_matches("data:").trim()).unwrap_or(Value::Null);
                        run_error(Some(&v), 1)
                    } else {
                        Ok(())
                    }
                }
            };
            out.push((label.to_string(), o));
        }
        out
    }
}
