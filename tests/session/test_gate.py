from __future__ import annotations

import threading
import time

from duragent.session.gate import ActorGate


def test_no_more_than_the_limit_hold_the_gate_at_once() -> None:
    gate = ActorGate(limit=3)
    inside = 0
    peak = 0
    lock = threading.Lock()

    def work() -> None:
        nonlocal inside, peak
        with gate:
            with lock:
                inside += 1
                peak = max(peak, inside)
            time.sleep(0.01)
            with lock:
                inside -= 1

    threads = [threading.Thread(target=work) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak == 3


def test_the_gate_is_reentrant_for_one_thread() -> None:
    gate = ActorGate(limit=1)
    with gate, gate:
        pass
    taken = threading.Event()

    def take() -> None:
        with gate:
            taken.set()

    other = threading.Thread(target=take)
    other.start()
    other.join(timeout=2)
    assert taken.is_set()  # fully released after the nested exits
