"""The body and attachment limits of a message's routes, from the workspace's media.max_bytes."""

from __future__ import annotations

import base64
from pathlib import Path

from duragent.config import load_workspace
from duragent.core.attachments import AttachmentKind
from duragent.gateways.http.server.media_limits import (
    DEFAULT_LIMITS,
    MAX_ATTACHMENTS_BYTES,
    MAX_BODY_BYTES,
    UploadLimits,
    body_limit,
)
from tests.gateways.http.api_fixtures import served

MIB = 1024 * 1024


def test_only_a_messages_routes_take_more_than_2_mib() -> None:
    assert DEFAULT_LIMITS.body == (MAX_ATTACHMENTS_BYTES + 2) // 3 * 4 + MAX_BODY_BYTES
    for path in (
        "/api/v1/sessions/s1/messages",
        "/api/v1/sessions/s1/stream",
        "/v1/chat/completions",
    ):
        assert body_limit({"path": path}) == DEFAULT_LIMITS.body, path
    for path in ("/api/v1/sessions", "/api/v1/sessions/s1/approve", "/api/v1/schedules"):
        assert body_limit({"path": path}) == MAX_BODY_BYTES, path


def test_the_workspaces_media_max_bytes_sets_each_kind_and_may_raise_the_body_limit(
    tmp_path: Path,
) -> None:
    (tmp_path / "duragent.yaml").write_text(
        "media:\n  max_bytes:\n    image: 1MB\n    video: 100MB\n", encoding="utf-8"
    )
    limits = UploadLimits.of(load_workspace(tmp_path).config)
    assert limits.of_kind(AttachmentKind.IMAGE) == MIB
    assert limits.of_kind(AttachmentKind.VIDEO) == 100 * MIB
    assert limits.of_kind(AttachmentKind.DOCUMENT) == 20 * MIB
    assert limits.total == 100 * MIB  # a video may be that big, alone
    assert limits.body > 4 * 100 * MIB // 3


async def test_a_served_workspaces_limits_apply_to_uploads(tmp_path: Path) -> None:
    media = "media:\n  max_bytes:\n    image: 1KB\n"
    async with served(tmp_path, server_yaml=media) as s:
        sid = (await s.client.post("/api/v1/sessions", json={"agent": "bot"})).json()["session_id"]
        photo = {"mime": "image/png", "data": base64.b64encode(b"x" * 2048).decode()}
        refused = await s.client.post(
            f"/api/v1/sessions/{sid}/messages", json={"content": "x", "attachments": [photo]}
        )
    assert refused.status_code == 413
    assert "over the limit for its kind (image: 1.0 KiB)" in refused.json()["detail"]
