"""``media:`` of ``duragent.yaml`` as the chat gateways take files in (``MediaSettings``).

Built once per ``serve`` and handed to every chat gateway: the per-kind limits, and the
transcriber (``llm.transcription``) when ``media.transcription`` is set. Its API key is read
from the environment variable ``api_key_env`` names, here, so the key is never in the file.
A transcriber that cannot be built (``local`` without faster-whisper) is an error in the log
and voice notes stay untranscribed: the chat gateways still serve.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from duragent.config.media import MediaConfig
from duragent.errors import ConfigError
from duragent.frontkit import MediaLimits, MediaSettings
from duragent.llm.transcription import Transcriber, TranscriptionSettings, transcriber_for

__all__ = ["media_settings"]

log = logging.getLogger(__name__)


def media_settings(config: MediaConfig, env: Mapping[str, str]) -> MediaSettings:
    """The limits and transcriber ``config`` (``media:``) asks for."""
    limits = config.max_bytes
    return MediaSettings(
        limits=MediaLimits(
            image=limits.image,
            voice=limits.voice,
            audio=limits.audio,
            video=limits.video,
            document=limits.document,
        ),
        transcriber=_transcriber(config, env),
    )


def _transcriber(config: MediaConfig, env: Mapping[str, str]) -> Transcriber | None:
    wanted = config.transcription
    if wanted is None:
        return None
    key = env.get(wanted.api_key_env) or None
    if wanted.provider == "openai" and key is None:
        log.info(
            "media.transcription: %s is not set; no API key is sent to %s",
            wanted.api_key_env,
            wanted.base_url,
        )
    try:
        return transcriber_for(
            TranscriptionSettings(
                provider=wanted.provider,
                base_url=wanted.base_url,
                model=wanted.model,
                api_key=key,
                language=wanted.language,
            )
        )
    except (ConfigError, ValueError) as exc:
        log.error("media.transcription: %s; voice notes are kept untranscribed", exc)
        return None
