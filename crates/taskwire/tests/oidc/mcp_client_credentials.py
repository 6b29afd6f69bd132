"""The official Python MCP SDK's OAuth client-credentials client against taskwire.

Run by crates/taskwire/tests/oauth.rs: `python mcp_client_credentials.py MCP_URL
ISSUER CLIENT_ID CLIENT_SECRET`. Connects to taskwire's MCP endpoint with
`mcp.client.auth.extensions.client_credentials.ClientCredentialsOAuthProvider`
and no token: the SDK takes the 401's `resource_metadata`, reads the RFC 9728
metadata, the issuer's metadata, gets a token by the client credentials grant
(with `resource` and the scope of the challenge), then lists the tools and calls
`run_script`. Prints one JSON line: every HTTP exchange (method, URL, status)
and the tool's text.
"""

import asyncio
import json
import sys

from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


class MemoryStorage:
    def __init__(self):
        self.tokens = None
        self.info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.info

    async def set_client_info(self, info):
        self.info = info


async def main(url, issuer, client_id, secret):
    exchanges = []

    async def on_response(response):
        exchanges.append(
            {"method": response.request.method, "url": str(response.request.url), "status": response.status_code}
        )

    storage = MemoryStorage()
    auth = ClientCredentialsOAuthProvider(
        server_url=url,
        storage=storage,
        client_id=client_id,
        client_secret=secret,
        issuer=issuer,
    )
    http = create_mcp_http_client(auth=auth)
    http.event_hooks["response"].append(on_response)
    async with http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            tools = await client.list_tools()
            result = await client.call_tool("run_script", {"text": "hello over oauth"})
    texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
    print(
        json.dumps(
            {
                "exchanges": exchanges,
                "tools": [t.name for t in tools.tools],
                "text": texts,
                "isError": bool(result.is_error),
                "granted": storage.tokens.scope if storage.tokens else None,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
