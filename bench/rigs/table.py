"""The table a benchmark prints: one row per measure, its value, its target and a verdict.

A benchmark is one process, so its rows are one list (``ROWS``): ``row`` adds to it from
whichever section measures, and the benchmark prints it at the end, aligned
(``print_rows``) or boxed (``print_boxed``). ``pct`` is the quantile every section reports.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["ROWS", "pct", "print_boxed", "print_rows", "row"]

ROWS: list[tuple[str, str, str, str]] = []
"""(measure, value, target, verdict) of every row recorded so far."""


def row(name: str, value: str, target: str = "", ok: bool | None = None) -> None:
    """Record a row; ``ok`` (when there is a target) is shown as ``ok`` or ``MISSED``."""
    verdict = "" if ok is None else ("ok" if ok else "MISSED")
    ROWS.append((name, value, target, verdict))


def pct(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank, rounded down); NaN when there are none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else math.nan


def print_rows(target_width: int = 8) -> None:
    """Every row recorded so far, aligned under a header and a rule."""
    width = max(len(r[0]) for r in ROWS)
    print(f"{'measure':<{width}}  {'value':>22}  {'target':>{target_width}}  verdict")
    print("-" * (width + 36 + target_width))
    for name, value, target, verdict in ROWS:
        print(f"{name:<{width}}  {value:>22}  {target:>{target_width}}  {verdict}")


def print_boxed() -> None:
    """Every row recorded so far, in a box (names left, the rest right-aligned)."""
    headers = ("measure", "value", "target", "")
    widths = [max(len(r[i]) for r in [headers, *ROWS]) for i in range(4)]
    rule = "+-" + "-+-".join("-" * w for w in widths) + "-+"
    print(rule)
    print("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |")
    print(rule)
    for r in ROWS:
        print(
            "| "
            + " | ".join(
                (v.ljust(w) if i == 0 else v.rjust(w))
                for i, (v, w) in enumerate(zip(r, widths, strict=True))
            )
            + " |"
        )
    print(rule)
