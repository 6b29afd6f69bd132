#!/usr/bin/env python3
"""Writes the hand-made seed inputs of every fuzz target to fuzz/seeds/<target>/.

Seeds are readable, small, and cover each method, route and framing the target
reaches; the fuzzer's minimised corpus (fuzz/corpus/<target>/) grows from them.
Re-run after changing a seed: `python3 fuzz/make_seeds.py` (it rewrites the seed
directories; the binary AG-UI frames come from the committed JSON events below).
The text `$TASK` is replaced by the harness with the id of a real task.
"""

import base64
import json
import os
import shutil
import struct

ROOT = os.path.dirname(os.path.abspath(__file__))
SEEDS = os.path.join(ROOT, "seeds")
shutil.rmtree(SEEDS, ignore_errors=True)


def j(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode()


def write(target, name, data):
    d = os.path.join(SEEDS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def rpc(method, params=None, id=1):
    m = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        m["params"] = params
    return m


MSG = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}
PARTS = [
    {"text": "hi", "mediaType": "text/plain", "metadata": {"k": 1}},
    {"raw": base64.b64encode(b"\x00\x01bytes").decode(), "mediaType": "application/octet-stream", "filename": "b.bin"},
    {"url": "https://example.com/f.png", "mediaType": "image/png"},
    {"data": {"a": [1, 2.5, None, True, "x"], "n": None}},
    {"data": None},
]

# ---- a2a_params: ProtoJSON params of every request (and answers a client reads)
a2a_params = {
    "send_message": {"message": MSG},
    "send_message_parts": {"message": {**MSG, "parts": PARTS, "contextId": "c1", "metadata": {"x": {"y": [1]}},
                                        "extensions": ["e"], "referenceTaskIds": ["t0"]}},
    "send_message_config": {"message": MSG, "configuration": {"acceptedOutputModes": ["text/plain"], "historyLength": 2,
                                                              "returnImmediately": True,
                                                              "taskPushNotificationConfig": {"url": "https://example.com/hook", "token": "tok"}},
                            "metadata": {"m": 1}, "tenant": "t"},
    "send_message_snake": {"message": {"message_id": "m2", "role": "ROLE_AGENT", "parts": [{"text": "x", "media_type": "text/plain"}],
                                       "task_id": "0123456789abcdef0123456789abcdef"}},
    "send_message_enum_number": {"message": {"messageId": "m3", "role": 1, "parts": [{"text": "x"}]}},
    "get_task": {"id": "0123456789abcdef0123456789abcdef", "historyLength": 3},
    "get_task_null": {"id": "0123456789abcdef0123456789abcdef", "historyLength": None, "tenant": None},
    "list_tasks": {"contextId": "c1", "status": "TASK_STATE_WORKING", "pageSize": 10, "pageToken": "abc",
                   "historyLength": 1, "statusTimestampAfter": "2026-01-01T00:00:00Z", "includeArtifacts": True},
    "list_tasks_ts_offset": {"statusTimestampAfter": "2026-01-01T00:00:00.123456789+02:00"},
    "cancel_task": {"id": "0123456789abcdef0123456789abcdef", "metadata": {"why": "test"}},
    "subscribe": {"id": "0123456789abcdef0123456789abcdef"},
    "push_config": {"taskId": "0123456789abcdef0123456789abcdef", "id": "p1", "url": "https://example.com/hook",
                    "token": "t", "authentication": {"scheme": "Bearer", "credentials": "c"}},
    "get_push_config": {"taskId": "0123456789abcdef0123456789abcdef", "id": "p1"},
    "list_push_configs": {"taskId": "0123456789abcdef0123456789abcdef", "pageSize": 5, "pageToken": ""},
    "delete_push_config": {"taskId": "0123456789abcdef0123456789abcdef", "id": "p1"},
    "extended_card": {},
    "stream_status_update": {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING",
                                                                                         "timestamp": "2026-01-01T00:00:00Z"}}},
    "stream_artifact_update": {"artifactUpdate": {"taskId": "t", "contextId": "c", "append": True, "lastChunk": False,
                                                  "artifact": {"artifactId": "a", "name": "n", "parts": [{"text": "chunk"}]}}},
    "stream_task": {"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-01T00:00:00.5Z",
                                                                  "message": MSG},
                             "history": [MSG], "artifacts": [{"artifactId": "a", "parts": PARTS[:3]}], "metadata": {"k": None}}},
    "stream_message": {"message": {**MSG, "role": "ROLE_AGENT"}},
}
for name, v in a2a_params.items():
    write("a2a_params", name + ".json", j(v))
write("a2a_params", "large_int.json", b'{"id":"x","historyLength":99999999999}')
write("a2a_params", "bad_ts.json", b'{"statusTimestampAfter":"yesterday"}')
write("a2a_params", "bytes_bad.json", b'{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"raw":"***"}]}}')

# ---- a2a_jsonrpc: whole POST /a2a bodies (and heads)
T = "$TASK"
reqs = {
    "send_message": rpc("SendMessage", {"message": MSG}),
    "send_message_immediate": rpc("SendMessage", {"message": {**MSG, "messageId": "m9", "parts": PARTS}, "configuration": {"returnImmediately": True, "historyLength": 1}}),
    "send_message_to_task": rpc("SendMessage", {"message": {**MSG, "messageId": "m8", "taskId": T}}),
    "send_message_direct": rpc("SendMessage", {"message": {**MSG, "messageId": "m7", "parts": [{"text": "message"}]}}, id="s"),
    "send_streaming": rpc("SendStreamingMessage", {"message": {**MSG, "messageId": "m6"}}),
    "subscribe": rpc("SubscribeToTask", {"id": T}),
    "get_task": rpc("GetTask", {"id": T, "historyLength": 1}),
    "get_task_missing": rpc("GetTask", {"id": "0123456789abcdef0123456789abcdef"}),
    "get_task_bad_id": rpc("GetTask", {"id": "nope"}),
    "list_tasks": rpc("ListTasks", {"pageSize": 2, "status": "TASK_STATE_SUBMITTED", "includeArtifacts": True}),
    "cancel_task": rpc("CancelTask", {"id": T}),
    "create_push": rpc("CreateTaskPushNotificationConfig", {"taskId": T, "url": "https://example.com/hook"}),
    "get_push": rpc("GetTaskPushNotificationConfig", {"taskId": T, "id": "p"}),
    "list_push": rpc("ListTaskPushNotificationConfigs", {"taskId": T}),
    "delete_push": rpc("DeleteTaskPushNotificationConfig", {"taskId": T, "id": "p"}),
    "extended_card": rpc("GetExtendedAgentCard", {}),
    "unknown_method": rpc("Nope", {}, id=2.5),
    "params_null": rpc("ListTasks", None, id=None),
    "params_array": rpc("GetTask", [1]),
    "wrong_version": {"jsonrpc": "1.0", "id": 1, "method": "GetTask"},
    "id_object": {"jsonrpc": "2.0", "id": {}, "method": "GetTask"},
    "method_number": {"jsonrpc": "2.0", "id": 3, "method": 3},
}
for name, v in reqs.items():
    write("a2a_jsonrpc", name + ".json", j(v))
write("a2a_jsonrpc", "notification.json", j({"jsonrpc": "2.0", "method": "ListTasks", "params": {}}))
write("a2a_jsonrpc", "batch.json", j([rpc("ListTasks", {}, 1), rpc("Nope", {}, 2), 5, rpc("SendStreamingMessage", {"message": MSG}, 3),
                                      {"jsonrpc": "2.0", "method": "GetTask", "params": {"id": T}}]))
write("a2a_jsonrpc", "batch_notifications.json", j([{"jsonrpc": "2.0", "method": "ListTasks"}]))
write("a2a_jsonrpc", "empty_batch.json", b"[]")
write("a2a_jsonrpc", "parse_error.json", b'{"jsonrpc":"2.0","id":1,"method":"GetTask"')
write("a2a_jsonrpc", "escaped_method.json", b'{"jsonrpc":"2.0","id":1,"method":"Get\\u0054ask","params":{"id":"$TASK"}}')
write("a2a_jsonrpc", "duplicate_keys.json", b'{"jsonrpc":"2.0","id":1,"id":2,"method":"GetTask","params":{"id":"x"},"params":{"id":"$TASK"}}')
write("a2a_jsonrpc", "whitespace.json", b' \n\t{"jsonrpc" : "2.0" , "id" : "a" , "method" : "ListTasks" , "params" : { } } \n')
write("a2a_jsonrpc", "head_wrong_type.txt", b"@content-type: text/plain\na2a-version: 1.0\n\n" + j(rpc("ListTasks", {})))
write("a2a_jsonrpc", "head_plus_json.txt", b"@content-type: application/vnd.a2a+json; charset=utf-8\n\n" + j(rpc("ListTasks", {})))
write("a2a_jsonrpc", "head_query_version.txt", b"@content-type: application/json\n?A2A-Version=1.0&x=y\n\n" + j(rpc("GetTask", {"id": T})))
write("a2a_jsonrpc", "head_old_version.txt", b"@a2a-version: 0.3\n\n" + j(rpc("GetTask", {"id": T})))
write("a2a_jsonrpc", "head_last_event_id.txt", b"@a2a-version: 1.0\nlast-event-id: 2\n\n" + j(rpc("SubscribeToTask", {"id": T})))

# ---- mcp_jsonrpc
V = "2026-07-28"
EXT = "io.modelcontextprotocol/tasks"


def meta(tasks=True):
    return {"io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}} if tasks else {}}


def cur(method, params, tasks=True, id=1):
    p = dict(params)
    p["_meta"] = meta(tasks)
    return rpc(method, p, id)


mcp = {
    "discover": cur("server/discover", {}),
    "tools_list": cur("tools/list", {}, tasks=False),
    "tools_call_task": cur("tools/call", {"name": "run_script", "arguments": {"text": "hello"}}),
    "tools_call_blocking": cur("tools/call", {"name": "run_script", "arguments": {"text": "hello"}}, tasks=False),
    "tools_call_unknown": cur("tools/call", {"name": "nope", "arguments": {}}),
    "tools_call_bad_args": cur("tools/call", {"name": "run_script", "arguments": {"text": 5}}),
    "tasks_get": cur("tasks/get", {"taskId": T}),
    "tasks_update": cur("tasks/update", {"taskId": T, "inputResponses": {"ask-0": {"action": "accept", "content": {"answer": "x"}}}}),
    "tasks_cancel": cur("tasks/cancel", {"taskId": T}),
    "tasks_continue": cur("tasks/continue", {"taskId": T}),
    "tasks_result_current": cur("tasks/result", {"taskId": T}),
    "listen": cur("subscriptions/listen", {"filter": {"taskIds": [T]}}),
    "listen_no_ext": cur("subscriptions/listen", {}, tasks=False),
    "wrong_version": rpc("tools/list", {"_meta": {**meta(), "io.modelcontextprotocol/protocolVersion": "2024-01-01"}}),
    "missing_meta_key": rpc("tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": V}}),
    "rev_2025_11_25_initialize": rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "c", "version": "1"}}),
    "rev_2025_11_25_initialize_old": rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}),
    "rev_2025_11_25_tools_list": rpc("tools/list", {}),
    "rev_2025_11_25_tools_call_task": rpc("tools/call", {"name": "run_script", "arguments": {"text": "hi"}, "task": {"ttl": 60000}}),
    "rev_2025_11_25_tools_call": rpc("tools/call", {"name": "run_script", "arguments": {"text": "hi"}}),
    "rev_2025_11_25_tasks_get": rpc("tasks/get", {"taskId": T}),
    "rev_2025_11_25_tasks_result": rpc("tasks/result", {"taskId": T}),
    "rev_2025_11_25_tasks_list": rpc("tasks/list", {"cursor": "x"}),
    "rev_2025_11_25_tasks_cancel": rpc("tasks/cancel", {"taskId": T}),
    "rev_2025_11_25_ping": rpc("ping", {}),
    "rev_2025_11_25_notification": {"jsonrpc": "2.0", "method": "notifications/initialized"},
    "rev_2025_11_25_response": {"jsonrpc": "2.0", "id": "e1", "result": {"action": "accept", "content": {"answer": "a"}}},
    "rev_2025_11_25_error_response": {"jsonrpc": "2.0", "id": 5, "error": {"code": -1, "message": "no"}},
    "both_result_error": {"jsonrpc": "2.0", "id": 5, "result": 1, "error": {}},
    "batch": [rpc("ping", {})],
    "id_bool": {"jsonrpc": "2.0", "id": True, "method": "ping"},
}
for name, v in mcp.items():
    write("mcp_jsonrpc", name + ".json", j(v))
write("mcp_jsonrpc", "parse_error.json", b'{"jsonrpc":')
write("mcp_jsonrpc", "head_mismatch.txt", b"@mcp-protocol-version: 2026-07-28\nmcp-method: tools/list\ncontent-type: application/json\n\n" + j(cur("server/discover", {})))
write("mcp_jsonrpc", "head_base64_name.txt", b"@mcp-protocol-version: 2026-07-28\nmcp-method: tools/call\nmcp-name: =?base64?cnVuX3NjcmlwdA==?=\n\n" + j(cur("tools/call", {"name": "run_script", "arguments": {"text": "x"}})))
write("mcp_jsonrpc", "head_bad_base64.txt", b"@mcp-protocol-version: 2026-07-28\nmcp-method: tasks/get\nmcp-name: =?base64?***?=\n\n" + j(cur("tasks/get", {"taskId": T})))
write("mcp_jsonrpc", "head_duplicate.txt", b"@mcp-protocol-version: 2026-07-28\nmcp-protocol-version: 2026-07-28\nmcp-method: tools/list\n\n" + j(cur("tools/list", {})))
write("mcp_jsonrpc", "head_unknown_session.txt", b"@mcp-session-id: nope\n\n" + j(rpc("tools/list", {})))

# ---- client_sse: SSE response bodies
fixtures = os.path.join(ROOT, "..", "crates", "taskwire-a2a", "tests", "fixtures")


def sse_body(items, ids=True):
    out = ""
    for i, v in enumerate(items):
        if ids:
            out += f"id: {i + 1}\n"
        out += "data: " + json.dumps(v, separators=(",", ":")) + "\n\n"
    return out


for fx in ["stream_send_streaming_message.json", "stream_subscribe_to_task.json"]:
    p = os.path.join(fixtures, fx)
    if os.path.exists(p):
        with open(p) as f:
            write("client_sse", fx.replace(".json", ".sse"), sse_body(json.load(f)))
write("client_sse", "crlf.sse", "id: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"message\":{\"messageId\":\"m\",\"role\":\"ROLE_AGENT\",\"parts\":[{\"text\":\"x\"}]}}}\r\n\r\n")
write("client_sse", "cr_only.sse", "data: a\rdata: b\r\r")
write("client_sse", "bom_comment.sse", "\ufeff: keep-alive\n\nevent: status\nretry: 1500\ndata: {}\n\n")
write("client_sse", "multiline.sse", "data: line one\ndata:line two\ndata\n\n")
write("client_sse", "unfinished.sse", "data: {\"a\":1}\n\ndata: {\"b\"")
write("client_sse", "agui.sse", "id: 0.0\ndata: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\nid: 1.1\ndata: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n")
write("client_sse", "error_result.sse", "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32001,\"message\":\"not found\"}}\n\n")
write("client_sse", "id_nul.sse", "id: a\u0000b\ndata: x\n\n")
write("client_sse", "bad_utf8.sse", b"data: \xff\xfe\n\n")

# ---- agui_proto: AG-UI events (JSON form) and protobuf frame bodies
agui_fixtures = os.path.join(ROOT, "..", "crates", "taskwire-agui", "tests", "fixtures")
events = []
for fx in sorted(os.listdir(agui_fixtures)) if os.path.isdir(agui_fixtures) else []:
    if fx.endswith(".json") and not fx.endswith(".proto.json"):
        with open(os.path.join(agui_fixtures, fx)) as f:
            try:
                data = json.load(f)
            except ValueError:
                continue
        if isinstance(data, list):
            for item in data:
                ev = item.get("event") if isinstance(item, dict) else None
                if isinstance(ev, dict) and "type" in ev:
                    events.append(ev)
seen = set()
for ev in events:
    key = ev["type"] + (ev.get("name") or "")
    if key in seen:
        continue
    seen.add(key)
    write("agui_proto", "event_" + key.replace(":", "_").lower() + ".json", j(ev))
extra_events = [
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "two\nlines \u00e9"},
    {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f", "parentMessageId": "m"},
    {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1}, {"op": "move", "from": "/a", "path": "/b"}]},
    {"type": "STATE_SNAPSHOT", "snapshot": {"n": 12345678901, "f": 0.5, "neg": -3, "l": [None, True]}},
    {"type": "RUN_ERROR", "message": "no", "code": "x"},
    {"type": "STEP_STARTED", "stepName": "s", "timestamp": 5},
]
for i, ev in enumerate(extra_events):
    write("agui_proto", f"event_extra_{i}.json", j(ev))


def pb_varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def pb_len(field, payload):
    return pb_varint(field << 3 | 2) + pb_varint(len(payload)) + payload


def frame(payload):
    return struct.pack(">I", len(payload)) + payload


# Oneof arm 12 (run_started) with thread_id/run_id: a hand-encoded frame; more come
# from the fuzzer and from fuzz/corpus.
run_started = pb_len(12, pb_len(2, b"t") + pb_len(3, b"r"))
write("agui_proto", "frames_run_started.bin", frame(run_started))
write("agui_proto", "frames_two.bin", frame(run_started) + frame(run_started))
write("agui_proto", "frames_empty_event.bin", frame(b""))
write("agui_proto", "frames_truncated.bin", frame(run_started)[:-1])
write("agui_proto", "frames_short_prefix.bin", b"\x00\x00")

# ---- agui_run: POST /agui bodies
run = {"threadId": "t1", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "hello"}],
       "tools": [], "context": [], "state": {}, "forwardedProps": {}}
write("agui_run", "run.json", j(run))
write("agui_run", "run_content_parts.json", j({**run, "runId": "r2", "messages": [{"id": "u2", "role": "user", "content": [{"type": "text", "text": "hi"}]}]}))
write("agui_run", "run_resume.json", j({**run, "runId": "r3", "parentRunId": "r1", "messages": [],
                                        "resume": [{"interruptId": "x/input/ask-0", "status": "resolved", "payload": {"answer": "a"}}]}))
write("agui_run", "run_empty_ids.json", j({**run, "threadId": "", "runId": ""}))
write("agui_run", "run_no_messages.json", j({**run, "runId": "r4", "messages": []}))
write("agui_run", "run_assistant_only.json", j({**run, "runId": "r5", "messages": [{"id": "a1", "role": "assistant", "content": "x"}]}))
write("agui_run", "run_proto.txt", b"@content-type: application/json\naccept: application/vnd.ag-ui.event+proto\n\n" + j({**run, "runId": "r6"}))
write("agui_run", "run_wrong_type.txt", b"@content-type: text/plain\n\n" + j(run))
write("agui_run", "replay.txt", b"@GET /agui/threads/t1\n\n")
write("agui_run", "reconnect.txt", b"@GET /agui/threads/t1/runs/r1/events\nlast-event-id: 0.0\n\n")
write("agui_run", "cancel.txt", b"@POST /agui/threads/t1/runs/r1/cancel\n\n")

# ---- cas_input
cas = {
    "create_text": {"message": [{"mimeType": "text/plain", "text": "hello"}]},
    "create_file": {"message": [{"mimeType": "image/png", "file": "https://example.com/a.png", "sizeBytes": 12, "metadata": {"k": "v"}}]},
    "create_file_no_size": {"message": [{"mimeType": "application/pdf", "file": "doc-1"}]},
    "create_params": {"message": [{"text": "x"}], "temperature": 1},
    "create_well_known": {"message": [{"text": "x"}], "type": "input"},
    "create_both": {"message": [{"text": "x", "file": "y", "mimeType": "a/b"}]},
    "create_none": {"message": [{}]},
    "create_empty": {"message": []},
    "create_unknown_field": {"message": [{"text": "x", "other": 1}]},
    "create_reserved_meta": {"message": [{"text": "x", "metadata": {"taskwire.sizeBytes": 3}}]},
    "parts_list": [{"text": "a"}, {"file": "f", "mimeType": "a/b"}],
    "one_part": {"text": "a", "mimeType": "text/markdown"},
}
for name, v in cas.items():
    write("cas_input", name + ".json", j(v))
write("cas_input", "not_json.txt", b"{nope")
write("cas_input", "input.txt", b"@POST /cas/tasks/$TASK/input\ncontent-type: application/json\nidempotency-key: k1\n\n" + j({"message": [{"text": "answer"}]}))
write("cas_input", "create_idempotent.txt", b"@POST /cas/tasks\ncontent-type: application/json\nidempotency-key: same\n\n" + j({"message": [{"text": "x"}]}))
write("cas_input", "create_parent.txt", b"@POST /cas/tasks\ncontent-type: application/json\ncas-parent-task: $TASK\n\n" + j({"message": [{"text": "x"}]}))
write("cas_input", "create_push.txt", b"@POST /cas/tasks\ncontent-type: application/json\ncas-push-url: http://127.0.0.1:9/\n\n" + j({"message": [{"text": "x"}]}))
write("cas_input", "status.txt", b"@GET /cas/tasks/$TASK\nif-none-match: W/\"x\", *\n\n")
write("cas_input", "status_wait.txt", b"@GET /cas/tasks/$TASK?wait=0.01&revision=abc\n\n")
write("cas_input", "status_bad_wait.txt", b"@GET /cas/tasks/$TASK?wait=-1\n\n")
write("cas_input", "messages.txt", b"@GET /cas/tasks/$TASK/messages\n\n")
write("cas_input", "events.txt", b"@GET /cas/tasks/$TASK/events\n\n")
write("cas_input", "authorize.txt", b"@POST /cas/tasks/$TASK/authorizations/github\n\n")
write("cas_input", "reviews.txt", b"@GET /cas/reviews\n\n")
write("cas_input", "decide.txt", b"@POST /cas/reviews/$TASK/r1\ncontent-type: application/json\n\n" + j({"decision": "approve"}))
write("cas_input", "host_complete.txt", b"@POST /cas/host/tasks/$TASK/complete\n\n" + j({"reason": "done"}))
write("cas_input", "host_interrupt.txt", b"@POST /cas/host/tasks/$TASK/interrupt\n\n")
write("cas_input", "wrong_type.txt", b"@POST /cas/tasks\ncontent-type: text/plain\n\n" + j(cas["create_text"]))

# ---- push_url
for name, url in {
    "https": "https://example.com/hook",
    "http_port": "http://hooks.example.com:8080/a?b=c#d",
    "loopback": "http://127.0.0.1:9/x",
    "loopback_short": "http://127.1/",
    "loopback_hex": "http://0x7f.0.0.1/",
    "loopback_int": "http://2130706433/",
    "private": "http://10.1.2.3/",
    "metadata": "http://169.254.169.254/latest/meta-data/",
    "v6_loopback": "http://[::1]:80/",
    "v6_mapped": "http://[::ffff:127.0.0.1]/",
    "v6_ula": "http://[fd00:ec2::254]/",
    "v6_public": "http://[2001:4860:4860::8888]/",
    "cgnat": "http://100.64.1.1/",
    "broadcast": "http://255.255.255.255/",
    "multicast": "http://224.0.0.1/",
    "unspecified": "http://0.0.0.0/",
    "public": "http://8.8.8.8/hook",
    "ftp": "ftp://example.com/",
    "no_host": "http:///path",
    "userinfo": "http://user:pass@8.8.8.8@127.0.0.1/",
    "not_a_url": "not a url",
    "file": "file:///etc/passwd",
}.items():
    write("push_url", name + ".txt", url)
write("push_url", "octets_v4.bin", bytes([127, 0, 0, 1]))
write("push_url", "octets_v6.bin", bytes([0] * 10 + [0xFF, 0xFF, 10, 0, 0, 1]))

