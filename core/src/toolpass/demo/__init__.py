"""``toolpass demo``: what toolpass does, with no network and no model.

1. ``story``: a scripted ops agent whose calls toolpass decides (injection, exfiltration,
   approval, a denied scale-up, no session), with its audit log;
2. ``live``: the permission engine asking a small GitHub on 127.0.0.1, and the request hook
   refusing a request before it leaves the process;
3. how to run an agent framework's example.
"""

from __future__ import annotations

from toolpass.demo import live, story

EXAMPLES = """
=== next: an agent framework's real loop ===
  examples/<framework>_agent.py runs the same checks inside a framework's agent, offline
  (a scripted model, toolpass.testing's engine). From a checkout:

    python3 -m venv .venv && .venv/bin/pip install ./core ./adapters/langchain
    .venv/bin/python examples/langchain_agent.py

  Frameworks: langchain, openai_agents, pydantic_ai, crewai, strands, llamaindex,
  google_adk, claude_agent_sdk, mcp (the adapter folder uses '-': adapters/openai-agents)."""


def main() -> None:
    story.main()
    live.main()
    print(EXAMPLES)
