"""``media:`` in duragent.yaml: sizes people write, transcription, and what the server builds.

The section is read by ``load_workspace`` like every other; ``runtime.media.media_settings``
turns it into what the chat gateways use (limits in bytes, a transcriber with its key taken
from the environment variable the file names).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from duragent.config import LoadedWorkspace, load_workspace
from duragent.errors import ConfigError
from duragent.frontkit import MediaLimits
from duragent.llm.transcription import OpenAITranscriber
from duragent.runtime.media import media_settings

MIB = 1024 * 1024


def loaded(tmp_path: Path, text: str) -> LoadedWorkspace:
    (tmp_path / "duragent.yaml").write_text(text)
    return load_workspace(tmp_path / "duragent.yaml")


def test_without_a_media_section_the_limits_are_the_defaults_and_nothing_transcribes(
    tmp_path: Path,
) -> None:
    config = loaded(tmp_path, "workspace: .duragent\n").config.media
    settings = media_settings(config, {})
    assert settings.limits == MediaLimits(
        image=10 * MIB, voice=20 * MIB, audio=20 * MIB, video=20 * MIB, document=20 * MIB
    )
    assert settings.transcriber is None
    assert config.allow_private == ("127.0.0.0/8", "::1")


@pytest.mark.parametrize(
    ("written", "size"),
    [("5MB", 5 * MIB), ("512 KB", 512 * 1024), ("1.5mb", int(1.5 * MIB)), ("2MiB", 2 * MIB)],
)
def test_a_limit_is_bytes_or_a_size_with_a_unit(tmp_path: Path, written: str, size: int) -> None:
    config = loaded(tmp_path, f"media:\n  max_bytes:\n    document: {written}\n").config
    assert config.media.max_bytes.document == size
    assert media_settings(config.media, {}).limits.document == size
    assert config.media.max_bytes.image == 10 * MIB


@pytest.mark.parametrize("written", ["ten", "0", "-1", "5 parsecs", "3GB"])
def test_a_limit_that_is_no_size_is_refused_naming_the_field(tmp_path: Path, written: str) -> None:
    with pytest.raises(ConfigError) as failed:
        loaded(tmp_path, f"media:\n  max_bytes:\n    video: {written}\n")
    assert "media.max_bytes.video" in str(failed.value)


def test_an_openai_compatible_transcriber_gets_its_key_from_the_named_variable(
    tmp_path: Path,
) -> None:
    text = (
        "media:\n  transcription:\n    provider: openai\n"
        "    base_url: https://api.groq.com/openai/v1\n    model: whisper-large-v3-turbo\n"
        "    api_key_env: GROQ_API_KEY\n    language: de\n"
    )
    config = loaded(tmp_path, text).config.media
    transcriber = media_settings(config, {"GROQ_API_KEY": "gsk-secret"}).transcriber
    assert isinstance(transcriber, OpenAITranscriber)
    settings = transcriber.settings
    assert (settings.base_url, settings.model, settings.language) == (
        "https://api.groq.com/openai/v1",
        "whisper-large-v3-turbo",
        "de",
    )
    assert settings.api_key == "gsk-secret"
    assert "gsk-secret" not in repr(transcriber)


def test_the_key_variable_must_be_a_name_not_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as failed:
        loaded(tmp_path, "media:\n  transcription:\n    api_key_env: sk-abc-123\n")
    assert "media.transcription.api_key_env" in str(failed.value)


def test_a_local_transcriber_that_cannot_be_built_is_logged_and_voice_stays_untranscribed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    config = loaded(tmp_path, "media:\n  transcription:\n    provider: local\n").config.media
    with caplog.at_level(logging.ERROR):
        assert media_settings(config, {}).transcriber is None
    assert "faster-whisper" in caplog.text


def test_allow_private_entries_are_checked_when_the_file_loads(tmp_path: Path) -> None:
    config = loaded(tmp_path, "media:\n  allow_private: [10.0.0.0/8, 'files.lan:8080']\n")
    assert config.config.media.allow_private == ("10.0.0.0/8", "files.lan:8080")
    with pytest.raises(ConfigError) as failed:
        loaded(tmp_path, "media:\n  allow_private: ['not a host!']\n")
    assert "media.allow_private" in str(failed.value)
