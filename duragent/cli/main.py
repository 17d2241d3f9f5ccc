"""Entry point of the ``duragent`` command.

Errors a person can fix (bad config, busy port, missing key) print as ``error: …`` lines and
exit 1; usage errors exit 2 and Ctrl-C 130; ``-v`` adds the traceback. Command names and
flags follow the reference CLI; ``-v``/``-q`` may come before or after the subcommand.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, ParamSpec, TypeVar

import httpx
import typer

from duragent import __version__
from duragent.agents import load_catalog
from duragent.cli import (
    completions,
    login,
    pairing_cmd,
    remote,
    schedules,
    serve_cmd,
    store_cmd,
    upgrade,
)
from duragent.cli import doctor as doctor_mod
from duragent.cli.completions import COMPLETE_VAR
from duragent.cli.errors import fail as _fail
from duragent.cli.errors import handles_errors, is_quiet, set_verbosity
from duragent.cli.logformat import remember_handlers
from duragent.cli.options import (
    DEFAULT_CONFIG,
    ConfigOpt,
    GlobalFlagsGroup,
    ModelOpt,
    ProviderOpt,
)
from duragent.cli.scaffold import DEFAULT_MODELS, check_agent, scaffold_agent, scaffold_workspace
from duragent.cli.workspaces import open_workspace, workspace_problem
from duragent.config import CONFIG_FILENAME
from duragent.llm.factory import PROVIDERS
from duragent.observability.logrepeat import collapse_repeats
from duragent.turns.agent_budget import budget_check

__all__ = ["app", "main"]

P = ParamSpec("P")
R = TypeVar("R")

app = typer.Typer(
    name="duragent",
    help="A durable runtime for AI chat agents.",
    cls=GlobalFlagsGroup,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: no "<bool>" beside every flag
    context_settings={"help_option_names": ["-h", "--help"]},  # inherited by every command
)
agent_app = typer.Typer(help="List and create agents.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(agent_app, name="agent")

AgentsDirOpt = Annotated[
    str | None,
    typer.Option("--agents-dir", help="Agents folder, relative to the workspace root."),
]
NoInteractiveOpt = Annotated[
    bool, typer.Option("--no-interactive", help="Never prompt; use the defaults.")
]


class DoctorOutput(enum.StrEnum):
    """Output formats of ``doctor``."""

    TEXT = "text"
    JSON = "json"


@contextlib.contextmanager
def _reported_here(logger: str) -> Iterator[None]:
    """Silence ``logger`` while a command prints the same problems itself (once, not twice)."""
    names = [logger, *(n for n in logging.root.manager.loggerDict if n.startswith(logger + "."))]
    loggers = [logging.getLogger(n) for n in names]
    before = [log.disabled for log in loggers]
    for log in loggers:
        log.disabled = True
    try:
        yield
    finally:
        for log, was in zip(loggers, before, strict=True):
            log.disabled = was


def _setup_logging(verbose: int, quiet: bool) -> None:
    level = logging.ERROR if quiet else (logging.DEBUG if verbose else logging.INFO)
    root = logging.getLogger()
    before = list(root.handlers)
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
        stream=sys.stderr,
    )
    # A flood of one error stays a few lines; only on the handler made here (a host that
    # configured logging itself, e.g. a test runner, keeps its handlers as they are).
    own = [h for h in root.handlers if h not in before]
    collapse_repeats(own)
    remember_handlers(own)  # switched by ``serve --log-format json`` (logformat.py)
    if verbose < 2:
        # httpx2/httpcore2: the HTTP client of the openai SDK 3.x (one INFO line per call).
        noisy_loggers = ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "anthropic")
        for noisy in (*noisy_loggers, "uvicorn.error"):
            logging.getLogger(noisy).setLevel(max(level, logging.WARNING))


def _version(value: bool) -> None:
    if value:
        typer.echo(f"duragent {__version__} (python)")
        raise typer.Exit()


@app.callback()
def _root(
    verbose: Annotated[
        int, typer.Option("-v", "--verbose", count=True, help="More output; -v shows tracebacks.")
    ] = 0,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="Errors only.")] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    set_verbosity(verbose, quiet)
    _setup_logging(verbose, quiet)


def _ask(prompt: str, default: str, interactive: bool) -> str:
    if not interactive:
        return default
    answer: str = typer.prompt(prompt, default=default)
    return answer.strip() or default


@app.command()
@handles_errors
def init(
    path: Annotated[Path, typer.Argument(help="Directory to create the workspace in.")] = Path(),
    agent_name: Annotated[
        str | None, typer.Option("--agent-name", help="Name of the first agent (assistant).")
    ] = None,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    no_interactive: NoInteractiveOpt = False,
) -> None:
    """Create a workspace: duragent.yaml, .duragent/ and one agent. Never overwrites files."""
    interactive = not no_interactive and sys.stdin.isatty()
    name = agent_name or _ask("Agent name", "assistant", interactive)
    chosen = provider or _ask(f"Provider ({', '.join(PROVIDERS)})", "offline", interactive)
    check_agent(name, chosen)  # before the model prompt, and before anything is written
    model_name = model or _ask("Model", DEFAULT_MODELS.get(chosen, ""), interactive)
    result = scaffold_workspace(path, name, chosen, model_name)
    for p in result.created:
        typer.echo(f"created {p}")
    for p in result.kept:
        typer.echo(f"kept existing {p}")
    _credential_hint(chosen)
    typer.echo(f"next: duragent serve -c {path / CONFIG_FILENAME}")


def _credential_hint(provider: str) -> None:
    info = PROVIDERS.get(provider)
    if info and info.key_env:
        typer.echo(f"note: export {info.key_env}=… before serving")
    elif provider == "offline":
        typer.echo(
            "note: the offline model answers with fixed text; switch spec.model to a real provider"
        )


@agent_app.command("list")
@handles_errors
def agent_list(
    config: ConfigOpt = DEFAULT_CONFIG,
    agents_dir: AgentsDirOpt = None,
    server: Annotated[
        str | None,
        typer.Option(
            "-s", "--server", envvar="DURAGENT_SERVER", help="Ask a running server instead."
        ),
    ] = None,
) -> None:
    """List agents (from disk, or from a running server with --server)."""
    if server:
        url = server.rstrip("/") + "/api/v1/agents"
        try:
            resp = httpx.get(url, timeout=10)
            resp.raise_for_status()
            data = resp.json()
        except httpx.HTTPError as exc:
            raise _fail(f"cannot list agents from {url}: {exc}") from None
        for a in data.get("agents", []):
            typer.echo(f"{a['name']:<24} {a.get('description') or ''}")
        return
    ws = open_workspace(config)
    directory = ws.paths.root / agents_dir if agents_dir else ws.paths.agents
    with _reported_here("duragent.agents"):  # broken agents are listed below
        catalog = load_catalog(
            directory,
            workspace_directives=ws.paths.directives,
            check=budget_check(ws.paths.workspace),
        )
    if not catalog.agents and not catalog.broken:
        typer.echo(f"no agents in {directory}")
    for name in catalog.names():
        a = catalog.agents[name]
        model = f"{a.model.provider}/{a.model.name}"
        typer.echo(f"{name:<24} {model:<36} {a.description or ''}")
    for path, error in sorted(catalog.broken.items()):
        first = error.render().splitlines()[0]
        typer.echo(f"{path.name:<24} {'BROKEN':<36} {first}")


@agent_app.command("create")
@handles_errors
def agent_create(
    name: Annotated[str, typer.Argument(help="Agent name (also its folder name).")],
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    config: ConfigOpt = DEFAULT_CONFIG,
    no_interactive: NoInteractiveOpt = False,
) -> None:
    """Scaffold a new agent in the workspace's agents directory."""
    ws = open_workspace(config)
    interactive = not no_interactive and sys.stdin.isatty()
    chosen = provider or _ask(f"Provider ({', '.join(PROVIDERS)})", "offline", interactive)
    check_agent(name, chosen)
    model_name = model or _ask("Model", DEFAULT_MODELS.get(chosen, ""), interactive)
    result = scaffold_agent(ws.paths.agents, name, chosen, model_name)
    for p in result.created:
        typer.echo(f"created {p}")
    for p in result.kept:
        typer.echo(f"kept existing {p}")
    _credential_hint(chosen)


@app.command()
@handles_errors
def doctor(
    config: ConfigOpt = DEFAULT_CONFIG,
    fmt: Annotated[
        DoctorOutput, typer.Option("--format", help="Output format.")
    ] = DoctorOutput.TEXT,
) -> None:
    """Validate the workspace and print every problem with its fix (exit 1 on errors).

    With -q only errors (and the summary line) are printed.
    """
    problem = workspace_problem(config)
    if problem:
        findings = [
            doctor_mod.Finding(doctor_mod.Level.ERROR, "config", problem.problem, problem.fix)
        ]
    else:
        with _reported_here("duragent.agents"):  # doctor prints broken agents itself
            findings = doctor_mod.run_checks(config)
    if fmt is DoctorOutput.JSON:
        typer.echo(doctor_mod.render_json(findings))
    else:
        typer.echo(doctor_mod.render_text(findings, errors_only=is_quiet()))
    if any(f.level is doctor_mod.Level.ERROR for f in findings):
        raise typer.Exit(1)


serve_cmd.register(app)
remote.register(app)
schedules.register(app)
pairing_cmd.register(app)
store_cmd.register(app)
completions.register(app)
login.register(app)
upgrade.register(app)


def main() -> None:
    """Console-script entry point (also ``python -m duragent``: same name, same completion)."""
    app(prog_name="duragent", complete_var=COMPLETE_VAR)
