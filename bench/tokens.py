"""Token counting speed and the accuracy of the fallback estimate.

For English prose, Python code, JSON and CJK text, prints tokens per second for tiktoken
(cl100k_base, o200k_base, loaded offline from the vendored files) and for duragent's fallback
estimator, and the ratio estimate / true token count (above 1 = overcounts, the safe side).

    .venv/bin/python bench/tokens.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import SAMPLES  # noqa: E402

from duragent.context.tokens import EstimateCounter, TiktokenCounter  # noqa: E402


def _rate(count, text: str, repeat: int = 3) -> tuple[int, float]:
    best = float("inf")
    tokens = 0
    for _ in range(repeat):
        start = time.perf_counter()
        tokens = count(text)
        best = min(best, time.perf_counter() - start)
    return tokens, tokens / best


def main() -> None:
    cl, o2, est = TiktokenCounter("cl100k_base"), TiktokenCounter("o200k_base"), EstimateCounter()
    header = (
        f"{'text':<14} {'bytes':>9} {'cl100k tok':>10} {'o200k tok':>10} {'estimate':>9} "
        f"{'est/cl100k':>10} {'est/o200k':>9} {'cl100k tok/s':>13} {'o200k tok/s':>12} "
        f"{'estimate tok/s':>15}"
    )
    print(header)
    print("-" * len(header))
    for name, make in SAMPLES.items():
        text = make()
        n_cl, r_cl = _rate(cl.count_text, text)
        n_o2, r_o2 = _rate(o2.count_text, text)
        n_est, _ = _rate(est.count_text, text)
        _, r_est = _rate(est.count_text, text)
        # the estimator's speed is reported in *true* (cl100k) tokens per second of work
        r_est = r_est * n_cl / n_est
        print(
            f"{name:<14} {len(text.encode()):>9,} {n_cl:>10,} {n_o2:>10,} {n_est:>9,} "
            f"{n_est / n_cl:>10.2f} {n_est / n_o2:>9.2f} {r_cl:>13,.0f} {r_o2:>12,.0f} "
            f"{r_est:>15,.0f}"
        )


if __name__ == "__main__":
    main()
