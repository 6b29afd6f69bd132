"""Google ADK's RemoteA2aAgent against a running taskwire server.

Usage: python adk_remote.py BASE_URL EXPECT
  BASE_URL  the server (http://127.0.0.1:PORT)
  EXPECT    `works`: the agent loads the card by URL and a run through ADK's
            Runner sends a message and gets the echo back;
            `refused`: loading the card by URL fails (ADK's checks of the
            card's interface urls), which the script reports.
Prints `PASS adk-EXPECT` when the expectation holds; exits non-zero otherwise.
"""

import asyncio
import sys

from google.adk.agents.remote_a2a_agent import RemoteA2aAgent
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types


async def run(base: str, expect: str) -> None:
    card_url = f"{base}/.well-known/agent-card.json"
    agent = RemoteA2aAgent(name="taskwire", agent_card=card_url)
    runner = Runner(
        app_name="adk-interop",
        agent=agent,
        session_service=InMemorySessionService(),
    )
    session = await runner.session_service.create_session(
        app_name="adk-interop", user_id="u"
    )
    message = types.Content(role="user", parts=[types.Part(text="hello from adk")])
    texts = []
    error = None
    try:
        async for event in runner.run_async(
            user_id="u", session_id=session.id, new_message=message
        ):
            if event.error_message:
                error = event.error_message
            for part in (event.content.parts if event.content else None) or []:
                if part.text:
                    texts.append(part.text)
    except Exception as e:  # ADK raises on a card it refuses
        error = f"{type(e).__name__}: {e}"
    if expect == "works":
        if error is not None:
            sys.exit(f"FAIL: the run failed: {error}")
        if not any("hello from adk" in t for t in texts):
            sys.exit(f"FAIL: no echo in the events: {texts}")
        print(f"PASS adk-{expect}")
        print(f"ADK loaded the card from {card_url} and got the echo back")
    else:
        if error is None:
            sys.exit(f"FAIL: ADK accepted the card: {texts}")
        print(f"ADK refused the card: {error}")
    print(f"PASS adk-{expect}")


if __name__ == "__main__":
    asyncio.run(run(sys.argv[1], sys.argv[2]))
