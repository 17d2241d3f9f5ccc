from __future__ import annotations

import pytest

from duragent.context.window import DEFAULT_WINDOW, context_window, output_reserve


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("claude-sonnet-4-5", 200_000),
        ("gpt-5-mini", 400_000),
        ("gpt-4.1", 1_000_000),
        ("gpt-4o-mini", 128_000),
        ("openai/gpt-4-turbo", 128_000),
        ("gemini-2.5-pro", 1_000_000),
        ("grok-4", 2_000_000),
        ("grok-3", 131_072),
        ("deepseek-chat-v3-0324", 163_840),
        ("deepseek-r1", 128_000),
        ("qwen3-coder", 131_072),
        ("Qwen2.5-72B", 128_000),
        ("llama-4-scout", 327_680),
        ("llama3.2", 128_000),
        ("mistral-large-latest", 262_144),
        ("mixtral-8x7b", 128_000),
        ("smollm2-135m", 8_192),
        ("some-unknown-model", DEFAULT_WINDOW),
    ],
)
def test_the_window_defaults_from_the_model_name(model: str, window: int) -> None:
    assert context_window(model) == window


def test_an_explicit_max_input_tokens_wins_over_the_table() -> None:
    assert context_window("claude-sonnet-4-5", 8192) == 8192


def test_the_output_reserve_is_4096_unless_configured() -> None:
    assert output_reserve(None) == 4096
    assert output_reserve(1000) == 1000


@pytest.mark.parametrize(
    ("window", "reserve"),
    [(1024, 256), (2048, 512), (4096, 1024), (8192, 2048), (16_384, 4096), (200_000, 4096)],
)
def test_the_default_reserve_is_a_quarter_of_the_window_between_256_and_4096(
    window: int, reserve: int
) -> None:
    assert output_reserve(None, window) == reserve


def test_an_explicit_max_output_tokens_is_honoured_whatever_the_window() -> None:
    assert output_reserve(3000, 4096) == 3000
