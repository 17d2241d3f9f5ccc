"""What the chats saw, beyond the year's checks: media in and out, streamed replies, probes.

Part of the month's verdict (``judge.py`` reads the escalations and leaks): each photo reached
the model as an image, each document's words came back through ``cat`` and the document went
back to its chat once (again only in the crash window), no streamed reply was left as a half
preview, each group's pinned and early facts came back at its end (``group_probes``), and the
DMs' turn latency by kind.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from bench.strangers.campaign import StrangersCampaign
from bench.strangers.discord_side import DiscordSide
from bench.strangers.model import StrangersModel
from duragent.testing.campaign_verdict import ANSWER as ANSWER_TOKEN
from duragent.testing.serve_process import ServeProcess

__all__ = ["Verdict", "again_without_a_kill", "attachment", "judge_chats"]


@dataclass
class Verdict:
    """The month's own verdict: its rows, and what fails the run (escalations, leaks, and
    every other problem)."""

    rows: list[tuple[str, str]] = field(default_factory=list)
    escalations: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def judge_chats(campaign: StrangersCampaign, model: StrangersModel, v: Verdict) -> None:
    """Add the rows and problems of what the chats saw (module docstring) to ``v``."""
    _media(campaign, model, v)
    if campaign.side is not None:
        _discord_media(campaign.side, campaign.kill_times, model, v)
    _streams(campaign, model, v)
    _group_probes(campaign, model, v)
    _by_kind(campaign, model, v)


def attachment(path: Path) -> bool:
    """A file the runtime keeps for a person's photo, voice note or document: the session's
    blobs, the media index and the chats' copies the agent's tools read."""
    parts = path.parts
    kept = "attachments" in parts or "media" in parts or "files" in parts
    return kept and path.is_file()


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
    _downloads(campaign, v)
    _files_out(campaign, model, documents, v)


def _downloads(campaign: StrangersCampaign, v: Verdict) -> None:
    """Each file a person sent was downloaded whole at most once, again only after a kill.

    A file's ``getFile`` calls say which process asked for it; a second whole download is
    the crash window only when a kill took the process that asked before (between the
    download and its record in the media index).
    """
    asked: dict[str, list[float]] = {}
    for call in campaign.tg.calls("getFile"):
        if call.ok:
            asked.setdefault(str(call.params.get("file_id")), []).append(call.time)
    once = again = 0
    for file_id, times in asked.items():
        whole = campaign.tg.downloads(file_id)
        if whole <= 1:
            once += whole
            continue
        again += 1
        killed = lives_killed_between(campaign.serve, sorted(times))
        if len(killed) < whole - 1:
            v.problems.append(f"file {file_id}: downloaded {whole} times, {len(killed)} kills")
    v.rows.append(("  files downloaded once / again after a kill", f"{once} / {again}"))


def _files_out(
    campaign: StrangersCampaign, model: StrangersModel, documents: list[str], v: Verdict
) -> None:
    """Each document ``send_file`` took went back to its chat once.

    A second copy is the documented crash window only (``specs/202612051900.files-out.md``):
    the copy before it was sent by a process that a kill then took before its ``delivery``
    record landed, and the next process sent it again. Any other second copy (two from one
    process, or one after a clean restart) is a problem.
    """
    sent = [(f.caption or "", f.time) for f in campaign.tg.sent_files(kind="document")]
    taken = [t for t in documents if model.sent_back.get(t)]
    once, twice = _sent_back(taken, sent, campaign.serve, "document", v)
    v.rows.append(
        (
            "files sent back: taken / delivered once / again after a kill",
            f"{len(taken)} / {once} / {twice}",
        )
    )


def _discord_media(
    side: DiscordSide, kill_times: list[float], model: StrangersModel, v: Verdict
) -> None:
    """The Discord DMs' media: photos seen as images, documents read and sent back once,
    each attachment downloaded at most once unless a kill came after it was sent."""
    kinds = Counter(side.media.values())
    for token, medium in side.media.items():
        if medium == "photo" and model.photos.get(token, (1, 0))[0] == 0:
            v.problems.append(f"discord photo {token}: its turn's request carried no image")
        if medium == "document" and model.documents.get(token) is False:
            v.problems.append(f"discord document {token}: cat did not give its words back")
    documents = [t for t, k in side.media.items() if k == "document"]
    taken = [t for t in documents if model.sent_back.get(t)]
    sent = [(caption, at) for _channel, caption, at in side.files_sent]
    once, twice = _sent_back(taken, sent, side.serve, "discord document", v)
    pushed = {m.token: m.pushed_at for c in side.plan for m in c.messages}
    again = 0
    for token, attachment in side.attachments.items():
        whole = side.dc.attachment_downloads(attachment)
        if whole <= 1:
            continue
        again += 1
        since = pushed.get(token) or 0.0
        if not any(k >= since for k in kill_times):
            v.problems.append(f"discord {token}: its file downloaded {whole} times, no kill")
    seen = sum(1 for t, k in side.media.items() if k == "photo" and model.photos.get(t))
    v.rows.append(
        (
            "Discord media in: photos (seen as images) / voice / documents (read back)",
            f"{kinds['photo']} ({seen}) / {kinds['voice']} / {kinds['document']}"
            f" ({sum(1 for t in documents if model.documents.get(t))})",
        )
    )
    v.rows.append(
        (
            "  Discord files back: taken / once / again after a kill; downloaded again",
            f"{len(taken)} / {once} / {twice}; {again}",
        )
    )


def _sent_back(
    taken: list[str], sent: list[tuple[str, float]], serve: ServeProcess, what: str, v: Verdict
) -> tuple[int, int]:
    """How many of the documents ``send_file`` took (``taken``) reached their chat once, and
    how many again; a copy never sent, or sent again without a kill, is a problem.
    ``sent``: each file's caption and when it went out."""
    times_of: dict[str, list[float]] = {}
    for caption, at in sent:
        for token in ANSWER_TOKEN.findall(caption):
            times_of.setdefault(token, []).append(at)
    once = twice = 0
    for token in taken:
        times = sorted(times_of.get(token, []))
        if not times:
            v.problems.append(f"{what} {token}: send_file took it, the chat never got it")
        elif len(times) == 1:
            once += 1
        else:
            twice += 1
            v.problems.extend(again_without_a_kill(serve, token, times))
    return once, twice


def again_without_a_kill(serve: ServeProcess, token: str, times: list[float]) -> list[str]:
    """A problem for each copy of a file (sent at ``times``) not sent by a later process
    after a kill of the one that sent the copy before it."""
    lives = [serve.lifetime_of(t) for t in times]
    return [
        f"document {token}: sent again by process {later} without a kill of {earlier}"
        for (earlier, _), (later, at) in pairwise(zip(lives, times, strict=True))
        if not serve.resent_after_kill(earlier, later, at)
    ]


def lives_killed_between(serve: ServeProcess, times: list[float]) -> set[int]:
    """The lives killed between one ask at ``times`` (in order) and the next, from another life.

    Each excuses one more download of the same file.
    """
    lives = [serve.lifetime_of(t) for t in times]
    return {
        earlier
        for (earlier, _), (later, at) in pairwise(zip(lives, times, strict=True))
        if serve.resent_after_kill(earlier, later, at)
    }


def _streams(campaign: StrangersCampaign, model: StrangersModel, v: Verdict) -> None:
    """No reply left half-written: each preview finished in place or deleted."""
    previews = campaign.previews
    for p in previews.left_half():
        v.problems.append(f"chat {p.chat_id}: preview {p.message_id} left half-written")
    if model.streamed and not previews.by_id:
        v.problems.append(f"{len(model.streamed)} replies streamed slowly, none shown as a preview")
    life = campaign.serve.lifetime_of
    across = sum(
        1
        for p in previews.by_id.values()
        if p.deleted or (p.finished_at is not None and life(p.finished_at) != life(p.sent_at))
    )
    v.rows.append(
        (
            "streamed replies: previews / finished in place / deleted / left half",
            previews.summary(),
        )
    )
    v.rows.append(("  of them deleted, or finished by the next process", f"{across}"))


def _group_probes(campaign: StrangersCampaign, model: StrangersModel, v: Verdict) -> None:
    """Each group's pinned fact and the fact said at its start came back at its end."""
    asked: Counter[str] = Counter()
    answered: Counter[str] = Counter()
    for token, (kind, index) in campaign.probes.asks.items():
        found = model.group_probes.get(token)
        asked[kind] += 1
        answered[kind] += int(bool(found))
        if found is None:
            v.problems.append(f"group {index}: probe {token} ({kind}) never asked of the model")
        elif not found:
            v.problems.append(f"group {index}: probe {token} ({kind}) not answered from context")
    v.rows.append(
        (
            "group intent probes answered: pinned / said at the start",
            " / ".join(f"{answered[k]} of {asked[k]}" for k in ("pinned", "said")),
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
