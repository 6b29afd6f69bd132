"""A small MCP server built on the official Python SDK at a 1.x version (`mcp`
1.30.0), which speaks protocol revision 2025-11-25 only: `initialize` and an
`Mcp-Session-Id` session, server-to-client requests (`elicitation/create`) on
the SSE answer of a POST, and the experimental tasks of 2025-11-25 (SEP-1686:
`params.task`, `tasks/get`, `tasks/result`, `tasks/cancel`). It is the upstream
of taskwire's bridge in crates/taskwire/tests/bridge/sdk_mcp_2025_11_25.rs; nobody here
wrote its protocol layer.

Everything on the wire is the SDK's: FastMCP with its stateful Streamable HTTP
app (`streamable_http_app()`, path /mcp, served by uvicorn), and the SDK's
experimental task support (`server.experimental.enable_tasks()`,
`ctx.experimental.run_task`, `ServerTaskContext.elicit`) on FastMCP's low-level
server, which FastMCP 1.x does not expose itself (tasks need the low-level
API). Only the tools are ours:

Blocking tools (FastMCP; `execution` absent, so never run as tasks):
- `ask_name` (no arguments) asks for a name with `ctx.elicit` (form mode, one
  string `name`): an `elicitation/create` request on the tools/call's SSE
  answer. Accepted: text `hello, <name>`; declined or cancelled: a tool error.
- `ask_name_again`: the same, asking "What is your name, again?" and
  answering `hello again, <name>`, with `annotations.idempotentHint: true`;
  each call logs `event: ask_name_again called` on stderr.
- `slow` (`seconds`, an integer, default 2) sleeps that long and returns text
  `slept <n>s`. A cancel (`notifications/cancelled` of the call) logs
  `event: slow cancelled` on stderr.
- `fail` always raises ToolError("it broke"); FastMCP answers a CallToolResult
  with `isError: true` and the text `Error executing tool fail: it broke`.

Task tools (`execution.taskSupport: "required"`; the server advertises
`capabilities.tasks.requests.tools.call`):
- `task_ask` (no arguments) asks for a name with `ServerTaskContext.elicit`:
  the task goes `input_required`, the `elicitation/create` (with
  `_meta["io.modelcontextprotocol/related-task"]`) is delivered on a
  `tasks/result` stream, and the answer completes the task with text
  `hello from a task, <name>`.
- `task_slow` (`seconds`, default 2) sleeps as a task (`status message
  "sleeping"`), then completes with `slept <n>s as a task`. A cancelled task
  logs `event: task_slow cancelled`.

Usage: python mcp_sdk_server_2025_11_25.py --port PORT [--host 127.0.0.1]
Prints "ready <url>" (the MCP endpoint, http://HOST:PORT/mcp) on stdout once
uvicorn accepts connections. Server events the tests check go to stderr as
`event: …` lines.

What the wire looked like (mcp 1.30.0, uvicorn 0.55.0, checked by hand with
curl; `Accept: application/json, text/event-stream` on every POST):

  A 2026-07-28 client's first request, without a session:
  -> {"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{…}}}
  <- 400 {"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Bad Request: Missing session ID"}}

  -> {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",
      "capabilities":{"elicitation":{}},"clientInfo":{…}}}
  <- 200 text/event-stream, header mcp-session-id: <32 hex digits>
     data: {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{…,
       "tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{…}}}

  A request with a session id the server does not hold:
  <- 404 {"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Session not found"}}

  tools/call of ask_name: an SSE answer whose first message is the request
     {"method":"elicitation/create","params":{"message":"What is your name?","requestedSchema":{…}},
      "jsonrpc":"2.0","id":0}
  the client POSTs {"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"name":"Ada"}}}
  (202), and the call's stream then ends with the result `hello, Ada`.

  tools/call of task_ask with "task":{"ttl":60000}:
  <- {"result":{"task":{"taskId":"…","status":"working","ttl":60000,"pollInterval":…,…}}}
  tasks/get shows `input_required`; tasks/result streams
     {"method":"elicitation/create","params":{…,"_meta":{"io.modelcontextprotocol/related-task":
      {"taskId":"…"}}},"id":"task-<taskId>-<n>"}
  and, once answered (a POSTed response with that id), the result with the related-task `_meta`.
"""

import asyncio
import sys
from typing import Any

from pydantic import BaseModel, Field

import mcp.types as types
from mcp.server.experimental.task_context import ServerTaskContext
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError

# The shared command line and uvicorn tail, beside this script; importing it
# must leave no __pycache__ in the source tree.
sys.dont_write_bytecode = True
from _serve import arguments, serve  # noqa: E402


class NameForm(BaseModel):
    """The form the asking tools elicit: one string property."""

    name: str = Field(description="The name to greet")


NAME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "The name to greet"}},
    "required": ["name"],
}


def event(what: str) -> None:
    print(f"event: {what}", file=sys.stderr, flush=True)


def build(host: str) -> FastMCP:
    mcp = FastMCP(
        name="taskwire-mcp-2025-11-25-sdk-target",
        instructions="Tools behind the official Python MCP SDK 1.x (taskwire bridge interop target, 2025-11-25).",
        host=host,
    )

    @mcp.tool(description="Asks for a name through elicitation and greets it.", structured_output=False)
    async def ask_name(ctx: Context) -> str:
        answer = await ctx.elicit("What is your name?", NameForm)
        if answer.action == "accept":
            return f"hello, {answer.data.name}"
        raise ToolError(f"no name given (the elicitation was answered with {answer.action})")

    @mcp.tool(
        description="As ask_name, marked idempotent (a bridge that lost the call may call it again).",
        structured_output=False,
        annotations=types.ToolAnnotations(idempotentHint=True),
    )
    async def ask_name_again(ctx: Context) -> str:
        event("ask_name_again called")
        answer = await ctx.elicit("What is your name, again?", NameForm)
        if answer.action == "accept":
            return f"hello again, {answer.data.name}"
        raise ToolError(f"no name given (the elicitation was answered with {answer.action})")

    @mcp.tool(description="Sleeps `seconds` seconds (default 2), then says so.", structured_output=False)
    async def slow(seconds: int = 2) -> str:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            event("slow cancelled")
            raise
        return f"slept {seconds}s"

    @mcp.tool(description="Always fails with `it broke`.", structured_output=False)
    async def fail() -> str:
        raise ToolError("it broke")

    # The task tools live on FastMCP's low-level server, which has the SDK's
    # experimental task support; FastMCP's own tools go through unchanged.
    low = mcp._mcp_server
    low.experimental.enable_tasks()
    task_tools = [
        types.Tool(
            name="task_ask",
            description="Asks for a name as a task (elicitation through tasks/result).",
            inputSchema={"type": "object", "properties": {}},
            execution=types.ToolExecution(taskSupport=types.TASK_REQUIRED),
        ),
        types.Tool(
            name="task_slow",
            description="Sleeps `seconds` seconds (default 2) as a task.",
            inputSchema={"type": "object", "properties": {"seconds": {"type": "integer"}}},
            execution=types.ToolExecution(taskSupport=types.TASK_REQUIRED),
        ),
    ]
    task_names = {t.name for t in task_tools}

    @low.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [*await mcp.list_tools(), *task_tools]

    @low.call_tool(validate_input=False)
    async def call_tool(name: str, arguments: dict[str, Any]):
        if name not in task_names:
            return await mcp.call_tool(name, arguments)
        ctx = low.request_context
        ctx.experimental.validate_task_mode(types.TASK_REQUIRED)
        if name == "task_ask":

            async def work(task: ServerTaskContext) -> types.CallToolResult:
                r = await task.elicit(message="What is your name, task?", requestedSchema=NAME_SCHEMA)
                if r.action == "accept" and r.content:
                    text = f"hello from a task, {r.content.get('name')}"
                    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text=f"no name given ({r.action})")],
                    isError=True,
                )

        else:
            seconds = int(arguments.get("seconds", 2))

            async def work(task: ServerTaskContext) -> types.CallToolResult:
                await task.update_status("sleeping")
                try:
                    await asyncio.sleep(seconds)
                except asyncio.CancelledError:
                    event("task_slow cancelled")
                    raise
                if task.is_cancelled:
                    event("task_slow cancelled")
                text = f"slept {seconds}s as a task"
                return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

        return await ctx.experimental.run_task(work)

    return mcp


async def main() -> None:
    a = arguments().parse_args()
    await serve(build(a.host).streamable_http_app(), a.host, a.port, "/mcp")


if __name__ == "__main__":
    asyncio.run(main())
