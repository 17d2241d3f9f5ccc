from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from duragent.context import offline_encodings
from duragent.context.offline_encodings import get_offline_encoding
from duragent.context.tokens import (
    CHUNK_CHARS,
    MESSAGE_OVERHEAD_TOKENS,
    REQUEST_OVERHEAD_TOKENS,
    EstimateCounter,
    TiktokenCounter,
    TokenCounter,
    counter_for_model,
    encoding_for_model,
    split_for_tokenizer,
)
from duragent.core import Message, ToolCall, ToolDefinition
from duragent.errors import TokenizerError

ENGLISH = (
    "The durable runtime keeps every conversation on disk, so a crash loses nothing. "
    "Each session is an actor that owns its state and writes an event log before it replies. "
) * 20
CODE = (
    textwrap.dedent(
        '''
    def render(history: list[Message], budget: int) -> list[Message]:
        """Fill newest to oldest until the budget is spent."""
        kept: list[Message] = []
        for message in reversed(history):
            cost = counter.count_message(message)
            if cost > budget:
                break
            budget -= cost
            kept.append(message)
        return list(reversed(kept))
    '''
    )
    * 10
)
JSON_TEXT = json.dumps(
    [
        {"id": i, "user": {"name": f"user{i}", "tags": ["a", "b"]}, "ok": i % 2 == 0}
        for i in range(200)
    ]
)
CJK = (
    "持久化的智能体运行时需要在崩溃之后恢复每一个会话。"
    "長い会話でも上限を超えません。"
    "세션은 디스크에 기록됩니다。"
) * 10


def test_offline_encodings_load_and_encode_both_vocabularies() -> None:
    assert TiktokenCounter("o200k_base").count_text("hello world") == 2
    assert TiktokenCounter("cl100k_base").count_text("hello world") == 2


def test_vendored_encodings_are_identical_to_tiktokens_official_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seed tiktoken's own cache with the vendored data so the official loader runs offline,
    # then compare every property that defines the encoding.
    import gzip

    for name in ("cl100k_base", "o200k_base"):
        url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        data = gzip.decompress(
            (
                Path(offline_encodings.__file__).with_name("encodings") / f"{name}.tiktoken.gz"
            ).read_bytes()
        )
        (tmp_path / hashlib.sha1(url.encode()).hexdigest()).write_bytes(data)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    for name in ("cl100k_base", "o200k_base"):
        official = tiktoken.get_encoding(name)
        ours = get_offline_encoding(name)
        assert ours._pat_str == official._pat_str
        assert ours._special_tokens == official._special_tokens
        assert ours.n_vocab == official.n_vocab
        for text in (ENGLISH, CODE, JSON_TEXT, CJK):
            assert ours.encode_ordinary(text) == official.encode_ordinary(text)


def test_token_counting_works_with_networking_disabled(tmp_path: Path) -> None:
    # A child process whose sockets cannot connect anywhere and whose tiktoken cache is empty.
    script = textwrap.dedent(
        f"""
        import os, socket
        os.environ["TIKTOKEN_CACHE_DIR"] = {str(tmp_path)!r}
        def refuse(*a, **k):
            raise OSError("network disabled by test")
        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.getaddrinfo = refuse
        socket.create_connection = refuse
        import tiktoken
        try:
            tiktoken.get_encoding("cl100k_base")
        except Exception:
            print("official-download-blocked")
        from duragent.context.tokens import counter_for_model
        print(counter_for_model("gpt-4o").count_text("hello world"))
        print(counter_for_model("gpt-4").count_text("hello world"))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()
    assert out == ["official-download-blocked", "2", "2"]


def test_a_corrupt_vendored_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gzip

    bad = tmp_path / "encodings"
    bad.mkdir()
    (bad / "cl100k_base.tiktoken.gz").write_bytes(gzip.compress(b"aGVsbG8= 0\n"))
    monkeypatch.setattr(offline_encodings, "_DATA_DIR", bad)
    monkeypatch.setattr(offline_encodings, "_cache", {})
    with pytest.raises(TokenizerError, match="corrupt"):
        get_offline_encoding("cl100k_base")


def test_an_unknown_encoding_name_is_a_clear_error() -> None:
    with pytest.raises(TokenizerError, match="available: cl100k_base, o200k_base"):
        get_offline_encoding("p50k_base")


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini", "o200k_base"),
        ("openai/gpt-4.1-nano", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("claude-sonnet-4-5", None),
        ("llama3.2", None),
        ("duragent-offline", None),
    ],
)
def test_the_encoding_is_chosen_by_model_name(model: str, encoding: str | None) -> None:
    assert encoding_for_model(model) == encoding


@pytest.mark.parametrize(
    "text", [ENGLISH, CODE, JSON_TEXT, CJK], ids=["prose", "code", "json", "cjk"]
)
def test_the_fallback_estimate_leans_high_but_stays_close(text: str) -> None:
    true = TiktokenCounter("cl100k_base").count_text(text)
    estimate = EstimateCounter().count_text(text)
    assert 1.0 <= estimate / true <= 1.4


def test_the_estimate_is_never_zero_for_text_and_zero_for_nothing() -> None:
    est = EstimateCounter()
    assert est.count_text("") == 0
    assert est.count_text("a") == 1


class CountingText:
    """A TextCounter that counts how often it is asked (to observe the cache)."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def count_text(self, text: str) -> int:
        self.calls += 1
        return len(text)


def test_message_counts_include_content_tool_calls_ids_and_framing() -> None:
    counter = TokenCounter(CountingText())
    call = ToolCall(id="c1", name="bash", arguments='{"command":"ls"}')
    assistant = Message.assistant(None, (call,))
    tool = Message.tool("c1", "file.txt")
    assert counter.count_message(Message.user("hello")) == MESSAGE_OVERHEAD_TOKENS + 5
    assert counter.count_message(assistant) == MESSAGE_OVERHEAD_TOKENS + 4 + 16 + 2 + 3
    assert counter.count_message(tool) == MESSAGE_OVERHEAD_TOKENS + 8 + 2
    assert counter.count_messages([Message.user("hello")]) == (
        REQUEST_OVERHEAD_TOKENS + MESSAGE_OVERHEAD_TOKENS + 5
    )


def test_message_counts_are_cached_per_message_object() -> None:
    text = CountingText()
    counter = TokenCounter(text)
    history = [Message.user(f"message {i}") for i in range(100)]
    counter.count_messages(history)
    first = text.calls
    counter.count_messages(history)
    assert text.calls == first
    history.append(Message.user("one more"))
    counter.count_messages(history)
    assert text.calls == first + 1


def test_equal_texts_in_different_messages_are_counted_separately() -> None:
    counter = TokenCounter(CountingText())
    a, b = Message.user("same"), Message.user("same")
    assert counter.count_message(a) == counter.count_message(b)
    assert a is not b


def test_tool_definitions_are_counted_as_the_json_sent_to_the_model() -> None:
    counter = counter_for_model("gpt-4o")
    tools = [
        ToolDefinition(
            name="bash",
            description="Run a shell command",
            parameters={"type": "object", "properties": {"command": {"type": "string"}}},
        )
    ]
    payload = json.dumps([t.to_openai() for t in tools], separators=(",", ":"))
    assert counter.count_tools(tools) == counter.count_text(payload) > 10
    assert counter.count_tools([]) == 0


def test_counters_are_shared_per_encoding() -> None:
    assert counter_for_model("gpt-4o") is counter_for_model("gpt-4o-mini")
    assert counter_for_model("claude-3") is counter_for_model("llama3")
    assert counter_for_model("claude-3").name == "estimate"


class CountingEstimate(EstimateCounter):
    """The estimator, recording which texts it was asked to count."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def count_text(self, text: str) -> int:
        self.seen.append(len(text))
        return super().count_text(text)


def test_long_texts_that_repeat_are_counted_once() -> None:
    estimate = CountingEstimate()
    counter = TokenCounter(estimate)
    prompt = "You are a careful assistant. " * 40
    first = counter.count_message(Message.system(prompt))
    again = counter.count_message(Message.system("".join(["You are a careful assistant. "] * 40)))
    assert first == again
    assert estimate.seen.count(len(prompt)) == 1
    counter.count_text("short")
    counter.count_text("short")
    assert estimate.seen.count(5) == 2  # short texts are not worth remembering


def test_counting_a_million_character_whitespace_run_never_raises() -> None:
    counter = counter_for_model("gpt-4o")
    for run in (" " * 1_000_000, "\t" * 1_000_000, "\u00a0" * 1_000_000):
        assert counter.count_text(run) > 0
        assert counter.count_text("x" + run + "y") > 0


def test_chunked_counting_of_long_prose_equals_counting_it_whole() -> None:
    encoding = get_offline_encoding("o200k_base")
    prose = "The quick brown fox, jumps over the lazy dog; twice. " * 2000
    assert len(split_for_tokenizer(prose)) > 10
    assert TiktokenCounter("o200k_base").count_text(prose) == len(encoding.encode_ordinary(prose))


def test_chunks_rejoin_to_the_text_and_never_split_a_surrogate_pair() -> None:
    text = ("😀" * 5000) + (" " * 10_000) + "word " * 3000
    pieces = split_for_tokenizer(text)
    assert "".join(pieces) == text
    assert all(len(p) <= CHUNK_CHARS for p in pieces)


def _estimate_one_character_at_a_time(text: str) -> int:
    """``EstimateCounter.count_text`` as it was written before the class counts (the reference)."""
    if not text:
        return 0
    if text.isascii():
        punct = sum(1 for ch in text if not ch.isalnum() and not ch.isspace())
        spaces = text.count(" ") + text.count("\n")
        digits = sum(1 for ch in text if ch.isdigit())
        letters = len(text) - punct - spaces - digits
        estimate = letters / 3.5 + digits + punct * 0.7 + spaces * 0.08
    else:
        estimate = 0.0
        for ch in text:
            o = ord(ch)
            if o < 128:
                if ch.isdigit():
                    estimate += 1.0
                elif ch.isalnum():
                    estimate += 1 / 3.5
                elif ch.isspace():
                    estimate += 0.08
                else:
                    estimate += 0.7
            elif o < 0x0800:
                estimate += 0.7
            else:
                estimate += 1.3
    return max(1, int(estimate + 0.999))


_ALPHABETS = [
    "".join(map(chr, range(128))),  # every ASCII character, controls and \x1c-\x1f included
    "abc xyz 0123456789 \n\t\r\x0b\x0c",
    " " * 5 + "\n" * 3 + "\t" * 2,
    "éüßñçøåæœ Ωλπ Жщы שלום مرحبا \u00a0\u0080\u07ff",
    "日本語の文章です。中文汉字한국어 \u0800\uffff",
    "😀🎉👍🏽🧑‍💻\U0010ffff\ud800\udfff",  # emoji, a ZWJ sequence, the last code point, surrogates
    '{"key": [1, 2.5, null], "x": "y"}; def f(a): return a * 2  # -> ok',
]


@given(st.lists(st.sampled_from(_ALPHABETS), min_size=1, max_size=4), st.randoms())
@settings(max_examples=400, deadline=None)
def test_the_estimate_counts_exactly_as_the_character_by_character_sum_did(
    parts: list[str], rnd: random.Random
) -> None:
    text = "".join(rnd.choice(part) * rnd.randint(0, 40) for part in parts for _ in range(8))
    assert EstimateCounter().count_text(text) == _estimate_one_character_at_a_time(text)


@pytest.mark.parametrize(
    "text",
    [
        *[
            "",
            " ",
            "\n",
            "\t",
            "a",
            "7",
            "?",
            "é",
            "日",
            "😀",
            "\ud800",
            " " * 4096,
            "\t\r\n" * 999,
        ],
        *[ENGLISH, CODE, JSON_TEXT, CJK, ENGLISH + "—", CODE + "é" * 50, JSON_TEXT * 8 + "日本"],
    ],
)
def test_the_estimate_of_known_texts_is_the_character_by_character_sum(text: str) -> None:
    assert EstimateCounter().count_text(text) == _estimate_one_character_at_a_time(text)
