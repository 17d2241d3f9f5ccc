"""A session as the reference (giosakti/duragent) leaves it, for the migration and export tests.

``tests/fixtures/reference/sessions/<SESSION_ID>/`` holds the reference's files (shapes from
the digest, §2.4–2.6): its early events rolled over to ``events.archive.jsonl`` (archive
mode), ``state.json`` (schema "2") checkpointed at seq 7 with a conversation that starts
at a later user message (as a trimmed one does), and a pending approval (with the loop's
``messages``) for the call of the first message replayed. So the original task is in the
archive only, and the first message a replay meets is another one.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "reference" / "sessions"
SESSION_ID = "session_01JDREF00000000000000000AA"
TASK = "Audit the billing database and list the unused tables"
"""The first user message (seq 2, in the archive)."""
FIRST_REPLAYED = "Drop invoices.legacy"
"""The first user message after the checkpoint (seq 8)."""
PENDING_CALL = "call_2"
CHAT = ("telegram", "4242", "assistant")


def reference_sessions(root: Path, copies: int = 1) -> list[str]:
    """Copy the fixture into ``root`` (``copies`` sessions, each its own id); their ids."""
    ids = []
    for n in range(copies):
        session_id = SESSION_ID if n == 0 else f"{SESSION_ID[:-6]}{n:06d}"
        folder = root / session_id
        shutil.copytree(FIXTURE / SESSION_ID, folder)
        if n:
            state = json.loads((folder / "state.json").read_text())
            state["session_id"] = session_id
            (folder / "state.json").write_text(json.dumps(state, indent=2))
        ids.append(session_id)
    return ids


def reference_state(folder: Path) -> dict[str, Any]:
    """The ``state.json`` of ``folder`` (or what was set aside as ``state.json.migrated``)."""
    path = folder / "state.json"
    if not path.exists():
        path = folder / "state.json.migrated"
    data: dict[str, Any] = json.loads(path.read_text())
    return data
