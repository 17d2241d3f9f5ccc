"""``media:`` in ``duragent.yaml``: photos, voice notes and files people send the bots.

```yaml
media:
  max_bytes:                 # the largest file kept, per kind (bytes, or 10MB, 512KB…)
    image: 10MB              # defaults: image 10MB; voice, audio, video, document 20MB
  transcription:             # voice notes and audio become text (unset: kept untranscribed)
    provider: openai         # any OpenAI-compatible /audio/transcriptions (OpenAI, Groq…)
    base_url: https://api.groq.com/openai/v1
    model: whisper-large-v3-turbo
    api_key_env: GROQ_API_KEY   # the variable holding the key (default OPENAI_API_KEY)
  allow_private: [127.0.0.0/8, "::1"]   # non-public hosts gateway plugins' links may use
```

``provider: local`` runs faster-whisper in the server (``pip install 'duragent[voice]'``);
``model`` is then a size name (``base``, ``small``…) or a folder holding a CTranslate2
conversion of Whisper. 1 MB is 1,048,576 bytes, as Telegram counts its 20 MB limit for bots.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, field_validator

from duragent.config.section import Section
from duragent.core.net_rules import parse_allow_rule

__all__ = ["MediaConfig", "MediaLimitsConfig", "TranscriptionConfig", "parse_byte_size"]

_UNITS = {"": 1, "b": 1, "kb": 1024, "k": 1024, "mb": 1024**2, "m": 1024**2, "gb": 1024**3}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*)")
_MIB = 1024 * 1024
_MAX = 2 * 1024**3
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_byte_size(value: object) -> object:
    """``10MB``, ``512 KB``, ``1.5mb`` or a number of bytes, as bytes (else left to fail)."""
    if isinstance(value, str):
        found = _SIZE.fullmatch(value.strip().lower().replace("ib", "b"))
        if found is None or found[2] not in _UNITS:
            raise ValueError("must be a number of bytes or a size such as 10MB, 512KB or 1GB")
        return int(float(found[1]) * _UNITS[found[2]])
    return value


ByteSize = Annotated[int, BeforeValidator(parse_byte_size), Field(gt=0, le=_MAX)]


class MediaLimitsConfig(Section):
    """``media.max_bytes``: the largest file kept of each kind."""

    image: ByteSize = 10 * _MIB
    voice: ByteSize = 20 * _MIB
    audio: ByteSize = 20 * _MIB
    video: ByteSize = 20 * _MIB
    document: ByteSize = 20 * _MIB


class TranscriptionConfig(Section):
    """``media.transcription``: how voice notes and audio become text."""

    provider: Literal["openai", "local"] = "openai"
    base_url: str = "https://api.openai.com/v1"
    """``openai``: the API root; ``/audio/transcriptions`` is appended."""
    model: str = ""
    """``openai``: the endpoint's model name (default ``whisper-1``); ``local``: a size name
    faster-whisper downloads (default ``base``) or a folder with a CTranslate2 conversion."""
    api_key_env: str = "OPENAI_API_KEY"
    """``openai``: the environment variable holding the API key (unset: no key is sent)."""
    language: str | None = None
    """The language spoken (ISO 639-1, ``en``), when known: else detected per note."""

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str) -> str:
        if not _ENV_NAME.fullmatch(value):
            raise ValueError(
                "must be the name of an environment variable (letters, digits and _), not "
                "the key itself"
            )
        return value


class MediaConfig(Section):
    """``media:``: limits, transcription and where gateways' file links may point."""

    max_bytes: MediaLimitsConfig = MediaLimitsConfig()
    transcription: TranscriptionConfig | None = None
    allow_private: tuple[str, ...] = ("127.0.0.0/8", "::1")
    """Non-public hosts, addresses or networks (``10.0.0.0/8``, ``files.lan:8080``) an
    external gateway's file links may point at; loopback by default (a plugin on this machine
    serving its own files)."""

    @field_validator("allow_private")
    @classmethod
    def _rules(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            parse_allow_rule(entry)  # raises ValueError naming the entry and the forms
        return value
