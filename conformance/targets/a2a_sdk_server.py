"""A minimal A2A agent served by the official Python a2a-sdk, as a conformance
target whose protocol layer nobody here wrote.

Everything on the wire is the SDK's: its DefaultRequestHandler, InMemoryTaskStore,
JSON-RPC and HTTP+JSON routes (Starlette + SSE, served by uvicorn) and gRPC
handler. Only the
agent behind them is ours, a few lines:

- `ask <question>` pauses the task in INPUT_REQUIRED with the question as the
  status message; the next message to the task completes it with an artifact
  `answer: <that message>`;
- anything else is echoed back as an artifact named `echo` and the task completes.

The agent card advertises skills `echo` and `ask` (how `taskwire conformance`
knows which scenarios apply) and the three interfaces (HTTP+JSON under /rest).

Usage: python a2a_sdk_server.py --port PORT --grpc-port PORT [--host 127.0.0.1]
Prints "ready <url>" on stdout once both listeners accept connections.
"""

import asyncio
import sys

import grpc
from starlette.applications import Starlette

from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import a2a_pb2, a2a_pb2_grpc

# The shared command line and uvicorn tail, beside this script; importing it
# must leave no __pycache__ in the source tree.
sys.dont_write_bytecode = True
from _serve import arguments, serve  # noqa: E402


class ConformanceAgent(AgentExecutor):
    """Echo, and `ask` → input required → `answer: …`."""

    async def execute(self, context: RequestContext, event_queue) -> None:
        text = context.get_user_input()
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if task.status.state == a2a_pb2.TaskState.TASK_STATE_INPUT_REQUIRED:
            await updater.add_artifact([a2a_pb2.Part(text=f"answer: {text}")], name="answer")
            await updater.complete()
        elif text.startswith("ask "):
            question = text[len("ask "):].strip()
            await updater.requires_input(
                new_text_message(question, context_id=task.context_id, task_id=task.id)
            )
        else:
            await updater.add_artifact([a2a_pb2.Part(text=text)], name="echo")
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue) -> None:
        task = context.current_task
        if task is not None:
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


def agent_card(host: str, port: int, grpc_port: int) -> a2a_pb2.AgentCard:
    return a2a_pb2.AgentCard(
        name="conformance-echo",
        description="Echo agent behind the official a2a-sdk request handler (taskwire conformance target).",
        version="1.0.0",
        supported_interfaces=[
            a2a_pb2.AgentInterface(
                url=f"http://{host}:{port}/a2a", protocol_binding="JSONRPC", protocol_version="1.0"
            ),
            a2a_pb2.AgentInterface(
                url=f"{host}:{grpc_port}", protocol_binding="GRPC", protocol_version="1.0"
            ),
            a2a_pb2.AgentInterface(
                url=f"http://{host}:{port}/rest", protocol_binding="HTTP+JSON", protocol_version="1.0"
            ),
        ],
        capabilities=a2a_pb2.AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            a2a_pb2.AgentSkill(id="echo", name="Echo", description="Echoes the text back as an artifact.", tags=["echo"]),
            a2a_pb2.AgentSkill(id="ask", name="Ask", description="`ask <question>` asks; the next message answers.", tags=["ask"]),
        ],
    )


async def main() -> None:
    p = arguments()
    p.add_argument("--grpc-port", type=int, required=True)
    a = p.parse_args()

    card = agent_card(a.host, a.port, a.grpc_port)
    handler = DefaultRequestHandler(
        agent_executor=ConformanceAgent(),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    # The REST routes last: they include a catch-all /{tenant} mount.
    app = Starlette(
        routes=create_agent_card_routes(card)
        + create_jsonrpc_routes(handler, "/a2a")
        + create_rest_routes(handler, path_prefix="/rest")
    )

    grpc_server = grpc.aio.server()
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), grpc_server)
    grpc_server.add_insecure_port(f"{a.host}:{a.grpc_port}")
    await grpc_server.start()

    try:
        await serve(app, a.host, a.port)
    finally:
        await grpc_server.stop(grace=1)


if __name__ == "__main__":
    asyncio.run(main())
