"""``multipart/form-data`` (RFC 7578), read from a body already in memory.

A message with files arrives as a form (``curl -F content=hi -F file=@photo.jpg``). Starlette
parses forms only with the ``python-multipart`` package, which duragent does not depend on;
the body is bounded (``media_limits``) and already read whole, so splitting it at its
boundary is all the parsing there is, and the bytes of a part come out exactly as sent. Each
part's headers (``Content-Disposition`` with its ``name`` and ``filename``, RFC 2231
``filename*`` included, and ``Content-Type``) are read by the standard library's header
parser. Anything malformed is a ``ValueError`` saying what: the caller answers 400.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.message import EmailMessage
from email.parser import HeaderParser
from email.policy import HTTP

__all__ = ["FormPart", "parse_form"]

MAX_PARTS = 64
"""More parts than any message needs (its text and ten files): a form of thousands is refused."""
MAX_PART_HEADER_BYTES = 16 * 1024


@dataclass(frozen=True, slots=True)
class FormPart:
    """One field of a form: its name, and for a file its file name and type."""

    name: str
    data: bytes
    filename: str | None = None
    content_type: str | None = None


def _boundary(content_type: str) -> bytes:
    headers = _headers(f"Content-Type: {content_type}")
    boundary = headers.get_param("boundary")
    if not isinstance(boundary, str) or not 1 <= len(boundary) <= 70:
        raise ValueError("the Content-Type names no boundary (1 to 70 characters)")
    try:
        return boundary.encode("ascii")
    except UnicodeEncodeError:
        raise ValueError("the form's boundary is not ASCII") from None


def _headers(text: str) -> EmailMessage:
    parsed = HeaderParser(policy=HTTP).parsestr(text + "\r\n\r\n")
    assert isinstance(parsed, EmailMessage)  # the HTTP policy's message factory
    return parsed


def _part(chunk: bytes, index: int) -> FormPart:
    """A part from what follows its boundary line's ``--boundary``."""
    line_end = chunk.find(b"\r\n")
    if line_end < 0 or chunk[:line_end].strip(b" \t"):
        raise ValueError(f"part {index}: its boundary line has something after the boundary")
    rest = chunk[line_end + 2 :]
    if rest.startswith(b"\r\n"):
        head, data = b"", rest[2:]
    else:
        head, found, data = rest.partition(b"\r\n\r\n")
        if not found:
            raise ValueError(f"part {index}: its headers do not end with a blank line")
    if len(head) > MAX_PART_HEADER_BYTES:
        raise ValueError(f"part {index}: its headers are over {MAX_PART_HEADER_BYTES} bytes")
    headers = _headers(head.decode("utf-8", "replace"))
    disposition = headers.get("content-disposition")
    if disposition is None or disposition.content_disposition != "form-data":
        raise ValueError(f"part {index} is not form-data (Content-Disposition: form-data; name=…)")
    name = disposition.params.get("name")
    if not isinstance(name, str):
        raise ValueError(f"part {index} has no name (Content-Disposition: form-data; name=…)")
    filename = disposition.params.get("filename")
    content_type = headers.get("content-type")
    return FormPart(
        name=name,
        data=data,
        filename=filename if isinstance(filename, str) else None,
        content_type=str(content_type) if content_type is not None else None,
    )


def parse_form(body: bytes, content_type: str) -> list[FormPart]:
    """The parts of a ``multipart/form-data`` body, in order (``ValueError`` when malformed).

    The line break before each boundary belongs to the boundary (RFC 2046), so a part's
    bytes end where its next boundary line starts.
    """
    delimiter = b"\r\n--" + _boundary(content_type)
    chunks = (b"\r\n" + body).split(delimiter)
    if len(chunks) < 2:
        raise ValueError("the body has no part: the boundary it names never occurs")
    if len(chunks) - 2 > MAX_PARTS:
        raise ValueError(f"the form has more than {MAX_PARTS} parts")
    parts: list[FormPart] = []
    for index, chunk in enumerate(chunks[1:]):
        if chunk.startswith(b"--"):  # the closing boundary; the rest is the epilogue
            return parts
        parts.append(_part(chunk, index))
    raise ValueError("the body ends before the form's closing boundary (--boundary--)")
