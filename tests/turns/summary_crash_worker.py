"""The child program of the summaries SIGKILL tests.

``python tests/turns/summary_crash_worker.py ROOT BASE_URL``: loads the agent ``bot`` (summaries
on, a small history budget) from ROOT, seeds a session with filler exchanges the first time
(printing ``SEEDED <sid>``), then runs one turn — whose summariser call the parent's scripted
server holds open, or answers — printing ``TURN`` before it and ``DONE`` after; then waits to
be killed. It imports only duragent and the standard library.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from duragent.agents import load_catalog
from duragent.llm import RetryPolicy
from duragent.session import NewSession, RegistrySettings, SessionRegistry
from duragent.store import SessionStore
from duragent.turns import TurnRunner
from duragent.turns.providers import ProviderPool

WORKER_PATH = Path(__file__).resolve()
FILLER = "lorem ipsum dolor sit amet " * 12
SEED_TURNS = 8


def agent_yaml(base_url: str) -> str:
    return f"""\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: bot
spec:
  model:
    provider: fake
    name: gpt-4o
    base_url: {base_url}
    max_input_tokens: 32000
    max_output_tokens: 1000
  session:
    context: {{max_history_tokens: 400, summaries: {{enabled: true, threshold: 0.6}}}}
"""


async def main(root: Path, base_url: str) -> None:
    agent_dir = root / ".duragent" / "agents" / "bot"
    agent_dir.mkdir(parents=True, exist_ok=True)
    (agent_dir / "agent.yaml").write_text(agent_yaml(base_url))
    catalog = load_catalog(root / ".duragent" / "agents")
    registry = SessionRegistry(
        SessionStore(root / ".duragent" / "sessions"), RegistrySettings(ask_timeout=60)
    )
    await registry.open()
    providers = ProviderPool(policy=RetryPolicy(initial_delay=0.01, max_delay=0.05))
    runner = TurnRunner(
        registry,
        agents=lambda: catalog,
        providers=providers,
        workspace_dir=root / ".duragent",
        world_memory_dir=root / ".duragent" / "memory" / "world",
        policy_file=root / ".duragent" / "policy.yaml",
    )
    sid = await registry.create(NewSession(agent="bot"))
    handle = registry.handle(sid)
    for i in range(SEED_TURNS):
        await handle.add_user_message(f"seed {i}: {FILLER}")
        await handle.add_assistant_response(f"seed answer {i}")
    print(f"SEEDED {sid}", flush=True)
    print("TURN", flush=True)
    await runner.run(sid, "go on")
    print("DONE", flush=True)
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2]))
