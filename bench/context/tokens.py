"""Token counting speed and the accuracy of the fallback estimate.

For English prose, Python code, JSON and CJK text, prints tokens per second for tiktoken
(cl100k_base, o200k_base, loaded offline from the vendored files) and for duragent's fallback
estimator, and the ratio estimate / true count for our estimator and for the reference's
``bytes / 4`` (above 1 = overcounts, the safe side for budgeting).

    .venv/bin/python -m bench.context.tokens
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bench.rigs.corpus import SAMPLES
from duragent.context.tokens import EstimateCounter, TiktokenCounter


def best_time(count: Callable[[str], int], text: str, repeat: int = 5) -> tuple[int, float]:
    """(tokens, fastest seconds) over ``repeat`` runs."""
    best = float("inf")
    tokens = 0
    for _ in range(repeat):
        start = time.perf_counter()
        tokens = count(text)
        best = min(best, time.perf_counter() - start)
    return tokens, best


def main() -> None:
    cl, o2 = TiktokenCounter("cl100k_base"), TiktokenCounter("o200k_base")
    est = EstimateCounter()
    header = (
        f"{'text':<14} {'bytes':>8} {'cl100k':>8} {'o200k':>8} {'est/cl100k':>10} "
        f"{'est/o200k':>9} {'bytes/4÷cl100k':>14} {'cl100k tok/s':>13} {'o200k tok/s':>12} "
        f"{'estimate tok/s':>14}"
    )
    print(header)
    print("-" * len(header))
    for name, make in SAMPLES.items():
        text = make()
        size = len(text.encode())
        n_cl, t_cl = best_time(cl.count_text, text)
        n_o2, t_o2 = best_time(o2.count_text, text)
        n_est, t_est = best_time(est.count_text, text)
        print(
            f"{name:<14} {size:>8,} {n_cl:>8,} {n_o2:>8,} {n_est / n_cl:>10.2f} "
            f"{n_est / n_o2:>9.2f} {size / 4 / n_cl:>14.2f} {n_cl / t_cl:>13,.0f} "
            f"{n_o2 / t_o2:>12,.0f} {n_cl / t_est:>14,.0f}"
        )
    print("\nestimate tok/s counts true (cl100k) tokens processed per second by the estimator.")


if __name__ == "__main__":
    main()
