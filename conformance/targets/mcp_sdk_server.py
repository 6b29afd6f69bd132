"""A small MCP server built on the official Python SDK (`mcp` 2.3.0), as an
upstream for taskwire's bridge whose protocol layer nobody here wrote.

Everything on the wire is the SDK's: its `MCPServer`, its Streamable HTTP app
(`streamable_http_app()`, path /mcp, served by uvicorn) and its handling of
protocol revision 2026-07-28 (`server/discover`, no `initialize`, one JSON-RPC
exchange per POST, `requestState` sealed by the SDK's RequestStateBoundary).
Only the three tools are ours:

- `ask_name` (no arguments) asks for a name through form elicitation. It uses
  the SDK's resolver API: a parameter annotated
  `Annotated[ElicitationResult[NameForm], Resolve(ask_for_name)]` whose
  resolver returns `Elicit(message, NameForm)`. Under 2026-07-28 a tool has no
  back-channel (`ctx.elicit` raises NoBackChannelError there), so the SDK turns
  the question into an `InputRequiredResult` (SEP-2322): `tools/call` answers
  `resultType: "input_required"` with `inputRequests` keyed by the resolver's
  wire key (`<module>:<qualname>`, here `__main__:ask_for_name`) and a sealed
  `requestState`; the client calls `tools/call` again with `inputResponses` and
  that `requestState`, and the tool body then runs with the outcome. Accepted:
  text `hello, <name>`; declined or cancelled: a tool error (`isError: true`).
  Under 2025-11-25 the same resolver sends `elicitation/create` mid-call.
- `slow` (`seconds`, an integer, default 2) sleeps that long and returns text
  `slept <n>s`; each run writes `slow: running for <n>s` to stderr (the
  tests count the runs).
- `fail` always raises ToolError("it broke"), which the SDK answers as a
  CallToolResult with `isError: true` and the text
  `Error executing tool fail: it broke` (the SDK prefixes a ToolError's
  message; any other exception would lose its message).

The server offers no tasks extension, so every `tools/call` is blocking.

Usage: python mcp_sdk_server.py --port PORT [--host 127.0.0.1]
                                 [--sse-ping-interval SECONDS]
Prints "ready <url>" (the MCP endpoint, http://HOST:PORT/mcp) on stdout once
uvicorn accepts connections.

The SDK answers a 2026-07-28 request with `application/json` when the handler
ends within 15 s without a notification, else commits `text/event-stream`,
sends `: ping` comments every 15 s and the response as the last event. That
window is a private constant of the SDK
(`mcp.server._streamable_http_modern._SSE_PING_INTERVAL`);
`--sse-ping-interval` overrides it so that a test can reach the SSE answer in
seconds (the test checks that the override took effect).

What the wire looked like (mcp 2.3.0, uvicorn 0.55.0, checked by hand with
curl and again behind taskwire's bridge). Every request carried the headers
`MCP-Protocol-Version: 2026-07-28`, `Mcp-Method: <method>` (and
`Mcp-Name: <tool>` on tools/call), `Accept: application/json,
text/event-stream`, and `params._meta` with
`io.modelcontextprotocol/protocolVersion` "2026-07-28",
`io.modelcontextprotocol/clientInfo` and
`io.modelcontextprotocol/clientCapabilities` (`{"elicitation": {"form": {}}}`:
without it the SDK refuses to ask, -32021; without the key at all, -32602).
Every answer below was `200`, `content-type: application/json`, and carried
`"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"taskwire-mcp-sdk-target","version":"1.0.0"}}`
in its result, left out here.

  -> {"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{…}}}
  <- {"jsonrpc":"2.0","id":1,"result":{"cacheScope":"private","capabilities":{"prompts":{"listChanged":true},
      "resources":{"listChanged":true,"subscribe":true},"tools":{"listChanged":true}},
      "instructions":"Three tools behind the official Python MCP SDK (taskwire bridge interop target).",
      "resultType":"complete","supportedVersions":["2026-07-28"],"ttlMs":0}}

  -> {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask_name","arguments":{},"_meta":{…}}}
  <- {"jsonrpc":"2.0","id":3,"result":{"inputRequests":{"__main__:ask_for_name":{"method":"elicitation/create",
      "params":{"message":"What is your name?","mode":"form","requestedSchema":{"properties":{"name":
      {"description":"The name to greet","title":"Name","type":"string"}},"required":["name"],"type":"object"}}}},
      "requestState":"v1.jgdVgV1oV_oBhGOHRACjsf2wrhPvePpC3k0f…(375 characters in all; it varies)…","resultType":"input_required"}}

  -> {"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ask_name","arguments":{},
      "inputResponses":{"__main__:ask_for_name":{"action":"accept","content":{"name":"Ada"}}},
      "requestState":"v1.jgdVgV1oV_oBhGOHRACjsf2wrhPvePpC3k0f…(as received)…","_meta":{…}}}
  <- {"jsonrpc":"2.0","id":4,"result":{"content":[{"text":"hello, Ada","type":"text"}],"isError":false,
      "resultType":"complete"}}

  -> the same with "inputResponses":{"__main__:ask_for_name":{"action":"decline"}}
  <- {"jsonrpc":"2.0","id":5,"result":{"content":[{"text":"Error executing tool ask_name: no name given
      (the elicitation was answered with decline)","type":"text"}],"isError":true,"resultType":"complete"}}

  -> the answer without the requestState: asked again (an input_required result like id 3's)

  -> {"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"fail","arguments":{},"_meta":{…}}}
  <- {"jsonrpc":"2.0","id":6,"result":{"content":[{"text":"Error executing tool fail: it broke","type":"text"}],
      "isError":true,"resultType":"complete"}}

  -> {"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{"text":"x"},"_meta":{…}}}
  <- (2.0 s later) {"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"slept 2s","type":"text"}],
      "isError":false,"resultType":"complete"}}
     (an argument the schema does not name, like `text`, is ignored)

  a tools/call of slow with {"seconds":17}: `content-type: text/event-stream`, the body
  `: ping` after 15 s, then `event: message` / `data: {"jsonrpc":"2.0","id":3,"result":{…"slept 17s"…}}`

Tests: crates/taskwire/tests/bridge/sdk_mcp.rs (they check each of these
through the bridge's A2A, AG-UI and MCP surfaces, and against this server
directly).
"""

import asyncio
import sys
from typing import Annotated

from pydantic import BaseModel, Field

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from mcp.server.mcpserver.exceptions import ToolError

# The shared command line and uvicorn tail, beside this script; importing it
# must leave no __pycache__ in the source tree.
sys.dont_write_bytecode = True
from _serve import arguments, serve  # noqa: E402


class NameForm(BaseModel):
    """The form `ask_name` elicits: one string property."""

    name: str = Field(description="The name to greet")


def ask_for_name() -> Elicit[NameForm]:
    """The resolver behind `ask_name`: always asks (the SDK asks once per call
    and carries the answer in `requestState`)."""
    return Elicit("What is your name?", NameForm)


def build() -> MCPServer:
    server = MCPServer(
        name="taskwire-mcp-sdk-target",
        version="1.0.0",
        instructions="Three tools behind the official Python MCP SDK (taskwire bridge interop target).",
    )

    @server.tool(
        description="Asks for a name through elicitation and greets it.",
        structured_output=False,
    )
    async def ask_name(
        answer: Annotated[ElicitationResult[NameForm], Resolve(ask_for_name)],
    ) -> str:
        if isinstance(answer, AcceptedElicitation):
            return f"hello, {answer.data.name}"
        raise ToolError(f"no name given (the elicitation was answered with {answer.action})")

    @server.tool(
        description="Sleeps `seconds` seconds (default 2), then says so.",
        structured_output=False,
    )
    async def slow(seconds: int = 2) -> str:
        # Each run is logged, so that a test can count them.
        print(f"slow: running for {seconds}s", file=sys.stderr, flush=True)
        await asyncio.sleep(seconds)
        return f"slept {seconds}s"

    @server.tool(description="Always fails with `it broke`.", structured_output=False)
    async def fail() -> str:
        raise ToolError("it broke")

    return server


async def main() -> None:
    p = arguments()
    p.add_argument("--sse-ping-interval", type=float, default=None)
    a = p.parse_args()

    if a.sse_ping_interval is not None:
        import mcp.server._streamable_http_modern as modern

        if not hasattr(modern, "_SSE_PING_INTERVAL"):
            sys.exit("this mcp SDK has no _SSE_PING_INTERVAL to override")
        modern._SSE_PING_INTERVAL = a.sse_ping_interval

    await serve(build().streamable_http_app(host=a.host), a.host, a.port, "/mcp")


if __name__ == "__main__":
    asyncio.run(main())
