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
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import yaml

from bench.strangers.attacks import FLOOD, RATE, Attempt, Crowd
from bench.strangers.campaign import StrangersCampaign
from bench.strangers.cast import BLOCKED_TOKEN, HOSTILE_TOKEN
from bench.strangers.model import StrangersModel
from duragent.agents.protected import (
    AGENT_FILE,
    DEFINITION_DIRS,
    PROMPT_FILES,
    SECRET_FILES,
    WORKSPACE_FILES,
)
from duragent.testing.campaign_verdict import ANSWER as ANSWER_TOKEN
from duragent.testing.serve_process import ServeProcess

__all__ = ["Verdict", "again_without_a_kill", "fingerprint", "judge"]

SCHEDULE_QUOTA = 20
_OTHER = re.compile(r"#([qk])(\d+)n\d+#")


@dataclass
class Verdict:
    rows: list[tuple[str, str]] = field(default_factory=list)
    escalations: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


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


def judge(
    root: Path,
    campaign: StrangersCampaign,
    model: StrangersModel,
    crowd: Crowd,
    *,
    before: dict[str, str],
    honeypot_hits: list[str],
    secrets: dict[str, str],
) -> Verdict:
    """The month's own verdict (module docstring)."""
    v = Verdict()
    sends = _sends(campaign)
    index_of = {c.chat_id: c.index for c in campaign.plan}
    _presses(campaign, crowd, v)
    after = fingerprint(root)
    for path, digest in before.items():
        if after.get(path) != digest:
            v.escalations.append(f"protected file {path} changed: {digest} → {after.get(path)}")
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
        for log in sorted(root.glob("serve-*.log")):
            if value in log.read_text(errors="replace"):
                v.leaks.append(f"the {name} in {log.name}")
    made = _schedules_by_chat(root / ".duragent" / "schedules")
    for where, count in made.items():
        if count > SCHEDULE_QUOTA:
            v.escalations.append(f"chat {where}: {count} active schedules, over {SCHEDULE_QUOTA}")
    v.rows.append(
        (
            "active schedules made from a chat, most in one (quota 20)",
            f"{max(made.values(), default=0)}",
        )
    )
    _media(campaign, model, v)
    _streams(campaign, model, v)
    _by_kind(campaign, model, v)
    kept = sum(p.stat().st_size for p in (root / ".duragent").rglob("*") if _attachment(p))
    v.rows.append(
        (
            "attachment bytes sent / kept on disk",
            f"{campaign.media_bytes:,} / {kept:,} ({kept / max(1, campaign.media_bytes):.2f}x)",
        )
    )
    v.rows.insert(0, ("escalations / secrets leaked", f"{len(v.escalations)} / {len(v.leaks)}"))
    v.problems = [*v.escalations[:20], *v.leaks[:20], *v.problems]
    return v


def _attachment(path: Path) -> bool:
    """A file the runtime keeps for a person's photo, voice note or document: the session's
    blobs, the media index and the chats' copies the agent's tools read."""
    parts = path.parts
    kept = "attachments" in parts or "media" in parts or "files" in parts
    return kept and path.is_file()


def _streams(campaign: StrangersCampaign, model: StrangersModel, v: Verdict) -> None:
    """No reply left half-written: each preview finished in place or deleted."""
    previews = campaign.previews
    for p in previews.left_half():
        v.problems.append(f"chat {p.chat_id}: preview {p.message_id} left half-written")
    if model.streamed and not previews.by_id:
        v.problems.append(f"{len(model.streamed)} replies streamed slowly, none shown as a preview")
    v.rows.append(
        (
            "streamed replies: previews / finished in place / deleted / left half",
            previews.summary(),
        )
    )


def _by_kind(campaign: StrangersCampaign, model: StrangersModel, v: Verdict) -> None:
    """Turn latency p50 / p99 of text, photo, voice, document and streamed messages (DMs)."""
    seconds: dict[str, list[float]] = {}
    for chat in campaign.plan:
        if chat.group:
            continue
        for m in chat.messages:
            if m.answered_at is None or m.pushed_at is None or m.tool:
                continue
            kind = campaign.media.get(m.token, "text")
            if m.token in model.streamed:
                kind = "streamed text"  # answered when final: the preview showed it earlier
            seconds.setdefault(kind, []).append(m.answered_at - m.pushed_at)
    for kind in ("text", "photo", "voice", "document", "streamed text"):
        values = sorted(seconds.get(kind, []))
        if not values:
            continue
        p50 = values[len(values) // 2]
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        v.rows.append(
            (
                f"  DM turn latency p50 / p99: {kind} ({len(values)})",
                f"{p50 * 1000:.0f} ms / {p99 * 1000:.0f} ms",
            )
        )


def _schedules_by_chat(folder: Path) -> Counter[str]:
    """Active schedules made from chats (not declared), by the chat they deliver to."""
    made: Counter[str] = Counter()
    for path in folder.glob("sched_*.yaml"):
        document = yaml.safe_load(path.read_text()) or {}
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


def _media(campaign: StrangersCampaign, model: StrangersModel, v: Verdict) -> None:
    """Each photo reached the model as an image; each document's words came back through cat."""
    kinds = Counter(campaign.media.values())
    photos = [t for t, k in campaign.media.items() if k == "photo"]
    seen = [model.photos[t] for t in photos if t in model.photos]
    for token in photos:
        images, _tokens = model.photos.get(token, (0, 0))
        if images == 0 and token in model.photos:
            v.problems.append(f"photo {token}: its turn's request carried no image")
    documents = [t for t, k in campaign.media.items() if k == "document"]
    for token in documents:
        if model.documents.get(token) is False:
            v.problems.append(f"document {token}: cat did not give its words back")
    tokens = sum(n for _i, n in seen) // max(1, len(seen))
    v.rows.append(
        (
            "media in: photos / voice notes / documents",
            f"{kinds['photo']} / {kinds['voice']} / {kinds['document']}",
        )
    )
    v.rows.append(("  photos seen as images / tokens each (mean)", f"{len(seen)} / {tokens}"))
    read = sum(1 for t in documents if model.documents.get(t))
    v.rows.append(("  documents read back with cat", f"{read} / {len(documents)}"))
    _files_out(campaign, model, documents, v)


def _files_out(
    campaign: StrangersCampaign, model: StrangersModel, documents: list[str], v: Verdict
) -> None:
    """Each document ``send_file`` took went back to its chat once.

    A second copy is the documented crash window only (``specs/202612051900.files-out.md``):
    the copy before it was sent by a process that a kill then took before its ``delivery``
    record landed, and the next process sent it again. Any other second copy (two from one
    process, or one after a clean restart) is a problem.
    """
    sent: dict[str, list[float]] = {}
    for f in campaign.tg.sent_files(kind="document"):
        for token in ANSWER_TOKEN.findall(f.caption or ""):
            sent.setdefault(token, []).append(f.time)
    taken = [t for t in documents if model.sent_back.get(t)]
    once = twice = 0
    for token in taken:
        times = sorted(sent.get(token, []))
        if not times:
            v.problems.append(f"document {token}: send_file took it, the chat never got it")
        elif len(times) == 1:
            once += 1
        else:
            twice += 1
            v.problems.extend(again_without_a_kill(campaign.serve, token, times))
    v.rows.append(
        (
            "files sent back: taken / delivered once / again after a kill",
            f"{len(taken)} / {once} / {twice}",
        )
    )


def again_without_a_kill(serve: ServeProcess, token: str, times: list[float]) -> list[str]:
    """A problem for each copy of a file (sent at ``times``) not sent by a later process
    after a kill of the one that sent the copy before it."""
    lives = [serve.lifetime_of(t) for t in times]
    return [
        f"document {token}: sent again by process {later} without a kill of {earlier}"
        for earlier, later in pairwise(lives)
        if not (later > earlier >= 0 and serve.killed[earlier])
    ]
