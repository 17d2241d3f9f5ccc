"""tiktoken encodings that work with no network: loaded from files shipped in the package.

tiktoken's own constructors (``tiktoken_ext.openai_public.o200k_base`` …) define the regex and
special tokens of each encoding and call ``load_tiktoken_bpe(url, expected_hash)``, which
downloads. We call those same constructors with a loader that serves the URL from the
vendored ``.tiktoken.gz`` file and verifies tiktoken's pinned SHA-256, so the encoding is
byte-for-byte the official one and nothing is copied or patched globally.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tiktoken
import tiktoken_ext.openai_public as openai_public  # type: ignore[import-untyped]

from duragent.errors import TokenizerError

__all__ = ["OFFLINE_ENCODINGS", "get_offline_encoding"]

_DATA_DIR = Path(__file__).with_name("encodings")
OFFLINE_ENCODINGS = ("cl100k_base", "o200k_base")

_cache: dict[str, tiktoken.Encoding] = {}
_lock = threading.Lock()


def _load_vendored_bpe(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
    name = url.rsplit("/", 1)[-1].removesuffix(".tiktoken")
    path = _DATA_DIR / f"{name}.tiktoken.gz"
    try:
        data = gzip.decompress(path.read_bytes())
    except OSError as exc:
        raise TokenizerError(f"offline encoding file {path} cannot be read: {exc}") from None
    digest = hashlib.sha256(data).hexdigest()
    if expected_hash is not None and digest != expected_hash:
        raise TokenizerError(
            f"offline encoding file {path} is corrupt (sha256 {digest}, expected "
            f"{expected_hash}); reinstall duragent"
        )
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _constructor(name: str) -> Callable[[], dict[str, Any]]:
    official: types.FunctionType = getattr(openai_public, name)
    # Same code and defaults, but ``load_tiktoken_bpe`` resolves to the vendored loader.
    globals_ = {**official.__globals__, "load_tiktoken_bpe": _load_vendored_bpe}
    func = types.FunctionType(official.__code__, globals_, official.__name__)
    return func


def get_offline_encoding(name: str) -> tiktoken.Encoding:
    """The tiktoken encoding ``name`` (cl100k_base or o200k_base), loaded without network."""
    if name not in OFFLINE_ENCODINGS:
        raise TokenizerError(
            f"no offline data for encoding {name!r}; available: {', '.join(OFFLINE_ENCODINGS)}"
        )
    with _lock:
        enc = _cache.get(name)
        if enc is None:
            params = _constructor(name)()
            enc = tiktoken.Encoding(
                name=params["name"],
                pat_str=params["pat_str"],
                mergeable_ranks=params["mergeable_ranks"],
                special_tokens=params["special_tokens"],
            )
            _cache[name] = enc
        return enc
