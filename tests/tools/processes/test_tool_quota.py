"""``background_processes_per_chat`` (issue 33): one chat may not fill the machine with jobs.

A spawn beyond the quota is refused with the limit and the field that raises it, and nothing
is started or recorded; jobs of other chats, ended jobs and the operator's (no chat) do not
count.
"""

from __future__ import annotations

from pathlib import Path

from duragent.agents.access_spec import QuotaSpec
from duragent.tools.processes import BackgroundProcessTool
from tests.tools.processes.helpers import rig

CHATS = {"s1": ("telegram", "42"), "s2": ("telegram", "42"), "s3": ("discord", "9")}
FIELD = "spec.access.quotas.background_processes_per_chat"


async def chat_of(session_id: str) -> tuple[str, str] | None:
    return CHATS.get(session_id)


def metas(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.meta.json"))


async def test_a_spawn_beyond_the_chats_quota_is_refused_and_nothing_runs(
    tmp_path: Path,
) -> None:
    async with rig(tmp_path) as r:
        r.tool = BackgroundProcessTool(
            r.registry, chat_of, QuotaSpec(background_processes_per_chat=2)
        )
        first = await r.spawn("sleep 30")
        await r.spawn("sleep 30", session_id="s2")  # another session of the same chat
        refused = await r.call(action="spawn", command="touch made")
        assert not refused.success
        assert refused.content == (
            "Failed to spawn process: quota reached: this chat runs 2 background processes, "
            f"the most {FIELD} allows (2). Wait for one to finish or kill one (action=kill), "
            f"or the agent's owner can raise {FIELD} in its agent.yaml."
        )
        assert len(metas(r.directory)) == 2
        assert not (tmp_path / "made").exists()
        # another chat, and a session with no chat (the operator's), are not held back
        await r.spawn("sleep 30", session_id="s3")
        await r.spawn("sleep 30", session_id="http")
        # a job that ended frees its place
        await r.call(action="kill", handle=first)
        again = await r.call(action="spawn", command="sleep 30")
        assert again.success, again.content
        # (the rig's end kills the jobs still running)


async def test_the_default_quota_is_three_running_jobs_per_chat(tmp_path: Path) -> None:
    async with rig(tmp_path) as r:
        r.tool = BackgroundProcessTool(r.registry, chat_of)
        handles = [await r.spawn("sleep 30") for _ in range(3)]
        refused = await r.call(action="spawn", command="sleep 30")
        assert not refused.success
        assert "this chat runs 3 background processes" in refused.content
        assert len(handles) == len(metas(r.directory)) == 3
