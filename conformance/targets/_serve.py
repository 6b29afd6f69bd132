"""What the SDK targets of this folder share: their command line (`--host`,
`--port`) and serving their ASGI app with uvicorn, saying when it serves.

Imported by `a2a_sdk_server.py`, `mcp_sdk_server.py` and
`mcp_sdk_server_2025_11_25.py` (run as scripts, so this folder is on their path).
"""

import argparse
import asyncio
import sys

import uvicorn


def arguments() -> argparse.ArgumentParser:
    """A parser of `--host` (default 127.0.0.1) and `--port` (required), for
    the target to add its own options to."""
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    return p


async def serve(app, host: str, port: int, path: str = "") -> None:
    """Serves `app` with uvicorn on host:port; once it accepts connections,
    prints `ready http://host:port<path>` on stdout (the line the tests and
    .ci/conformance.sh wait for); returns when uvicorn stops."""
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    while not server.started:
        if serving.done():
            sys.exit(f"uvicorn did not start: {serving.exception()}")
        await asyncio.sleep(0.05)
    print(f"ready http://{host}:{port}{path}", flush=True)
    await serving
