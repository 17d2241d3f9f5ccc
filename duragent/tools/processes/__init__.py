"""Background jobs: the ``background_process`` tool and the registry that runs its jobs.

``meta`` (the on-disk record), ``tmux`` (interactive jobs), ``jobs`` (starting and watching
one job), ``reports`` (what a session is told, and when), ``job_table`` (the jobs known,
on disk first, each caller seeing its own), ``registry`` (running every job of the workspace,
restart), ``tool`` (the model's actions).
See ``specs/202611240815.background-processes.md``.
"""

from __future__ import annotations

from duragent.tools.processes.meta import ProcessMeta, ProcessStatus
from duragent.tools.processes.registry import ProcessError, ProcessRegistry, SpawnRequest
from duragent.tools.processes.reports import ProcessEvents, completion_message
from duragent.tools.processes.tmux import Tmux
from duragent.tools.processes.tool import BackgroundProcessTool

__all__ = [
    "BackgroundProcessTool",
    "ProcessError",
    "ProcessEvents",
    "ProcessMeta",
    "ProcessRegistry",
    "ProcessStatus",
    "SpawnRequest",
    "Tmux",
    "completion_message",
]
