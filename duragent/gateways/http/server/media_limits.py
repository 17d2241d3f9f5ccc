"""How much a message may carry over HTTP: attachments per kind, per message, and the body.

A message with attachments (``POST …/messages`` and ``…/stream``, JSON base64 parts or
``multipart/form-data``; ``/v1/chat/completions`` with ``image_url`` data parts) may be far
larger than any other request, so those three routes get a body limit of their own
(:attr:`UploadLimits.body`): the largest message's attachments written as base64 (4 bytes
for 3), plus the ordinary 2 MiB for the text and the JSON or multipart framing. Every other
route keeps the 2 MiB. The limits are checked before anything is kept: a refused upload
leaves nothing behind.

The size of each kind is the workspace's ``media.max_bytes`` (the same limits the chat
gateways apply; defaults: an image 10 MiB, a voice note, audio, video or document 20 MiB,
Telegram's limit for a bot). A message carries at most :data:`MAX_ATTACHMENTS` of them,
:data:`MAX_ATTACHMENTS_BYTES` together (or its largest kind's size, when configured larger).
``build_app`` puts the workspace's limits on ``app.state``; :func:`upload_limits` reads them
for a request (the defaults where there is no app: a unit test's request).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from duragent.config import WorkspaceConfig
from duragent.core.attachments import AttachmentKind

__all__ = [
    "DEFAULT_LIMITS",
    "MAX_ATTACHMENTS",
    "MAX_ATTACHMENTS_BYTES",
    "MAX_BODY_BYTES",
    "UploadLimits",
    "body_limit",
    "is_upload_path",
    "takes_form_uploads",
    "upload_limits",
]

MAX_BODY_BYTES = 2 * 1024 * 1024
"""Every request body but a message's (the JSON of a session, a schedule, a decision…)."""

_MIB = 1024 * 1024
_KIND_DEFAULTS: Mapping[AttachmentKind, int] = {
    AttachmentKind.IMAGE: 10 * _MIB,
    AttachmentKind.VOICE: 20 * _MIB,
    AttachmentKind.AUDIO: 20 * _MIB,
    AttachmentKind.VIDEO: 20 * _MIB,
    AttachmentKind.DOCUMENT: 20 * _MIB,
}
MAX_ATTACHMENTS = 10
"""Attachments one message may carry."""
MAX_ATTACHMENTS_BYTES = 25 * _MIB
"""All of one message's attachments together, in bytes (unless a kind may be larger)."""

_FORM_PATH = re.compile(r"/api/v1/sessions/[^/]+/(?:messages|stream)")
_UPLOAD_PATH = re.compile(rf"{_FORM_PATH.pattern}|/v1/chat/completions")


def _base64_length(size: int) -> int:
    return (size + 2) // 3 * 4


@dataclass(frozen=True, slots=True)
class UploadLimits:
    """The sizes a message's attachments may have (see the module docstring)."""

    kinds: Mapping[AttachmentKind, int] = field(default_factory=lambda: dict(_KIND_DEFAULTS))
    """The largest attachment of each kind, in bytes (decoded: what is stored)."""
    count: int = MAX_ATTACHMENTS
    total: int = MAX_ATTACHMENTS_BYTES

    @classmethod
    def of(cls, config: WorkspaceConfig) -> UploadLimits:
        """The workspace's limits (``media.max_bytes``)."""
        sizes = config.media.max_bytes
        kinds = {kind: int(getattr(sizes, kind.value)) for kind in AttachmentKind}
        return cls(kinds, total=max(MAX_ATTACHMENTS_BYTES, *kinds.values()))

    def of_kind(self, kind: AttachmentKind) -> int:
        """The largest attachment of ``kind``."""
        return self.kinds[kind]

    @property
    def body(self) -> int:
        """The body limit of a message's routes: the attachments as base64, and the rest."""
        return _base64_length(self.total) + MAX_BODY_BYTES

    def body_limit(self, path: str) -> int:
        """The largest body a request to ``path`` may have (413 beyond)."""
        return self.body if is_upload_path(path) else MAX_BODY_BYTES


DEFAULT_LIMITS = UploadLimits()
"""The limits without a workspace's ``media.max_bytes``."""


def upload_limits(scope: Mapping[str, Any]) -> UploadLimits:
    """The limits of the app serving the request ``scope`` (``app.state.upload_limits``)."""
    app = scope.get("app")
    found = getattr(getattr(app, "state", None), "upload_limits", None)
    return found if isinstance(found, UploadLimits) else DEFAULT_LIMITS


def is_upload_path(path: str) -> bool:
    """Whether ``path`` is a route that takes a message, which may carry attachments."""
    return _UPLOAD_PATH.fullmatch(path) is not None


def takes_form_uploads(path: str) -> bool:
    """Whether ``path`` takes ``multipart/form-data`` too (a message with files; not OpenAI's)."""
    return _FORM_PATH.fullmatch(path) is not None


def body_limit(scope: Mapping[str, Any]) -> int:
    """The largest body the request ``scope`` may have (413 beyond)."""
    return upload_limits(scope).body_limit(str(scope.get("path", "")))
