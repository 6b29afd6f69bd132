// Interop check of taskwire's AG-UI endpoint with the official TypeScript SDK.
//
//   node interop.mjs <base-url>
//
// The SDK is loaded from $TASKWIRE_AGUI_NODE_DIR (installed there by
// .ci/setup-agui.sh). Scenarios, each through `HttpAgent.runAgent`:
//   1. a completed run (result carries the echo artifact);
//   2. an `ask` interrupt, then a run with `resume` that completes it;
//   3. a failed run, which must surface as an error;
//   4. a cancelled run (cancelled through the adapter's cancel endpoint while it
//      streams), ending with outcome `cancelled`;
//   5. the same kind of run as protobuf, every frame decoded with
//      `@ag-ui/proto`'s decode() and compared with the SSE rendering.
// Every raw SSE frame is validated with `@ag-ui/core`'s EventSchemas; any console
// warning or error (stripped fields, unknown events, verifier complaints) fails
// the script. Exit code 0 means every check passed.

import { createRequire } from "node:module";
import { join } from "node:path";
import { randomUUID } from "node:crypto";

const base = process.argv[2];
const dir = process.env.TASKWIRE_AGUI_NODE_DIR;
if (!base || !dir) {
  console.log("usage: TASKWIRE_AGUI_NODE_DIR=<dir> node interop.mjs <base-url>");
  process.exit(2);
}
const require = createRequire(join(dir, "package.json"));
const { HttpAgent } = require("@ag-ui/client");
const { EventSchemas } = require("@ag-ui/core/schemas");
const proto = require("@ag-ui/proto");

// Any warning or error printed by the SDK fails the run.
const complaints = [];
for (const level of ["warn", "error"]) {
  const orig = console[level].bind(console);
  console[level] = (...args) => {
    complaints.push(`${level}: ${args.map(String).join(" ")}`);
    orig(...args);
  };
}

const failures = [];
function check(cond, what) {
  if (!cond) failures.push(what);
  process.stdout.write(`${cond ? "ok  " : "FAIL"} ${what}\n`);
}

// Raw frames, split exactly as the JS client splits them.
const rawFrames = [];
function splitSse(text) {
  const out = [];
  for (const block of text.split("\n\n")) {
    const data = block
      .split("\n")
      .filter((l) => l.startsWith("data:"))
      .map((l) => l.slice(5).replace(/^ /, ""))
      .join("\n");
    if (data) out.push(JSON.parse(data));
  }
  return out;
}

// A fetch that tees the response body so every raw frame can be validated.
function teeFetch(url, init) {
  return fetch(url, init).then((res) => {
    if (!res.body) return res;
    const [a, b] = res.body.tee();
    (async () => {
      const text = await new Response(b).text();
      for (const frame of splitSse(text)) rawFrames.push(frame);
    })();
    return new Response(a, { status: res.status, statusText: res.statusText, headers: res.headers });
  });
}

function agent(threadId, text) {
  return new HttpAgent({
    url: `${base}/agui`,
    headers: { "x-test-principal": "interop" },
    threadId,
    fetch: teeFetch,
    initialMessages: [{ id: randomUUID(), role: "user", content: text }],
  });
}

function recorder() {
  const seen = { events: [], finished: null, error: null };
  return {
    seen,
    subscriber: {
      onEvent: ({ event }) => {
        seen.events.push(event);
      },
      onRunFinishedEvent: ({ event }) => {
        seen.finished = event;
      },
      onRunErrorEvent: ({ event }) => {
        seen.error = event;
      },
    },
  };
}

const artifactTexts = (result) =>
  (result?.artifacts ?? []).flatMap((a) => (a.parts ?? []).map((p) => p.text));

async function completed() {
  const a = agent(`interop-done-${randomUUID()}`, "hello from node");
  const r = recorder();
  const out = await a.runAgent({ runId: randomUUID() }, r.subscriber);
  check(r.seen.events[0]?.type === "RUN_STARTED", "completed: first event is RUN_STARTED");
  check(r.seen.finished && !r.seen.finished.outcome, "completed: RUN_FINISHED without outcome");
  check(artifactTexts(out.result).includes("hello from node"), "completed: result carries the echo");
}

async function interruptAndResume() {
  const a = agent(`interop-ask-${randomUUID()}`, "ask what colour?");
  const r1 = recorder();
  await a.runAgent({ runId: randomUUID() }, r1.subscriber);
  const outcome = r1.seen.finished?.outcome;
  check(outcome?.type === "interrupt", "ask: run ends with an interrupt outcome");
  const it = outcome?.interrupts?.[0];
  check(it?.reason === "input_required", "ask: reason input_required");
  check(a.pendingInterrupts?.length === 1, "ask: the client holds one pending interrupt");
  const r2 = recorder();
  const out = await a.runAgent(
    {
      runId: randomUUID(),
      resume: [{ interruptId: it?.id, status: "resolved", payload: { answer: "blue" } }],
    },
    r2.subscriber,
  );
  check(r2.seen.finished && !r2.seen.finished.outcome, "resume: the resumed run completes");
  check(artifactTexts(out.result).includes("answer: blue"), "resume: result carries the answer");
  check(
    r2.seen.events[0]?.parentRunId !== undefined,
    "resume: RUN_STARTED names the interrupted run as parent",
  );
}

async function failed() {
  const a = agent(`interop-fail-${randomUUID()}`, "fail boom");
  const r = recorder();
  let threw = null;
  try {
    await a.runAgent({ runId: randomUUID() }, r.subscriber);
  } catch (e) {
    threw = e;
  }
  check(r.seen.error?.message === "boom", "failed: RUN_ERROR reaches the subscriber with the message");
  check(r.seen.error?.code === "agent_failed", "failed: RUN_ERROR code agent_failed");
  check(threw !== null || r.seen.finished === null, "failed: the run is not reported as a success");
}

async function cancelled() {
  const threadId = `interop-cancel-${randomUUID()}`;
  const runId = randomUUID();
  const a = agent(threadId, "sleep 10000");
  const r = recorder();
  const running = a.runAgent({ runId }, r.subscriber);
  await new Promise((res) => setTimeout(res, 300));
  const c = await fetch(`${base}/agui/threads/${threadId}/runs/${runId}/cancel`, {
    method: "POST",
    headers: { "x-test-principal": "interop" },
  });
  check(c.status === 200, "cancel: the cancel endpoint answers 200");
  await running;
  check(r.seen.finished?.outcome?.type === "cancelled", "cancel: RUN_FINISHED outcome cancelled");
}

async function protobuf() {
  const threadId = `interop-proto-${randomUUID()}`;
  const runId = randomUUID();
  const body = {
    threadId,
    runId,
    messages: [{ id: randomUUID(), role: "user", content: "ask favourite number?" }],
    tools: [],
    context: [],
  };
  const res = await fetch(`${base}/agui`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: proto.AGUI_MEDIA_TYPE,
      "x-test-principal": "interop",
    },
    body: JSON.stringify(body),
  });
  check(res.headers.get("content-type") === proto.AGUI_MEDIA_TYPE, "proto: media type");
  const bytes = new Uint8Array(await res.arrayBuffer());
  const decoded = [];
  let off = 0;
  try {
    while (off < bytes.length) {
      const len = new DataView(bytes.buffer, bytes.byteOffset + off, 4).getUint32(0, false);
      decoded.push(proto.decode(bytes.subarray(off + 4, off + 4 + len)));
      off += 4 + len;
    }
  } catch (e) {
    check(false, `proto: every frame decodes (${e})`);
    return;
  }
  const sse = await fetch(`${base}/agui/threads/${threadId}/runs/${runId}/events`, {
    headers: { accept: "text/event-stream", "x-test-principal": "interop" },
  });
  const json = splitSse(await sse.text());
  for (const f of json) rawFrames.push(f);
  check(decoded.length === json.length && decoded.length > 0, "proto: as many frames as SSE");
  check(
    decoded.every((e, i) => e.type === json[i].type),
    "proto: the same event types in the same order",
  );
  const last = decoded[decoded.length - 1];
  check(
    last?.type === "RUN_FINISHED" && last?.outcome?.type === "interrupt",
    "proto: interrupt outcome decodes as an object",
  );
  check(
    last?.outcome?.interrupts?.[0]?.id === json[json.length - 1].outcome.interrupts[0].id,
    "proto: interrupt ids survive",
  );
}

for (const [name, f] of [
  ["completed", completed],
  ["interrupt+resume", interruptAndResume],
  ["failed", failed],
  ["cancelled", cancelled],
  ["protobuf", protobuf],
]) {
  try {
    await f();
  } catch (e) {
    check(false, `${name}: threw ${e?.stack ?? e}`);
  }
}

// Give the tee readers a moment to finish, then validate every raw frame.
await new Promise((res) => setTimeout(res, 200));
let invalid = 0;
for (const frame of rawFrames) {
  const r = EventSchemas.safeParse(frame);
  if (!r.success) {
    invalid += 1;
    process.stdout.write(`invalid frame: ${JSON.stringify(frame)}\n  ${r.error}\n`);
  }
}
check(rawFrames.length > 0 && invalid === 0, `schemas: ${rawFrames.length} raw frames validate`);
check(complaints.length === 0, `console: no warnings (${complaints.join(" | ")})`);

if (failures.length > 0) {
  process.stdout.write(`${failures.length} check(s) failed\n`);
  process.exit(1);
}
process.stdout.write("all AG-UI interop checks passed\n");
