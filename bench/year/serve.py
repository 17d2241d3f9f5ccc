"""``duragent serve`` for the simulated year: the same runtime, with the scheduler on its clock.

    python -m bench.year.serve CONFIG CLOCK_FILE --port PORT

What ``duragent serve -c CONFIG --port PORT`` runs (``Runtime.run_until_stopped``), except that
the time is the simulated one in ``CLOCK_FILE`` (``clock.FileClock``): the scheduler's and
the TTL sweep's clock, and the process's calendar (``duragent.core.clock``: event stamps,
session expiry, the memory tool's "today"). The
benchmark SIGKILLs this process and starts it again, as it would ``duragent serve``.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

from bench.year.clock import FileClock
from duragent.config import load_workspace
from duragent.core.clock import use_time_source
from duragent.runtime import Runtime


def main() -> None:
    config, clock_file, port = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[4])
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for noisy in ("httpx", "httpx2"):  # a line per model call: 100,000s over a year
        logging.getLogger(noisy).setLevel(logging.WARNING)
    clock = FileClock(clock_file)
    use_time_source(clock.seconds)
    workspace = load_workspace(config.parent)
    runtime = Runtime(workspace, port=port, clock=clock)
    asyncio.run(runtime.run_until_stopped())


if __name__ == "__main__":
    main()
