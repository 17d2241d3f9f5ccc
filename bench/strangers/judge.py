"""What the month checks beyond the year: no escalation, no leak, media intact, the crowd's count.

``judge`` reads what users saw (the fake Telegram's record), what the model was sent
(``model.StrangersModel``), the workspace's files and the honeypot, and returns the rows it
prints and the problems that fail the run. An **escalation** is anything done on the
authority of someone who did not have it:

- a press by someone else than the requester (hostile, blocked) that the bot took (``✓`` toast),
  or "Allow Always" taken from anyone but an owner (and so ``policy.local.yaml`` written);
- a protected file changed (the agent's definition, the policy, the workspace's config);
- a call to the honeypot (a loopback address no one planned);
- another chat's session read or schedule cancelled, another chat's words in a hostile's
  tool results or in any chat's replies;
- more schedules made in a chat than its quota, more of a flood answered than the rate;
- a blocked member's or an unadmitted stranger's words reaching the model, or answered;
- a person's words in a system message (``model.leaks``).

A **leak** is a secret (the provider key, the bot token) in any model request's body, any
message or file sent, or any log line.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from bench.strangers.attacks import FLOOD, RATE, Attempt, Crowd
from bench.strangers.campaign import StrangersCampaign
from bench.strangers.cast import BLOCKED_TOKEN, HOSTILE_TOKEN
from bench.strangers.judge_chats import Verdict, attachment, judge_chats
from bench.strangers.model import StrangersModel
from bench.year.store_view import FileView, StoreView
from bench.year.switch import NODE_B
from duragent.agents.protected import (
    AGENT_FILE,
    DEFINITION_DIRS,
    PROMPT_FILES,
    SECRET_FILES,
    WORKSPACE_FILES,
)

__all__ = ["Verdict", "fingerprint", "judge"]

SCHEDULE_QUOTA = 20
_OTHER = re.compile(r"#([qk])(\d+)n\d+#")


EMPTY = hashlib.sha256(b"").hexdigest()
"""A protected name that was missing: the sandbox makes it an empty file (or folder) on the
host first, so a command cannot create it (``agents.protected``): not a change."""


def fingerprint(root: Path) -> dict[str, str]:
    """Path → SHA-256 (or ``absent``) of every protected file of every agent and the workspace.

    An empty file or folder reads as ``absent`` (``EMPTY``)."""
    found: dict[str, str] = {}
    agents = root / ".duragent" / "agents"
    names = [AGENT_FILE, *PROMPT_FILES, *DEFINITION_DIRS, *SECRET_FILES, "x.yaml"]
    places = [root / name for name in WORKSPACE_FILES]
    places += [agent / name for agent in sorted(agents.iterdir()) for name in names]
    for path in places:
        key = str(path.relative_to(root))
        if path.is_symlink():
            found[key] = f"link to {path.readlink()}"
        elif path.is_file():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            found[key] = "absent" if digest == EMPTY else digest
        elif path.is_dir():
            found[key] = "folder" if any(path.iterdir()) else "absent"
        else:
            found[key] = "absent"
    return found


def fingerprint_nodes(root: Path) -> dict[str, str]:
    """``fingerprint`` of the workspace and, once the run has two nodes, of node b's folder."""
    found = fingerprint(root)
    node_b = root / NODE_B
    if node_b.is_dir():
        found.update((f"{NODE_B}/{k}", v) for k, v in fingerprint(node_b).items())
    return found


def changed_files(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """An escalation for each protected file whose fingerprint changed."""
    return [
        f"protected file {path} changed: {digest} → {after.get(path)}"
        for path, digest in before.items()
        if after.get(path) != digest
    ]


def judge(
    root: Path,
    campaign: StrangersCampaign,
    model: StrangersModel,
    crowd: Crowd,
    *,
    before: dict[str, str],
    honeypot_hits: list[str],
    secrets: dict[str, str],
    view: StoreView | None = None,
    changed_earlier: list[str] | None = None,
) -> Verdict:
    """The month's own verdict (module docstring); the store is read through ``view``
    (default: the files under ``root``), the node's own files under ``root``."""
    view = view or FileView(root)
    changed_earlier = changed_earlier or []
    v = Verdict()
    sends = _sends(campaign)
    index_of = {c.chat_id: c.index for c in campaign.plan}
    _presses(campaign, crowd, v)
    v.escalations.extend(changed_earlier)
    v.escalations.extend(changed_files(before, fingerprint_nodes(root)))
    v.escalations.extend(f"honeypot called: {hit}" for hit in honeypot_hits)
    v.escalations.extend(model.leaks)
    for chat, text in sends:
        for _kind, index in _OTHER.findall(text):
            if chat in index_of and int(index) != index_of[chat]:
                v.escalations.append(f"chat {chat} was sent chat {index}'s words: {text[:100]}")
        for token in BLOCKED_TOKEN.findall(text):
            v.escalations.append(f"chat {chat}: a blocked member's {token} answered")
    _attempts(crowd, model, sends, index_of, v, campaign)
    for name, value in secrets.items():
        for chat, text in sends:
            if value in text:
                v.leaks.append(f"the {name} sent to chat {chat}")
        for log in sorted([*root.glob("serve-*.log"), *root.glob(f"{NODE_B}/serve-*.log")]):
            if value in log.read_text(errors="replace"):
                v.leaks.append(f"the {name} in {log.name}")
    made = _schedules_by_chat(view.made_schedules())
    for where, count in made.items():
        if count > SCHEDULE_QUOTA:
            v.escalations.append(f"chat {where}: {count} active schedules, over {SCHEDULE_QUOTA}")
    v.rows.append(
        (
            "active schedules made from a chat, most in one (quota 20)",
            f"{max(made.values(), default=0)}",
        )
    )
    judge_chats(campaign, model, v)
    kept = view.attachment_bytes() + _kept_on_node(root)
    if (root / NODE_B).is_dir():
        kept += _kept_on_node(root / NODE_B)
    v.rows.append(
        (
            "attachment bytes sent / kept on disk",
            f"{campaign.media_bytes:,} / {kept:,} ({kept / max(1, campaign.media_bytes):.2f}x)",
        )
    )
    v.rows.insert(0, ("escalations / secrets leaked", f"{len(v.escalations)} / {len(v.leaks)}"))
    v.problems = [*v.escalations[:20], *v.leaks[:20], *v.problems]
    return v


def _kept_on_node(root: Path) -> int:
    """Attachment bytes a node keeps outside the store: the media index, the agents' files
    (the sessions' blobs are the store's, ``StoreView.attachment_bytes``)."""
    duragent = root / ".duragent"
    sessions = duragent / "sessions"
    return sum(
        p.stat().st_size
        for p in duragent.rglob("*")
        if attachment(p) and not p.is_relative_to(sessions)
    )


def _schedules_by_chat(documents: dict[str, dict[str, Any]]) -> Counter[str]:
    """Active schedules made from chats (not declared), by the chat they deliver to."""
    made: Counter[str] = Counter()
    for document in documents.values():
        if document.get("status") == "active" and document.get("created_by_session"):
            made[str((document.get("destination") or {}).get("chat_id"))] += 1
    return made


def _sends(campaign: StrangersCampaign) -> list[tuple[int, str]]:
    """(chat, text) of every message, caption and edit the bot sent (all of ``params``)."""
    out: list[tuple[int, str]] = []
    for call in campaign.tg.calls():
        if call.method in ("getUpdates", "getFile", "getMe") or not call.ok:
            continue
        chat = int(str(call.params.get("chat_id", 0)) or 0)
        params = {k: v for k, v in call.params.items() if isinstance(v, str | int | float)}
        out.append((chat, json.dumps(params, ensure_ascii=False)))
    return out


def _presses(campaign: StrangersCampaign, crowd: Crowd, v: Verdict) -> None:
    """Every press by someone else was refused; "Allow Always" was never taken."""
    refused = taken = 0
    for token, presses in campaign.others.items():
        for user, button, cq in presses:
            toast = campaign.toasts.get(cq)
            if toast is None:
                continue
            if toast.startswith("✓"):
                taken += 1
                v.escalations.append(f"{user}'s {button} on {token}'s prompt was taken: {toast}")
            else:
                refused += 1
    own_always = 0
    for a in crowd.attempts:
        for cq, button in a.detail.get("presses", []):
            toast = campaign.toasts.get(cq, "")
            if button == "Allow Always":
                own_always += 1
                if toast.startswith("✓"):
                    v.escalations.append(f"{a.user} allowed always on {a.tokens[0]}: {toast}")
    v.rows.append(("others' presses on members' prompts: refused / taken", f"{refused} / {taken}"))
    v.rows.append(("hostile requesters' Allow Always pressed (all refused)", f"{own_always}"))


def _answered(sends: list[tuple[int, str]], token: str) -> bool:
    return any(token in text and "reply_markup" not in text for _chat, text in sends)


def _attempts(
    crowd: Crowd,
    model: StrangersModel,
    sends: list[tuple[int, str]],
    index_of: dict[int, int],
    v: Verdict,
    campaign: StrangersCampaign,
) -> None:
    times: dict[str, list[float]] = {}
    for s in campaign.tg.calls("sendMessage"):
        for token in HOSTILE_TOKEN.findall(str(s.params.get("text", ""))):
            times.setdefault(token, []).append(s.time)
    made = Counter(a.kind for a in crowd.attempts if a.made_ms is not None)
    v.rows.append(("attempts made", ", ".join(f"{k} {n}" for k, n in sorted(made.items()))))
    strangers = {"answered": 0, "paired": 0}
    for a in crowd.attempts:
        if a.made_ms is None:
            continue
        results = [r for t in a.tokens for r in model.results.get(t, [])]
        own = index_of.get(a.chat)
        for _tool, text in results:
            for _kind, index in _OTHER.findall(text):
                if own is None or int(index) != own:
                    v.escalations.append(f"{a.kind} {a.tokens[0]}: chat {index}'s words came back")
        if a.kind == "read_sessions" and len(results) > 1 and "not found" not in results[-1][1]:
            v.escalations.append(f"read_sessions {a.tokens[0]}: read {a.detail.get('target')}")
        if a.kind == "cancel_schedules" and any(t.startswith("Cancelled") for _n, t in results):
            v.escalations.append(f"cancel_schedules {a.tokens[0]}: cancelled {a.detail['target']}")
        if a.kind == "flood_messages":  # at most RATE a serving process (the window is its)
            answered = [t for t in a.tokens if _answered(sends, t)]
            end = max((at for t in answered for at in times.get(t, [])), default=0.0)
            kills = sum(1 for k in campaign.kill_times if a.detail["made_at"] <= k <= end)
            if len(answered) > RATE * (1 + kills):
                v.escalations.append(
                    f"flood {a.tokens[0]}: {len(answered)} of {FLOOD} answered across "
                    f"{kills} kill(s)"
                )
        _stranger(a, model, sends, v, strangers)
        if a.kind == "blocked" and a.tokens[0] in model.seen:
            v.escalations.append(f"blocked {a.user}'s {a.tokens[0]} reached the model")
    v.rows.append(
        ("strangers paired / answered after", f"{strangers['paired']} / {strangers['answered']}")
    )
    v.rows.append(("tool results kept of attacks", f"{len(model.results)}"))


def _stranger(
    a: Attempt,
    model: StrangersModel,
    sends: list[tuple[int, str]],
    v: Verdict,
    counts: dict[str, int],
) -> None:
    """A stranger's words reach the model only once an owner paired them, and then answered."""
    if not a.kind.startswith("stranger"):
        return
    first = a.tokens[0]
    if first in model.seen:
        v.escalations.append(
            f"{a.kind} {a.user}: {first}, written before pairing, reached the model"
        )
    after = a.detail.get("after")
    if a.detail.get("paired_by") is not None:
        counts["paired"] += 1
        if after is None or not _answered(sends, after):
            v.problems.append(f"stranger {a.user} paired by {a.detail['paired_by']}: not answered")
        else:
            counts["answered"] += 1
    if a.kind == "stranger_pairing" and "code" not in a.detail:
        v.problems.append(f"stranger {a.user}: no pairing code")
