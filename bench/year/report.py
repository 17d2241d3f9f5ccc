"""The simulated year's table, its JSON file (for comparison across commits) and its picture."""

from __future__ import annotations

import json
import subprocess
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.year.cluster_report import cluster_json, cluster_rows
from bench.year.run import DAY_MS, YearResult
from duragent.testing.campaign_verdict import result_rows

__all__ = ["draw", "rows", "to_json"]

MB = 1024 * 1024


def rows(r: YearResult) -> list[tuple[str, str]]:
    """The year's table: the restart campaign's rows, then what a year adds (and, for a run
    whose second half is on PostgreSQL, the switch and the two nodes: ``cluster_report``)."""
    p50, p99 = r.quantiles()
    samples = r.samples
    peak = (
        (max(s.rss for s in samples), max(s.fds for s in samples), max(s.threads for s in samples))
        if samples
        else (0, 0, 0)
    )
    last = samples[-1] if samples else None
    groups = r.config.chats // r.config.group_every
    out = [("simulated days", f"{r.sim_days:.1f}")]
    for label, value in result_rows(r.campaign)[:-1]:
        out.append((label, value))
        if label == "chats":
            out.append(("  groups / DMs", f"{groups} / {r.config.chats - groups}"))
    for s in r.schedules:
        label = f"schedule {s.name}: due / ran once"
        out.append((label, f"{s.expected} / {s.ran_once}"))
        out.append(
            ("  missed / started twice / errors", f"{s.missed} / {s.started_twice} / {s.errors}")
        )
        if s.dst_days:
            out.append(("  of which on a DST-change day", f"{s.dst_days}"))
        out.append(("  delivered / re-sent after a kill", f"{s.delivered} / {s.resent}"))
    out += [
        ("model requests", f"{r.model_requests}"),
        ("  over the window (400 from the model)", f"{r.overflows}"),
        ("  failed or stalled on purpose (429/503)", f"{r.model_faults}"),
        ("summaries written / their tokens", f"{r.summary_calls} / {r.summary_tokens:,}"),
        ("intent probes asked / answered from context", f"{r.probes_asked} / {r.probes_answered}"),
        (
            "  asked after a /reset / not answered from before it",
            f"{r.reset_probes_asked} / {r.reset_probes_fresh}",
        ),
        (
            "/status asked / naming the session",
            f"{r.commands.status_asked} / {r.commands.status_right}",
        ),
        ("  after a /reset naming a new session", f"{r.commands.fresh_sessions}"),
        ("/reset asked / answered", f"{r.commands.reset_asked} / {r.commands.reset_right}"),
        ("  commands run again after a kill", f"{r.commands.rerun_after_kill}"),
        (
            "tool calls: all / bash / tool_output / memory",
            " / ".join(
                f"{n:,}"
                for n in (
                    sum(r.tool_calls.values()),
                    *(r.tool_calls.get(k, 0) for k in ("bash", "tool_output", "memory")),
                )
            ),
        ),
        ("  cut outputs read back / right / cut by a kill", " / ".join(map(str, r.reads))),
        (
            "  notes remembered / once on disk / cut by a kill",
            f"{r.memory.remembered} / {r.memory.once} / {r.memory.remembers_cut}",
        ),
        (
            "  recalls / found / cut by a kill / of a note a kill kept off disk / older than"
            " recall reads",
            f"{r.memory.recalls} / {r.memory.found} / {r.memory.recalls_cut}"
            f" / {r.memory.never_stored} / {r.memory.too_old}",
        ),
        *_ttl_rows(r),
        ("Telegram faults injected (429, 502, drops)", f"{r.telegram_faults}"),
        ("edits (no turn) / pastes of 20-80 KB", f"{r.edits} / {r.pastes}"),
        ("pastes too big for any request / told so", f"{r.too_big} / {r.refused}"),
        ("calls cut before their approval was asked (told so)", f"{r.cut_unasked}"),
        ("DM replies naming no message", f"{len(r.unattributed)}"),
        (
            "/readyz checks between kills / unhealthy",
            f"{r.readyz_checks} / {len(r.readyz_failures)}",
        ),
        (
            "  Telegram gateway states seen",
            ", ".join(f"{k} {v}" for k, v in sorted(r.gateway_states.items())),
        ),
        (
            "ERROR log lines / naming no session",
            f"{r.error_lines} / {len(r.errors_without_session)}",
        ),
        ("peak RSS / open files / threads", f"{peak[0] / MB:.0f} MB / {peak[1]} / {peak[2]}"),
    ]
    if last is not None:
        out.append(
            (
                "final RSS / open files / threads",
                f"{last.rss / MB:.0f} MB / {last.fds} / {last.threads}",
            )
        )
    out += [
        (
            "  open at the end (top kinds)",
            ", ".join(f"{k} {v}" for k, v in list(r.files_at_end.items())[:4]),
        ),
        ("disk: sessions / schedules / total", _disk(r.disk_final)),
        ("CPU: serving processes / benchmark", f"{r.serve_cpu:.0f} s / {r.driver_cpu:.0f} s"),
        (
            "  serving CPU per answerable message",
            f"{r.serve_cpu / r.campaign.messages * 1000:.0f} ms",
        ),
        ("messages per second (answerable)", f"{r.campaign.messages / r.wall_seconds:.1f}"),
        ("turn latency p50 / p99", f"{p50 * 1000:.0f} ms / {p99 * 1000:.0f} ms"),
        ("wall time", f"{r.wall_seconds:.1f} s"),
    ]
    return out + cluster_rows(r) + r.world_rows


def _disk(d: dict[str, int]) -> str:
    return " / ".join(f"{d.get(k, 0) / MB:.1f} MB" for k in ("sessions", "schedules", "total"))


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        return ""


def to_json(r: YearResult) -> dict[str, Any]:
    """Everything the table shows, plus the series the picture draws (for later commits)."""
    p50, p99 = r.quantiles()
    config = asdict(r.config)
    config["workdir"] = str(config["workdir"]) if config["workdir"] else None
    return {
        "commit": _commit(),
        "ok": r.ok,
        "config": config,
        "table": dict(rows(r)),
        "campaign": asdict(r.campaign),
        "schedules": [asdict(s) for s in r.schedules],
        "latency_p50_seconds": p50,
        "latency_p99_seconds": p99,
        "messages_per_second": r.campaign.messages / r.wall_seconds,
        "wall_seconds": r.wall_seconds,
        "unattributed_replies": r.unattributed[:20],
        "files_at_end": r.files_at_end,
        "problems": r.problems,
        "kill_sim_days": [ms / DAY_MS for ms in r.kill_sim_ms],
        "samples": [asdict(s) for s in r.samples],
        "marks": [{"sim_day": ms / DAY_MS, "kind": kind} for ms, kind in r.marks],
        **cluster_json(r),
    }


def draw(r: YearResult, path: Path) -> None:
    """One PNG: RSS, open files, disk, p99 turn latency and tokens per model call over the year,
    the kills marked (and the switch to PostgreSQL: what changes after it is the point)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    start = r.samples[0].sim_ms if r.samples else 0
    days = [(s.sim_ms - start) / DAY_MS for s in r.samples]
    fig, axes = plt.subplots(5, 1, figsize=(10, 11), sharex=True)
    series = [
        ("RSS (MB)", [s.rss / MB for s in r.samples]),
        ("open files", [float(s.fds) for s in r.samples]),
        ("disk used (MB)", [s.disk / MB for s in r.samples]),
    ]
    for ax, (label, values) in zip(axes[:3], series, strict=False):
        ax.plot(days, values, lw=0.8)
        ax.set_ylabel(label)
    buckets: dict[int, list[float]] = defaultdict(list)
    width = max(1.0, r.sim_days / 100)
    for at, seconds in r.latencies:
        buckets[int(at / DAY_MS / width)].append(seconds)
    xs = sorted(buckets)
    p99 = [sorted(buckets[x])[max(0, int(len(buckets[x]) * 0.99) - 1)] * 1000 for x in xs]
    axes[3].plot([x * width for x in xs], p99, lw=0.8, marker=".", ms=2)
    axes[3].set_ylabel("p99 turn (ms)")
    axes[3].set_yscale("log")
    step = max(1, len(r.model_calls) // 20_000)
    for kind, colour in (
        ("gpt-4o-mini", "tab:blue"),
        ("gpt-4o", "tab:green"),
        ("summary", "tab:orange"),
    ):
        calls = [c for c in r.model_calls[::step] if c[2] == kind]
        axes[4].scatter(
            [c[0] / DAY_MS for c in calls], [c[1] for c in calls], s=1, c=colour, label=kind
        )
    for window in (8192, 32768):
        axes[4].axhline(window, color="red", lw=0.6, ls="--")
    axes[4].set_ylabel("tokens per model call")
    axes[4].legend(loc="upper right", markerscale=6, fontsize=7)
    axes[4].set_xlabel("simulated day")
    switch_ms = r.cluster.switch_sim_ms if r.cluster is not None else None
    for ax in axes:
        for kill in r.kill_sim_ms:
            ax.axvline(kill / DAY_MS, color="grey", lw=0.5, alpha=0.6)
        if switch_ms is not None:
            ax.axvline(switch_ms / DAY_MS, color="tab:red", lw=1.0, ls="--")
    _mark(axes[0], r.marks)
    switched = ", the switch to PostgreSQL (red dashes)" if switch_ms is not None else ""
    fig.suptitle(
        f"duragent, {r.title}: {r.campaign.messages:,} messages, {r.campaign.kills} kills "
        f"(grey lines){switched}, {r.sim_days:.0f} days in {r.wall_seconds / 60:.1f} min"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _mark(ax: Any, marks: list[tuple[int, str]]) -> None:
    """A tick per marked event (a world's attempts) along the top of ``ax``, a colour a kind."""
    kinds = sorted({kind for _ms, kind in marks})
    colours = [f"C{i % 10}" for i in range(len(kinds))]
    for kind, colour in zip(kinds, colours, strict=True):
        days = [ms / DAY_MS for ms, k in marks if k == kind]
        ax.plot(
            days,
            [1.0] * len(days),
            "|",
            color=colour,
            ms=8,
            label=kind,
            transform=ax.get_xaxis_transform(),
            clip_on=False,
        )
    if kinds:
        ax.legend(loc="lower left", fontsize=6, ncol=4, title="attempts", title_fontsize=6)


def save(r: YearResult, json_path: Path | None, png_path: Path | None) -> None:
    """Write the JSON file and the picture where asked."""
    if json_path is not None:
        json_path.write_text(json.dumps(to_json(r), indent=1, default=str))
    if png_path is not None:
        draw(r, png_path)


def _ttl_rows(r: YearResult) -> list[tuple[str, str]]:
    """The TTL sweep on the simulated calendar (``ttl.py``)."""
    if r.ttl is None:
        return []
    t = r.ttl
    return [
        (
            f"TTL {t.ttl_hours / 24:.1f} days: chats silent past it / ended",
            f"{t.lapsed} / {t.ended}",
        ),
        ("  chats active within it / one active session", f"{t.talking} / {t.kept}"),
    ]
