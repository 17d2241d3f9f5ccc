"""The images of a chat completion's new message, decoded and checked as the API's uploads.

``wire`` reads an ``image_url`` part's ``data:`` URL (its type and base64 text); here it is
decoded (off the event loop) and checked by the same rules as an attachment of
``POST /api/v1/sessions/{id}/messages`` (``api.uploads``: an image's size, the count and
total of one message). A refusal is OpenAI's error with ``param`` naming the part's URL.
The route keeps the result in the session before it submits the message.
"""

from __future__ import annotations

from collections.abc import Sequence

from duragent.core.attachments import AttachmentKind
from duragent.gateways.http.api.uploads import (
    Upload,
    check_uploads,
    decode_base64,
    decoded_size,
    size_problem,
    upload,
)
from duragent.gateways.http.openai.wire import ImagePart, OpenAIError
from duragent.gateways.http.server.media_limits import UploadLimits
from duragent.gateways.http.server.problem import ProblemError

__all__ = ["image_uploads"]

_CODES = {400: "invalid_value", 413: "request_too_large"}


async def image_uploads(
    images: Sequence[ImagePart], where: str, limits: UploadLimits
) -> list[Upload]:
    """The images as uploads (``where``: the message's content, for a limit of them all).

    An image over the size of one is refused before it is decoded.
    """
    try:
        found: list[Upload] = []
        for image in images:
            field = f"{image.field}.image_url.url"
            size = decoded_size(image.data)
            if size > limits.of_kind(AttachmentKind.IMAGE):
                raise size_problem(field, size, AttachmentKind.IMAGE, None, limits)
            data = await decode_base64(image.data, field)
            found.append(
                upload(
                    data, field=field, mime=image.mime, name=None, mime_field=field, limits=limits
                )
            )
        check_uploads(found, where, limits)
        return found
    except ProblemError as exc:
        param = exc.extra.get("field")
        raise OpenAIError(
            exc.status,
            exc.detail,
            param=param if isinstance(param, str) else None,
            code=_CODES.get(exc.status),
        ) from None
