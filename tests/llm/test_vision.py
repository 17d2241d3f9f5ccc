"""Which models can see: the table of known vision models, and the setting that overrides it."""

from __future__ import annotations

import pytest

from duragent.agents.spec import ModelSpec
from duragent.llm.vision import VISION_MODELS, can_see, sees_by_name

SEEING = [
    "gpt-4o",
    "gpt-4o-mini",
    "gpt-4o-2024-08-06",
    "chatgpt-4o-latest",
    "gpt-4.1",
    "gpt-4.1-nano",
    "gpt-4.5-preview",
    "gpt-4-turbo",
    "gpt-4-turbo-2024-04-09",
    "gpt-4-1106-vision-preview",
    "gpt-5",
    "gpt-5-mini",
    "gpt-5.1",
    "o1",
    "o1-2024-12-17",
    "o3",
    "o3-pro",
    "o4-mini",
    "openai/gpt-4o",
    "claude-3-opus-20240229",
    "claude-3-5-sonnet-20241022",
    "claude-3-7-sonnet-latest",
    "claude-sonnet-4-20250514",
    "claude-opus-4-1",
    "claude-haiku-4-5",
    "anthropic/claude-3.5-sonnet",
    "anthropic.claude-3-haiku-20240307-v1:0",
    "gemini-1.5-pro",
    "gemini-2.0-flash",
    "google/gemini-2.5-pro",
    "gemini-pro-vision",
    "gemma3",
    "gemma3:4b",
    "google/gemma-3-27b-it",
    "llava",
    "llava:13b",
    "bakllava",
    "llava-llama3",
    "qwen2.5vl:7b",
    "Qwen/Qwen2.5-VL-7B-Instruct",
    "qwen-vl-max",
    "qwen2-vl-72b-instruct",
    "llama3.2-vision",
    "llama3.2-vision:11b",
    "meta-llama/Llama-3.2-11B-Vision-Instruct",
    "llama4:scout",
    "pixtral-12b-2409",
    "mistral-small3.1",
    "minicpm-v",
    "moondream",
    "granite3.2-vision",
    "grok-2-vision-1212",
]

BLIND = [
    "gpt-3.5-turbo",
    "gpt-4",
    "gpt-4-0613",
    "gpt-4-turbo-preview",
    "gpt-4o-audio-preview",
    "gpt-4o-realtime-preview",
    "o1-mini",
    "o1-preview",
    "o3-mini",
    "claude-2.1",
    "claude-instant-1.2",
    "gemini-pro",
    "gemini-1.0-pro",
    "gemma3:1b",
    "gemma2:9b",
    "llama3.1:8b",
    "llama3.2",
    "mistral",
    "mixtral-8x7b",
    "qwen2.5:7b",
    "qwen3:0.6b",
    "deepseek-r1",
    "phi3",
    "smollm2:135m",
    "duragent-offline",
    "echo",
    "some-new-model",
]


@pytest.mark.parametrize("name", SEEING)
def test_a_known_vision_model_can_see(name: str) -> None:
    assert sees_by_name(name)


@pytest.mark.parametrize("name", BLIND)
def test_a_text_model_or_an_unknown_name_cannot_see(name: str) -> None:
    assert not sees_by_name(name)


def test_the_name_is_matched_whatever_its_case_and_spaces() -> None:
    assert sees_by_name("  GPT-4o  ")
    assert sees_by_name("Claude-3-5-Sonnet")


def test_every_row_of_the_table_says_which_family_it_is() -> None:
    assert all(row.family for row in VISION_MODELS)
    assert any(not row.sees for row in VISION_MODELS), "the text-only exceptions are rows too"


def model(name: str, vision: bool | None = None) -> ModelSpec:
    return ModelSpec(provider="openai", name=name, vision=vision)


def test_without_the_setting_the_table_decides() -> None:
    assert can_see(model("gpt-4o"))
    assert not can_see(model("gpt-3.5-turbo"))


def test_the_setting_wins_over_the_table_both_ways() -> None:
    assert can_see(model("my-finetune", vision=True))
    assert not can_see(model("gpt-4o", vision=False))
