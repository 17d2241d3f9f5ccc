"""Reading a response body with a cap on the bytes DECODED, at every content-encoding layer.

httpx decodes ``Content-Encoding`` itself, handing each network chunk to zlib in one call: a
1.8 KB ``gzip, gzip`` body holding 1 GB of zeros became one 1 GB ``bytes`` object inside a
single call on the event loop (2.2 GB of memory, every session frozen for seconds), long
before any cap on the decoded body could look at it. Here the raw bytes are read as they
arrive (``aiter_raw``) and decoded layer by layer with ``max_length``, so no call yields more
than :data:`STEP` bytes, and the bytes each layer produces are counted as they appear: when
any layer (the raw body included) passes ``max_body``, reading stops. Memory is bounded by a
few steps per layer and the work per fetch by ``layers x max_body``, so the loop never stalls.

Only encodings decoded here are asked for (``Accept-Encoding: gzip, deflate``); a response
using another compression, or stacking more than :data:`MAX_LAYERS`, is refused with its name;
junk values that name no compression are ignored like ``identity``.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import httpx

__all__ = ["ACCEPT_ENCODING", "MAX_LAYERS", "STEP", "Body", "BodyError", "read_body"]

ACCEPT_ENCODING = "gzip, deflate"
MAX_LAYERS = 3
"""Content encodings stacked on one body; real servers use one."""
STEP = 64 * 1024
"""Bytes one decompression call may produce."""


_UNSUPPORTED = frozenset(
    {"br", "zstd", "compress", "x-compress", "bzip2", "x-bzip2", "xz", "lzma", "dcb", "dcz"}
    | {"exi", "pack200-gzip", "aes128gcm"}
)
"""Compressions we do not decode; other unknown values ("none", "utf-8") are ignored, as
httpx and browsers do."""


class BodyError(Exception):
    """The body cannot be decoded (unknown encoding, too many layers, corrupt data)."""


class _Full(Exception):
    """A layer produced more than the cap; the body read so far is its start."""


@dataclass(frozen=True, slots=True)
class Body:
    """The start of a decoded body and whether anything after it was left unread."""

    data: bytes
    cut: bool


class _Layer:
    """One content-encoding layer decoded in steps of at most :data:`STEP` bytes."""

    def __init__(self, encoding: str, cap: int) -> None:
        self.encoding = encoding
        self.cap = cap
        self.produced = 0
        self._first = True
        if encoding == "gzip":
            self._z = zlib.decompressobj(zlib.MAX_WBITS | 16)
        else:  # deflate: zlib-wrapped as the RFC says, raw deflate as many servers send
            self._z = zlib.decompressobj()

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of ``data``; raises :class:`_Full` past the cap."""
        if self._z.eof:
            return  # trailing bytes after the stream's end are ignored, as httpx does
        try:
            out = self._z.decompress(data, STEP)
        except zlib.error as exc:
            if not (self._first and self.encoding == "deflate"):
                raise BodyError(f"corrupt {self.encoding} data: {exc}") from exc
            self._z = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._z.decompress(data, STEP)
        self._first = False
        while True:
            if out:
                self.produced += len(out)
                if self.produced > self.cap:
                    raise _Full
                yield out
            tail = self._z.unconsumed_tail
            if not tail or self._z.eof:
                return
            try:
                out = self._z.decompress(tail, STEP)
            except zlib.error as exc:
                raise BodyError(f"corrupt {self.encoding} data: {exc}") from exc


def _layers(header: str, cap: int) -> list[_Layer]:
    """Decoders for ``Content-Encoding: header``, in the order to apply them (last first)."""
    names = [name.strip().lower() for name in header.split(",") if name.strip()]
    unsupported = sorted({name for name in names if name in _UNSUPPORTED})
    if unsupported:
        raise BodyError(
            f"it uses Content-Encoding {', '.join(unsupported)}, which is not supported"
        )
    names = [name for name in names if name in ("gzip", "deflate", "x-gzip")]
    if len(names) > MAX_LAYERS:
        raise BodyError(
            f"it stacks {len(names)} content encodings ({header}); at most {MAX_LAYERS} are read"
        )
    return [_Layer("gzip" if n == "x-gzip" else n, cap) for n in reversed(names)]


def _through(layers: Sequence[_Layer], data: bytes) -> Iterator[bytes]:
    if not layers:
        yield data
        return
    for piece in layers[0].feed(data):
        yield from _through(layers[1:], piece)


async def read_body(response: httpx.Response, max_body: int) -> Body:
    """At most ``max_body`` decoded bytes of ``response``'s body, never more held or made.

    Raises:
        BodyError: an encoding that is not supported, too many layers, or corrupt data.
    """
    layers = _layers(response.headers.get("content-encoding", ""), max_body)
    body = bytearray()
    raw = 0
    try:
        async for chunk in response.aiter_raw(STEP):
            raw += len(chunk)
            if raw > max_body and layers:  # compressed data larger than the decoded cap
                raise _Full
            for piece in _through(layers, chunk):
                room = max_body - len(body)
                body.extend(piece[:room])
                if len(piece) > room:
                    raise _Full
    except _Full:
        return Body(bytes(body), cut=True)
    return Body(bytes(body), cut=False)
