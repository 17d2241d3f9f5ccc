"""Several ``duragent serve`` processes sharing one store: the nodes of one deployment.

A bench that runs two nodes (PostgreSQL) kills and restarts them as ``ServeProcess`` does one,
and traces every call a fake recorded to the life that made it. The fakes attribute a call
to a node by the prefix of the base URL the node was configured with (``/n/<name>``; none for
the first node, "a"). The nodes number their lives in one sequence (they share
``lifetimes``, ``killed`` and ``node_of_life``), so the verdicts written for one process
(``ServeProcess.resent_after_kill``: a copy is excused when the life that sent the one before
was killed before it, whichever started first) read the same with several.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

from duragent.testing.serve_process import ServeProcess

__all__ = ["ServeNodes"]


class ServeNodes(ServeProcess):
    """The first node, which also keeps the others by name and their common lives.

    Unchanged from ``ServeProcess`` for the first node (``start``, ``kill``, ``pid``, ``url``,
    ``config``), so a campaign written for one process runs with a single node as before.
    """

    @cached_property
    def nodes(self) -> dict[str, ServeProcess]:
        """Every node by name, this first one included."""
        return {self.name: self}

    def add(
        self,
        name: str,
        config: Path,
        *,
        command: list[str] | None = None,
        pythonpath: Sequence[Path] = (),
    ) -> ServeProcess:
        """Another node: its own folder (``config``'s), port and serve lock; not started."""
        if name in self.nodes:
            raise ValueError(f"node {name!r} exists already")
        node = ServeProcess(config, gateway=self.gateway, command=command)
        node.pythonpath = [*self.pythonpath, *pythonpath]
        node.name = name
        node.lifetimes, node.killed, node.node_of_life = (
            self.lifetimes,
            self.killed,
            self.node_of_life,
        )
        self.nodes[name] = node
        return node

    def running(self) -> list[ServeProcess]:
        """The nodes whose process runs now."""
        return [node for node in self.nodes.values() if node.pid is not None]

    def pids(self) -> list[int]:
        """The running nodes' process ids."""
        return [node.pid for node in self.running() if node.pid is not None]

    def stop_all(self) -> None:
        """SIGTERM every running node (the others first, the first node last)."""
        for node in reversed(self.running()):
            node.stop()
