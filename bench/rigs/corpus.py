"""Sample texts for the benchmarks, taken from the running Python's own files.

English prose (licence text and library reference topics), Python source, JSON (generated,
shaped like API payloads and tool results) and CJK text (CPython's CJK codec test texts, or a
built-in sample when the test suite is not installed). Deterministic: the same Python gives
the same corpus. ``Texts`` draws seeded slices of it (chat messages, tool results).
"""

from __future__ import annotations

import json
import math
import random
import sysconfig
from pathlib import Path

__all__ = ["SAMPLES", "Texts", "cjk", "code", "english", "json_text"]

STDLIB = Path(sysconfig.get_paths()["stdlib"])

_CJK_FALLBACK = (
    "持久化的智能体运行时需要在崩溃之后恢复每一个会话。每一条消息在回复之前都会写入磁盘,"
    "因此重新启动进程时对话能够从中断的地方继续。上下文窗口管理保证每一次调用都不会超过模型的限制。"
    "長い会話でもエージェントは文脈の長さの上限を超えることがありません。古いメッセージは要約され、"
    "ツールの出力は切り詰められます。"
    "세션은 디스크에 기록되며 프로세스가 종료되어도 대화는 사라지지 않습니다。"
) * 20


def english() -> str:
    """English prose: licence text plus library reference topics."""
    text = (STDLIB / "LICENSE.txt").read_text(encoding="utf-8")
    topics = (STDLIB / "pydoc_data" / "topics.py").read_text(encoding="utf-8")
    return (text + topics)[:300_000]


def code() -> str:
    """Python source from asyncio and json."""
    parts = [p.read_text(encoding="utf-8") for p in sorted((STDLIB / "asyncio").glob("*.py"))]
    return "".join(parts)[:300_000]


def json_text() -> str:
    """JSON shaped like chat updates and tool results, pretty and compact."""
    rng = random.Random(7)
    words = english().split()[:5000]

    def update(i: int) -> dict[str, object]:
        return {
            "update_id": 100000 + i,
            "message": {
                "message_id": i,
                "from": {
                    "id": rng.randint(10**8, 10**9),
                    "is_bot": False,
                    "first_name": rng.choice(words),
                    "language_code": "en",
                },
                "chat": {"id": -rng.randint(10**12, 10**13), "type": "supergroup"},
                "date": 1_700_000_000 + i * 37,
                "text": " ".join(rng.choice(words) for _ in range(rng.randint(3, 25))),
            },
        }

    updates = [update(i) for i in range(1500)]
    compact = json.dumps(updates[:750], separators=(",", ":"))
    pretty = json.dumps(updates[750:], indent=2)
    return compact + pretty


def cjk() -> str:
    """Chinese, Japanese and Korean text."""
    folder = STDLIB / "test" / "cjkencodings"
    if folder.is_dir():
        texts = [p.read_text(encoding="utf-8") for p in sorted(folder.glob("*-utf8.txt"))]
        if texts:
            return "".join(texts)
    return _CJK_FALLBACK


SAMPLES = {"English prose": english, "Python code": code, "JSON": json_text, "CJK": cjk}


class Texts:
    """Seeded slices of real prose, code and JSON.

    Draws come from ``rng`` (seeded with ``seed``) unless a method is given its own: a draw
    that must not depend on the ones before it (a turn's message, a tool call's output) passes
    a generator seeded for it.
    """

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self.prose = english()
        self.sources = [self.prose, code(), json_text()]

    def slice(self, text: str, size: int, rng: random.Random | None = None) -> str:
        """``size`` characters of ``text`` from a random place."""
        rng = rng or self.rng
        size = min(size, len(text))
        start = rng.randrange(0, len(text) - size + 1)
        return text[start : start + size]

    def chat(self, lo: int, hi: int, rng: random.Random | None = None) -> str:
        """Prose of ``lo``–``hi`` characters (a user question or an assistant answer)."""
        rng = rng or self.rng
        return self.slice(self.prose, rng.randint(lo, hi), rng)

    def result(self, lo: int, hi: int, rng: random.Random | None = None) -> str:
        """A tool result of ``lo``–``hi`` bytes, log-uniform: mostly small, some huge."""
        rng = rng or self.rng
        size = int(math.exp(rng.uniform(math.log(lo), math.log(hi))))
        return self.slice(rng.choice(self.sources), size, rng)
