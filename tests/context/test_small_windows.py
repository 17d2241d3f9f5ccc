"""Small context windows work by default: the reply reserve scales with the window.

Issue 14 item 4: ``max_input_tokens: 4096`` without ``max_output_tokens`` used to leave a limit
of 0 (a fixed 4,096-token reserve), so every turn failed.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from duragent.testing import Reply
from tests.turns import turn_fixtures
from tests.turns.turn_fixtures import harness


def small_window_yaml(model: str, max_input_tokens: int | None) -> str:
    window = f"\n    max_input_tokens: {max_input_tokens}" if max_input_tokens else ""
    return textwrap.dedent(
        """\
        apiVersion: duragent/v1alpha1
        kind: Agent
        metadata:
          name: bot
        spec:
          model:
            provider: fake
            name: {model}
            base_url: {{base_url}}{window}
        """
    ).format(model=model, window=window)


@pytest.mark.parametrize(
    ("model", "max_input_tokens"),
    [("gpt-4o", 4096), ("HuggingFaceTB/SmolLM2-360M-Instruct", None)],
)
async def test_a_small_window_without_max_output_tokens_answers_a_real_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str, max_input_tokens: int | None
) -> None:
    template = small_window_yaml(model, max_input_tokens)
    monkeypatch.setattr(
        turn_fixtures, "agent_yaml", lambda base_url, **_: template.format(base_url=base_url)
    )
    async with harness(tmp_path) as h:
        h.server.enqueue(Reply(text="small but fine"))
        sid = await h.runner.start_session("bot")
        result = await h.runner.run(sid, "hi", sender_id="u1")
        body = h.server.requests[-1].json
    assert result.status == "complete", result.content
    assert result.content == "small but fine"
    assert body["messages"][-1] == {"role": "user", "content": "hi"}
    # the reserve sent to the model is what the budget held back, and it fits the window
    reserve = body.get("max_tokens") or body.get("max_completion_tokens")
    assert reserve is not None
    assert 0 < reserve < (max_input_tokens or 8192) // 2
