"""Token counting: the real tokenizer where the model's encoding is known, else an estimate.

- OpenAI-family models (gpt-4o, gpt-4.1, gpt-5, o1/o3/o4 → ``o200k_base``; gpt-4, gpt-3.5 →
  ``cl100k_base``) are counted with tiktoken, whose encodings ship with duragent and load
  offline (``offline_encodings``).
- Every other model (Claude, Llama, Qwen, …) uses ``EstimateCounter``: a character-class
  estimate calibrated against tiktoken on prose, code, JSON and CJK (``bench/context/tokens.py``
  prints its error). It deliberately leans high: for budgeting, overcounting costs a little
  history, undercounting costs an overflow.

Counts of messages are cached per message object (messages are immutable), so rendering a
long history costs O(new messages), not O(history).
"""

from __future__ import annotations

import json
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Protocol, cast

from duragent.context.offline_encodings import get_offline_encoding
from duragent.core.messages import Message, ToolDefinition

__all__ = [
    "CHUNK_CHARS",
    "MESSAGE_OVERHEAD_TOKENS",
    "REQUEST_OVERHEAD_TOKENS",
    "EstimateCounter",
    "TextCounter",
    "TiktokenCounter",
    "TokenCounter",
    "counter_for_model",
    "encoding_for_model",
    "split_for_tokenizer",
]

MESSAGE_OVERHEAD_TOKENS = 4
"""Per-message framing (role markers, separators) that chat formats add around content."""

REQUEST_OVERHEAD_TOKENS = 3
"""Priming tokens the chat format adds once per request (the assistant's turn marker)."""

TEXT_CACHE_MIN_CHARS = 256
TEXT_CACHE_SIZE = 64
"""``TokenCounter`` remembers the counts of the last 64 texts of 256+ characters."""


class TextCounter(Protocol):
    """Anything that can count the tokens of a string."""

    name: str

    def count_text(self, text: str) -> int:
        """Number of tokens in ``text``."""
        ...


LETTERS_PER_TOKEN = 3.5
"""ASCII letters per token in the estimate (tiktoken runs ~4; local models' vocabularies less)."""


class EstimateCounter:
    """A fast estimate for models whose tokenizer we do not have.

    Per character class, leaning high: ASCII letters run about 3.5 characters per token,
    each digit is a token, whitespace is mostly absorbed into the next word, ASCII
    punctuation often stands alone (JSON and code are punctuation-heavy), and CJK and other
    non-Latin characters cost about one token each. ``bench/context/tokens.py`` prints the ratio
    estimate / true for each kind of text.

    The models that get the estimate are the ones without a tiktoken encoding — mostly local
    models (SmolLM2, Llama, Qwen, Mistral) whose smaller vocabularies cut text finer than
    tiktoken's, and many of which split numbers into single digits. Calibrated on tiktoken
    alone (4 characters per token, digits included), the estimate under-counted SmolLM2 by
    12 % on prose and by half on text with times and numbers, so a request "within the
    limit" overflowed a 2,048-token llama.cpp server (``specs/202611240915.context-bench.md``).
    """

    name = "estimate"

    def count_text(self, text: str) -> int:
        """Estimated tokens of ``text`` (never zero for non-empty text).

        The character classes are counted in C (``bytes.translate`` to one class byte per
        character, then ``bytes.count``): a Python step per character cost ~3 % of a turn.
        """
        if not text:
            return 0
        if text.isascii():
            classes = text.encode("ascii").translate(_ASCII_CLASSES)
            punct = classes.count(b"p")
            spaces = classes.count(b"s")
            digits = classes.count(b"d")
            letters = len(text) - punct - spaces - digits
            estimate = letters / LETTERS_PER_TOKEN + digits + punct * 0.7 + spaces * 0.08
        elif len(text) > _EXACT_SUM_CHARS:
            estimate = _estimate_by_character(text)
        else:
            classes = text.encode("utf-8", "surrogatepass").translate(_UTF8_CLASSES)
            estimate = (
                classes.count(b"l") / LETTERS_PER_TOKEN
                + classes.count(b"d")
                + classes.count(b"p") * 0.7
                + classes.count(b"s") * 0.08
                + classes.count(b"h") * 1.3
            )
        return max(1, int(estimate + 0.999))


def _ascii_class(ch: str, *, all_spaces: bool) -> bytes:
    """The class byte of an ASCII character: ``d``igit, ``l``etter, ``s``pace, ``p``unct."""
    if ch.isdigit():
        return b"d"
    if ch.isalnum():
        return b"l"
    if ch.isspace():
        # pure ASCII text has always counted only " " and "\n" as spaces, other whitespace
        # (tabs, CR) as letters; mixed text counts every whitespace character as a space
        return b"s" if all_spaces or ch in " \n" else b"l"
    return b"p"


_ASCII_CLASSES = b"".join(_ascii_class(chr(i), all_spaces=False) for i in range(128)) + bytes(128)
"""``translate`` table for pure ASCII text (bytes 128+ never occur there)."""

_UTF8_CLASSES = (
    b"".join(_ascii_class(chr(i), all_spaces=True) for i in range(128))
    + b"c" * 64  # 0x80-0xBF continue a character: not counted
    + b"p" * 32  # 0xC0-0xDF start U+0080-U+07FF (accents, Greek, Cyrillic, …): 0.7 like punct
    + b"h" * 32  # 0xE0-0xFF start U+0800 and above, surrogates included (CJK, emoji): 1.3
)
"""``translate`` table for UTF-8 bytes: one class byte per character (its first byte)."""

_EXACT_SUM_CHARS = 1_000_000
"""Up to this length the class counts give exactly the per-character sum's estimate.

The per-character loop (``_estimate_by_character``) adds floats one by one; the counts add
five products. The true value is a multiple of 1/700 (2/7, 1, 0.08, 0.7, 1.3 are), so it is
at least 0.3/700 from any rounding boundary ``k - 0.999``; the loop's rounding error is at
most ~0.65·n²·2⁻⁵³ (n characters, each at most 1.3), under 1e-4 for n = 10⁶, and the counts'
is far smaller. Beyond, the loop runs so the numbers never change.
"""


def _estimate_by_character(text: str) -> float:
    """The estimate of non-ASCII ``text``, one character at a time (the original sum)."""
    estimate = 0.0
    for ch in text:
        o = ord(ch)
        if o < 128:
            if ch.isdigit():
                estimate += 1.0
            elif ch.isalnum():
                estimate += 1 / LETTERS_PER_TOKEN
            elif ch.isspace():
                estimate += 0.08
            else:
                estimate += 0.7
        elif o < 0x0800:  # Latin-1 accents, Greek, Cyrillic, Hebrew, Arabic
            estimate += 0.7
        else:  # CJK, Indic, emoji, symbols
            estimate += 1.3
    return estimate


class TiktokenCounter:
    """Exact counts with a tiktoken encoding (loaded offline on first use).

    Hostile text must not reach tiktoken whole: a run of ~1 M spaces (or tabs, NBSP) makes
    its regex overflow a stack and *panic* (``pyo3_runtime.PanicException``, a
    ``BaseException``, so ``except Exception`` misses it), and one long piece costs time
    quadratic in its length. Text is therefore encoded in chunks of at most ``CHUNK_CHARS``
    characters cut at word boundaries (so prose counts exactly as whole), and a chunk the
    tokenizer still refuses is counted by the estimate. Counting never raises.
    """

    def __init__(self, encoding_name: str) -> None:
        self.name = encoding_name
        self._encoding = get_offline_encoding(encoding_name)
        self._estimate = EstimateCounter()

    def count_text(self, text: str) -> int:
        """Tokens of ``text``; special-token strings in user text count as ordinary text."""
        if not text:
            return 0
        total = 0
        for chunk in split_for_tokenizer(text):
            tokens = self._encode_chunk(chunk)
            total += len(tokens) if tokens is not None else self._estimate.count_text(chunk)
        return total

    def encode(self, text: str) -> list[int] | None:
        """The token ids of ``text`` (ordinary text), or None if the tokenizer refused a part."""
        out: list[int] = []
        for chunk in split_for_tokenizer(text):
            tokens = self._encode_chunk(chunk)
            if tokens is None:
                return None
            out.extend(tokens)
        return out

    def _encode_chunk(self, chunk: str) -> list[int] | None:
        try:
            return self._encoding.encode_ordinary(chunk)
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException:
            return None

    def decode_span(self, tokens: list[int]) -> str:
        """The text of a slice of token ids, dropping a character broken at either edge."""
        return self._encoding.decode_bytes(tokens).decode("utf-8", errors="ignore")


CHUNK_CHARS = 4096
"""Longest text handed to tiktoken in one call (a run of one character this long: ~1 ms)."""

_BOUNDARY_WINDOW = 256


def split_for_tokenizer(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """``text`` cut into pieces of at most ``size`` characters.

    A cut is made before a space that follows a non-space where possible (tiktoken's
    pre-tokenizer splits there anyway, so the pieces count as the whole); a run with no such
    boundary (1 M spaces) is cut hard, costing at most a token or two per cut.
    """
    if len(text) <= size:
        return [text]
    pieces = []
    start = 0
    while len(text) - start > size:
        end = start + size
        cut = end
        for i in range(end, max(start + 1, end - _BOUNDARY_WINDOW), -1):
            if text[i] == " " and not text[i - 1].isspace():
                cut = i
                break
        if 0xD800 <= ord(text[cut - 1]) <= 0xDBFF:  # never split a surrogate pair
            cut -= 1
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


class TokenCounter:
    """Counts messages, tool calls and tool definitions; caches per message.

    Thread-safe: adding to the cache is guarded (one finaliser per message), reading it is a
    single dict lookup, and counting itself is pure.
    """

    def __init__(self, text_counter: TextCounter) -> None:
        self.text = text_counter
        # by ``id(message)``: looked up in C (a ``WeakKeyDictionary`` builds a weak reference
        # per lookup in Python, ~0.5 µs, and summing a long history paid that per message);
        # a ``weakref.finalize`` per message drops its entry before its id can be reused
        self._cache: dict[int, int] = {}
        self._texts: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The encoding name, or ``estimate``."""
        return self.text.name

    def count_text(self, text: str) -> int:
        """Tokens of a bare string.

        Long texts are remembered (the last ``TEXT_CACHE_SIZE``): the system prompt and the
        tool definitions are rebuilt as new strings for every call but rarely change, and
        counting them again cost ~1 ms a call with the estimator.
        """
        if len(text) < TEXT_CACHE_MIN_CHARS:
            return self.text.count_text(text)
        with self._lock:
            cached = self._texts.get(text)
            if cached is not None:
                self._texts.move_to_end(text)
                return cached
        tokens = self.text.count_text(text)
        with self._lock:
            self._texts[text] = tokens
            while len(self._texts) > TEXT_CACHE_SIZE:
                self._texts.popitem(last=False)
        return tokens

    def count_message(self, message: Message) -> int:
        """Tokens one message costs in a request: content, tool calls, id, images, framing."""
        cached = self._cache.get(id(message))
        if cached is not None:
            return cached
        total = MESSAGE_OVERHEAD_TOKENS + self.count_text(message.content or "")
        for call in message.tool_calls:
            total += self.text.count_text(call.name) + self.text.count_text(call.arguments)
            total += self.text.count_text(call.id) + 3
        if message.tool_call_id:
            total += self.text.count_text(message.tool_call_id)
        if type(message) is not Message:  # ``llm.types.ImageMessage``: its images' tokens
            total += getattr(message, "image_tokens", 0)
        key = id(message)
        with self._lock:
            if key not in self._cache:
                self._cache[key] = total
                weakref.finalize(message, self._cache.pop, key, None).atexit = False
        return total

    def sum_messages(self, messages: Sequence[Message]) -> int:
        """What ``messages`` cost together (no request priming), counting the uncounted.

        Counted messages are summed in C, so a long history that was counted before (every
        message of a session's window is, by the request that first carried it) costs
        ~40 ns a message instead of a Python call each.
        """
        try:  # a None (an uncounted message) stops the sum: cheaper than looking for one first
            return sum(cast("list[int]", list(map(self._cache.get, map(id, messages)))))
        except TypeError:
            return sum(map(self.count_message, messages))

    def count_messages(self, messages: Iterable[Message]) -> int:
        """Tokens of a whole request's messages, including the per-request priming."""
        return REQUEST_OVERHEAD_TOKENS + self.sum_messages(list(messages))

    def count_tools(self, tools: Sequence[ToolDefinition]) -> int:
        """Tokens the tool definitions cost (they are sent as JSON with every call)."""
        if not tools:
            return 0
        payload = json.dumps([t.to_openai() for t in tools], separators=(",", ":"))
        return self.count_text(payload)


_O200K_MARKERS = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "chatgpt-4o", "o1", "o3", "o4")
_CL100K_MARKERS = ("gpt-4", "gpt-3.5", "text-embedding-3", "text-embedding-ada")


def encoding_for_model(model_name: str) -> str | None:
    """The tiktoken encoding a model uses, when known (OpenAI-family names, any prefix)."""
    name = model_name.lower().rsplit("/", 1)[-1]
    for marker in _O200K_MARKERS:
        if name.startswith(marker):
            return "o200k_base"
    for marker in _CL100K_MARKERS:
        if name.startswith(marker):
            return "cl100k_base"
    return None


_counters: dict[str, TokenCounter] = {}
_counters_lock = threading.Lock()


def counter_for_model(model_name: str) -> TokenCounter:
    """A shared TokenCounter for ``model_name`` (tiktoken when known, else the estimate)."""
    key = encoding_for_model(model_name) or EstimateCounter.name
    with _counters_lock:
        counter = _counters.get(key)
        if counter is None:
            text: TextCounter = TiktokenCounter(key) if key != "estimate" else EstimateCounter()
            counter = TokenCounter(text)
            _counters[key] = counter
        return counter
