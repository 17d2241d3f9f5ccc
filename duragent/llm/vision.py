"""Which models can see: ``spec.model.vision``, or a table of known vision models.

An image goes to the provider only for a model that can see it; any other model gets the
image's placeholder (``image_parts.image_placeholder``) and can open the file with its tools.
Sending an image to a text-only model is refused by most providers (a 400 that would fail
every later turn of the chat too, since the image stays in its history), so the default is
cautious: a model the table does not know cannot see. ``spec.model.vision`` overrides the
table either way (a new model, a local fine-tune, a proxy's alias).

The table (``VISION_MODELS``) matches the model name as the provider knows it, lowercased,
anywhere after a provider prefix (``openai/gpt-4o``, ``anthropic.claude-3-5-sonnet…``,
``llava:13b``); the first matching row decides, so the text-only exceptions of a family come
before the family. Rows and their sources: specs/202612051700.vision.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

__all__ = ["VISION_MODELS", "SeeingModel", "VisionRow", "can_see", "sees_by_name"]


class SeeingModel(Protocol):
    """What ``can_see`` reads of a model's settings (``agents.spec.ModelSpec`` is one)."""

    @property
    def name(self) -> str:
        """The model's name as its provider knows it."""
        ...

    @property
    def vision(self) -> bool | None:
        """``spec.model.vision``: True or False decides; None leaves it to the table."""
        ...


@dataclass(frozen=True, slots=True)
class VisionRow:
    """One row of the table: names matching ``pattern`` can see when ``sees``."""

    pattern: str
    sees: bool
    family: str


def _row(pattern: str, family: str, *, sees: bool = True) -> VisionRow:
    return VisionRow(pattern, sees, family)


VISION_MODELS: tuple[VisionRow, ...] = (
    # OpenAI: the text-only exceptions first, then the families that take images.
    _row(r"o1-(?:mini|preview)", "OpenAI o1-mini / o1-preview (text only)", sees=False),
    _row(r"o3-mini", "OpenAI o3-mini (text only)", sees=False),
    _row(r"gpt-4-turbo-preview", "OpenAI gpt-4-turbo-preview (text only)", sees=False),
    _row(
        r"gpt-4o(?:-mini)?-(?:audio|realtime|transcribe|tts|search)",
        "OpenAI gpt-4o audio, realtime and search variants (no image input)",
        sees=False,
    ),
    _row(r"gpt-4o|chatgpt-4o", "OpenAI GPT-4o, GPT-4o mini"),
    _row(r"gpt-4\.1|gpt-4\.5", "OpenAI GPT-4.1, GPT-4.5"),
    _row(r"gpt-4-turbo|gpt-4-(?:\d+-)?vision", "OpenAI GPT-4 Turbo (2024-04-09), GPT-4V"),
    _row(r"gpt-5", "OpenAI GPT-5 family"),
    _row(r"o1|o3|o4-mini|computer-use", "OpenAI o1, o3, o4-mini, computer-use"),
    # Anthropic: Claude 3 and later (claude-3-5-sonnet, claude-3.5-haiku, claude-sonnet-4…).
    _row(r"claude-(?:[3-9]|(?:opus|sonnet|haiku)-[4-9])", "Anthropic Claude 3, 4 and later"),
    # Google.
    _row(r"gemini-(?:1\.0-)?pro(?:-\d+)?$", "Google Gemini 1.0 Pro (text only)", sees=False),
    _row(r"gemini", "Google Gemini 1.5 and later, gemini-pro-vision"),
    _row(r"gemma-?3[:-]1b", "Google Gemma 3 1B (text only)", sees=False),
    _row(r"gemma-?3(?!n)", "Google Gemma 3 (4B and larger)"),
    # Meta.
    _row(r"llama-?3\.2-?(?:\d+b-)?vision", "Meta Llama 3.2 Vision"),
    _row(r"llama-?4", "Meta Llama 4 (Scout, Maverick)"),
    # Mistral.
    _row(r"pixtral", "Mistral Pixtral"),
    _row(r"mistral-small-?3\.[12]|mistral-medium-?3", "Mistral Small 3.1/3.2, Medium 3"),
    # Open vision-language models, as Ollama, vLLM and Hugging Face name them.
    _row(r"(?:bak)?llava", "LLaVA, BakLLaVA, llava-llama3, llava-phi3"),
    _row(r"qwen[\d.]*-?vl|qvq", "Qwen-VL, Qwen2-VL, Qwen2.5-VL, Qwen3-VL, QVQ"),
    _row(r"minicpm-?v|moondream|internvl|deepseek-vl|glm-4v|cogvlm", "other open VLMs"),
    _row(r"phi-?3\.5-vision|phi-?4-multimodal", "Microsoft Phi-3.5-vision, Phi-4-multimodal"),
    _row(r"grok-(?:\d+-)?vision|grok-4", "xAI Grok vision, Grok 4"),
    # A name that says so: "…-vision", "…-vl-…" (granite3.2-vision, nvlm-d-72b-vl).
    _row(r"[^/:]*?[-_.](?:vision|vl)(?=$|[-_.:])", "a name marked vision or VL"),
)

_COMPILED = tuple((re.compile(rf"(?:^|[/.:])(?:{row.pattern})"), row.sees) for row in VISION_MODELS)


def sees_by_name(name: str) -> bool:
    """Whether the table says a model called ``name`` can see (unknown: no)."""
    lowered = name.strip().lower()
    for pattern, sees in _COMPILED:
        if pattern.search(lowered):
            return sees
    return False


def can_see(model: SeeingModel) -> bool:
    """Whether images go to this model: ``spec.model.vision`` when set, else the table."""
    if model.vision is not None:
        return model.vision
    return sees_by_name(model.name)
