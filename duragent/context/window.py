"""The effective context window of a model, and what is reserved for the reply.

``spec.model.max_input_tokens`` wins; otherwise the first entry of ``DEFAULT_WINDOWS`` whose
marker occurs in the model name (case-insensitive) gives the window, as in the reference.
The offline model and SmolLM2-class local models get small windows so budgeting is exercised.

The reply reserve is ``max_output_tokens`` when set (always honoured), else a quarter of the
window between 256 and 4096 tokens: a fixed 4096 (the reference's default) would swallow a
4K window whole and most of an 8K one, leaving nothing for the conversation. From a 16K window
up the default is the reference's 4096, so large models behave as before.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_WINDOW",
    "DEFAULT_WINDOWS",
    "MIN_DEFAULT_OUTPUT_TOKENS",
    "context_window",
    "output_reserve",
]

DEFAULT_WINDOW = 128_000
DEFAULT_MAX_OUTPUT_TOKENS = 4096
MIN_DEFAULT_OUTPUT_TOKENS = 256

DEFAULT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("duragent-offline", 32_768),
    ("smollm", 8_192),
    ("claude", 200_000),
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_000_000),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 128_000),
    ("gemini", 1_000_000),
    ("grok-4", 2_000_000),
    ("grok", 131_072),
    ("deepseek-v3", 163_840),
    ("deepseek-chat-v3", 163_840),
    ("deepseek", 128_000),
    ("qwen3", 131_072),
    ("qwen", 128_000),
    ("llama-4", 327_680),
    ("llama", 128_000),
    ("mistral-large", 262_144),
    ("mistral", 128_000),
    ("mixtral", 128_000),
)


def context_window(model_name: str, max_input_tokens: int | None = None) -> int:
    """Tokens the model accepts in one request."""
    if max_input_tokens:
        return max_input_tokens
    name = model_name.lower()
    for marker, window in DEFAULT_WINDOWS:
        if marker in name:
            return window
    return DEFAULT_WINDOW


def output_reserve(max_output_tokens: int | None, window: int = DEFAULT_WINDOW) -> int:
    """Tokens kept free for the reply: as configured, else ``window / 4`` in [256, 4096]."""
    if max_output_tokens:
        return max_output_tokens
    return min(DEFAULT_MAX_OUTPUT_TOKENS, max(MIN_DEFAULT_OUTPUT_TOKENS, window // 4))
