"""A2A 1.0 interop checks: the official Python a2a-sdk client against a taskwire
server running the scripted agent.

Usage: python interop.py <base-url> <JSONRPC|GRPC|HTTP+JSON>

The server must serve the agent card at <base-url>/.well-known/agent-card.json,
run the scripted reference agent, and allow push urls on 127.0.0.1
(--push-allow-private). Exits 0 and prints "PASS <binding> <checks>" on success;
prints the failed check and exits 1 otherwise.
"""

import asyncio
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from a2a.client import ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError

CHECKS = 0


def check(cond, what):
    global CHECKS
    if not cond:
        raise AssertionError(what)
    CHECKS += 1


def request(text, task_id="", context_id=""):
    m = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    if task_id:
        m.task_id = task_id
    if context_id:
        m.context_id = context_id
    return SendMessageRequest(message=m)


async def collect(it):
    return [e async for e in it]


def state_of(ev):
    if ev.HasField("task"):
        return ev.task.status.state
    if ev.HasField("status_update"):
        return ev.status_update.status.state
    return None


class Receiver:
    """A local push receiver on 127.0.0.1 recording every POST."""

    def __init__(self):
        self.posts = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(n)
                headers = {k.lower(): v for k, v in self.headers.items()}
                owner.posts.append((headers, json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


async def client(base, binding, **kw):
    cfg = ClientConfig(
        supported_protocol_bindings=[binding],
        grpc_channel_factory=lambda url: grpc.aio.insecure_channel(url),
        **kw,
    )
    return await create_client(base, client_config=cfg)


async def main(base, binding):
    blocking = await client(base, binding, streaming=False)
    polling = await client(base, binding, streaming=False, polling=True)
    streaming = await client(base, binding, streaming=True)

    # Blocking send: the completed task with its echo artifact.
    [ev] = await collect(blocking.send_message(request("hello interop")))
    task = ev.task
    check(task.status.state == TaskState.TASK_STATE_COMPLETED, f"blocking send completes: {task}")
    check(task.artifacts[0].parts[0].text == "hello interop", "echo artifact")

    # Non-blocking send, then poll with GetTask.
    [ev] = await collect(polling.send_message(request("sleep 200\nlater")))
    check(
        ev.task.status.state
        in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING),
        f"returnImmediately answers before the end: {ev.task.status}",
    )
    tid = ev.task.id
    deadline = time.time() + 15
    while True:
        got = await blocking.get_task(GetTaskRequest(id=tid, history_length=1))
        if got.status.state == TaskState.TASK_STATE_COMPLETED or time.time() > deadline:
            break
        await asyncio.sleep(0.05)
    check(got.status.state == TaskState.TASK_STATE_COMPLETED, "polled task completes")
    check(len(got.history) <= 1, "historyLength honoured")

    # Streaming: task snapshot, artifact chunks, completed.
    evs = await collect(streaming.send_message(request("stream 3")))
    check(evs[0].HasField("task"), "stream starts with the task")
    chunks = [e for e in evs if e.HasField("artifact_update")]
    check(len(chunks) == 3 and chunks[-1].artifact_update.last_chunk, "three chunks, last flagged")
    check(state_of(evs[-1]) == TaskState.TASK_STATE_COMPLETED, "stream ends completed")

    # List: the caller's tasks.
    listed = await blocking.list_tasks(ListTasksRequest(page_size=100))
    ids = {t.id for t in listed.tasks}
    check(task.id in ids and tid in ids, "ListTasks returns our tasks")

    # Cancel.
    [ev] = await collect(polling.send_message(request("sleep 10000")))
    canceled = await blocking.cancel_task(CancelTaskRequest(id=ev.task.id))
    check(canceled.status.state == TaskState.TASK_STATE_CANCELED, "cancel")

    # Errors map to the SDK's typed errors.
    try:
        await blocking.get_task(GetTaskRequest(id="0" * 32))
        check(False, "unknown task must fail")
    except TaskNotFoundError:
        check(True, "TaskNotFound")

    # Input required round trip, with a subscriber that stays open through it.
    [ev] = await collect(blocking.send_message(request("ask favourite colour?")))
    check(ev.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, "input required")
    ask = ev.task
    sub = asyncio.create_task(collect(streaming.subscribe(SubscribeToTaskRequest(id=ask.id))))
    await asyncio.sleep(0.3)
    check(not sub.done(), "subscription stays open while input is required")
    [ev] = await collect(
        blocking.send_message(request("teal", task_id=ask.id, context_id=ask.context_id))
    )
    check(ev.task.status.state == TaskState.TASK_STATE_COMPLETED, "answer completes the task")
    check(
        any(a.parts[0].text == "answer: teal" for a in ev.task.artifacts), "answer artifact"
    )
    sub_evs = await asyncio.wait_for(sub, 15)
    check(sub_evs[0].HasField("task"), "subscription starts with the task")
    check(state_of(sub_evs[-1]) == TaskState.TASK_STATE_COMPLETED, "subscription ends completed")
    try:
        await collect(blocking.send_message(request("again", task_id=ask.id)))
        check(False, "a message to a terminal task must fail")
    except UnsupportedOperationError:
        check(True, "UnsupportedOperation on a terminal task")

    # Push notification configs, delivered to a local receiver.
    recv = Receiver()
    try:
        [ev] = await collect(blocking.send_message(request("ask ready?")))
        pid = ev.task.id
        cfg = await blocking.create_task_push_notification_config(
            TaskPushNotificationConfig(
                task_id=pid, url=f"http://127.0.0.1:{recv.port}/hook", token="tok-interop"
            )
        )
        check(cfg.id and cfg.task_id == pid, "push config created")
        got = await blocking.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=pid, id=cfg.id)
        )
        check(got.url.endswith("/hook"), "push config read back")
        listed = await blocking.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=pid)
        )
        check(len(listed.configs) == 1, "push config listed")
        [ev] = await collect(blocking.send_message(request("yes", task_id=pid)))
        check(ev.task.status.state == TaskState.TASK_STATE_COMPLETED, "push task completes")
        deadline = time.time() + 15
        while time.time() < deadline:
            done = [
                b
                for _, b in recv.posts
                if b.get("statusUpdate", {}).get("status", {}).get("state")
                == "TASK_STATE_COMPLETED"
            ]
            if done:
                break
            await asyncio.sleep(0.05)
        check(done, f"receiver got the completion: {recv.posts}")
        check(
            all(h.get("x-a2a-notification-token") == "tok-interop" for h, _ in recv.posts),
            "token header on every notification",
        )
        await blocking.delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest(task_id=pid, id=cfg.id)
        )
        listed = await blocking.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=pid)
        )
        check(len(listed.configs) == 0, "push config deleted")
        # Delete is idempotent: a second delete of the same config succeeds.
        await blocking.delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest(task_id=pid, id=cfg.id)
        )
        check(True, "push config delete is idempotent")
    finally:
        recv.close()

    for c in (blocking, polling, streaming):
        await c.close()
    print(f"PASS {binding} {CHECKS}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    try:
        asyncio.run(main(sys.argv[1], sys.argv[2]))
    except AssertionError as e:
        print(f"FAIL {sys.argv[2]} after {CHECKS} checks: {e}")
        sys.exit(1)
