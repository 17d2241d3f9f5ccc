"""Load one agent folder (``agent.yaml`` + Markdown) into an ``Agent``.

Loading is all-or-nothing per agent: any error raises ``ConfigErrors`` listing every problem
found in that folder, each with file, line, field, value and fix. Problems that do not stop
the agent from working (an unknown key, a skill with a bad name) are kept as warnings on the
agent and shown by ``duragent doctor``. ``check_agent`` is the same reading without raising:
it goes on past an unset ``${VAR}`` and past fields that fail validation
(``config.checkup``), so one run of ``doctor`` names every problem of a broken agent, its
warnings included.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duragent.agents.directives import Directive, load_directives, with_runtime_defaults
from duragent.agents.exposure import exposure_warnings
from duragent.agents.protected import in_files_folder
from duragent.agents.skills import Skill, load_skills
from duragent.agents.spec import KNOWN_PROVIDERS, AgentManifest, AgentSpec, ModelSpec
from duragent.config.checkup import by_line, parse_all
from duragent.config.fields import unsupported_warnings
from duragent.config.validation import unknown_key_warnings, validate_all
from duragent.config.wording import did_you_mean
from duragent.config.yamlio import LocatedYaml, load_yaml_text, read_text
from duragent.errors import ConfigError, ConfigErrors

__all__ = [
    "AGENT_FILENAME",
    "KNOWN_BUILTIN_TOOLS",
    "Agent",
    "AgentCheck",
    "check_agent",
    "load_agent",
]

AGENT_FILENAME = "agent.yaml"

KNOWN_BUILTIN_TOOLS = (
    "bash",
    "web",
    "schedule",
    "session",
    "memory",
    "reload_tools",
    "background_process",
    "tool_output",
    "record_decision",
    "send_file",
)


@dataclass(frozen=True, slots=True)
class Agent:
    """A loaded, validated agent: its manifest, prompt texts, skills and directives."""

    name: str
    directory: Path
    manifest: AgentManifest
    soul: str | None
    system_prompt: str | None
    instructions: str | None
    skills: tuple[Skill, ...]
    directives: tuple[Directive, ...]
    warnings: tuple[ConfigError, ...]
    written: Any = None
    """``agent.yaml`` parsed *without* ``${VAR}`` expansion (None if that does not parse):
    what the agents API shows, so expanded secrets are never served."""

    @property
    def spec(self) -> AgentSpec:
        """The ``spec`` section."""
        return self.manifest.spec

    @property
    def model(self) -> ModelSpec:
        """The ``spec.model`` section."""
        return self.manifest.spec.model

    @property
    def description(self) -> str | None:
        """``metadata.description``."""
        return self.manifest.metadata.description


def _prompt(
    agent_dir: Path,
    doc: LocatedYaml,
    field: str,
    value: str | None,
    errors: list[ConfigError],
    *,
    external: bool,
) -> str | None:
    """The prompt file's text; a file resolving outside the agent's folder needs opting in.

    ``system_prompt`` and ``instructions`` are served by ``GET /api/v1/agents/{name}``, so a
    path like ``../../../../etc/passwd`` (or a symlink) would publish any readable file.
    """
    if value is None:
        return None
    path = (agent_dir / value).resolve()
    if not external and not path.is_relative_to(agent_dir.resolve()):
        errors.append(
            ConfigError(
                "prompt file resolves outside the agent's folder",
                file=doc.file,
                line=doc.line_of(("spec", field)),
                field=f"spec.{field}",
                value=value,
                fix="move the file into the agent's folder, or set spec.allow_external_files: "
                "true if sharing it is intended",
            )
        )
        return None
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        errors.append(
            ConfigError(
                "referenced file does not exist",
                file=doc.file,
                line=doc.line_of(("spec", field)),
                field=f"spec.{field}",
                value=value,
                fix=f"create {path} or remove the field",
            )
        )
    except (OSError, UnicodeDecodeError) as exc:
        errors.append(
            ConfigError(
                f"cannot read referenced file: {exc}",
                file=doc.file,
                line=doc.line_of(("spec", field)),
                field=f"spec.{field}",
                value=value,
            )
        )
    return None


def _check_model(model: ModelSpec, doc: LocatedYaml, errors: list[ConfigError]) -> None:
    if model.provider not in KNOWN_PROVIDERS and not model.base_url:
        close = did_you_mean(model.provider, KNOWN_PROVIDERS)
        errors.append(
            ConfigError(
                "unknown provider and no base_url",
                file=doc.file,
                line=doc.line_of(("spec", "model", "provider")),
                field="spec.model.provider",
                value=model.provider,
                allowed=", ".join(KNOWN_PROVIDERS),
                fix=(f"{close} Or" if close else "use a known provider, or")
                + " set spec.model.base_url to an OpenAI-compatible server",
            )
        )


def _tool_warnings(spec: AgentSpec, doc: LocatedYaml) -> list[ConfigError]:
    found = []
    for i, tool in enumerate(spec.tools):
        if tool.type == "builtin" and tool.name not in KNOWN_BUILTIN_TOOLS:
            found.append(
                ConfigError(
                    "unknown builtin tool (skipped)",
                    file=doc.file,
                    line=doc.line_of(("spec", "tools", i, "name")),
                    field=f"spec.tools[{i}].name",
                    value=tool.name,
                    allowed=", ".join(KNOWN_BUILTIN_TOOLS),
                    fix=did_you_mean(tool.name, KNOWN_BUILTIN_TOOLS)
                    or "use one of the allowed names, or remove the entry",
                )
            )
        elif tool.name == "record_decision" and spec.session.context.summaries.enabled is False:
            found.append(
                ConfigError(
                    "record_decision pins decisions for the summaries tier, which is off here "
                    "(the tool is not offered)",
                    file=doc.file,
                    line=doc.line_of(("spec", "tools", i, "name")),
                    field=f"spec.tools[{i}].name",
                    value=tool.name,
                    fix="remove the entry, or set spec.session.context.summaries.enabled: true",
                )
            )
    return found


_GUARD_FIELDS = {"depends_on": ("prior", "match_arg"), "skip_duplicate": ("match_args",)}


def _hook_warnings(spec: AgentSpec, doc: LocatedYaml) -> list[ConfigError]:
    """Guards that can never refuse, and guard fields their type does not read."""
    found = []
    for i, hook in enumerate(spec.hooks.before_tool):
        at = ("spec", "hooks", "before_tool", i)
        needed = "prior" if hook.type == "depends_on" else "match_args"
        if not getattr(hook, needed):
            found.append(
                ConfigError(
                    f"a {hook.type} guard without '{needed}' never refuses a call",
                    file=doc.file,
                    line=doc.line_of(at),
                    field=f"spec.hooks.before_tool[{i}]",
                    fix=f"add '{needed}: …' (see the README's Hooks section) or remove the guard",
                )
            )
        unread = {
            name: other
            for other, names in _GUARD_FIELDS.items()
            if other != hook.type
            for name in names
            if getattr(hook, name)
        }
        found.extend(
            ConfigError(
                f"'{name}' has no effect on a {hook.type} guard (only {other} reads it)",
                file=doc.file,
                line=doc.line_of((*at, name)),
                field=f"spec.hooks.before_tool[{i}].{name}",
                fix=f"remove it, or make the guard type: {other}",
            )
            for name, other in unread.items()
        )
    return found


def _files_folder_errors(agent_dir: Path, spec: AgentSpec, doc: LocatedYaml) -> list[ConfigError]:
    """A prompt, skill or tool file in ``files/``, where every chat's tools write, is refused."""
    named: list[tuple[tuple[str | int, ...], str, str | None]] = [
        (("spec", key), f"spec.{key}", getattr(spec, key))
        for key in ("soul", "system_prompt", "instructions", "skills_dir")
    ]
    for i, tool in enumerate(spec.tools):
        if tool.type == "cli":
            named.extend(
                (("spec", "tools", i, key), f"spec.tools[{i}].{key}", getattr(tool, key))
                for key in ("command", "readme")
            )
    return [
        ConfigError(
            "a definition file may not be in the agent's files folder: it holds the files "
            "people send, and tools write there",
            file=doc.file,
            line=doc.line_of(path),
            field=field,
            value=value,
            fix="move it out of files/ and point the field at its new place",
        )
        for path, field, value in named
        if value is not None and in_files_folder(agent_dir, value)
    ]


@dataclass(frozen=True, slots=True)
class AgentCheck:
    """One agent folder read through: the agent if it loads, every error, every warning."""

    agent: Agent | None
    errors: tuple[ConfigError, ...]
    warnings: tuple[ConfigError, ...]
    parsed: bool = True
    """False when ``agent.yaml`` could not be read or parsed as YAML (one error says why)."""


def load_agent(
    agent_dir: Path,
    *,
    workspace_directives: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Agent:
    """Load and validate the agent in ``agent_dir``; raise ConfigErrors on any error."""
    check = check_agent(agent_dir, workspace_directives=workspace_directives, env=env)
    if check.agent is not None:
        return check.agent
    if not check.parsed and len(check.errors) == 1:
        raise check.errors[0]
    raise ConfigErrors(list(check.errors))


def check_agent(
    agent_dir: Path,
    *,
    workspace_directives: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> AgentCheck:
    """Every problem of the agent in ``agent_dir`` (module docstring); never raises for one."""
    file = agent_dir / AGENT_FILENAME
    try:
        raw = read_text(file)
    except ConfigError as exc:
        return AgentCheck(None, (exc,), (), parsed=False)
    doc, expanded, stopped = parse_all(raw, file=file, env=env)
    if doc is None:
        return AgentCheck(None, tuple(by_line([*expanded.problems, *stopped])), (), parsed=False)
    written = doc.data
    if expanded.text != raw:  # keep the file's own ${VAR} text: the agents API serves that
        try:
            written = load_yaml_text(raw, file=file).data
        except ConfigError:
            written = None
    manifest, invalid, doc = validate_all(AgentManifest, doc, what="agent.yaml")
    if manifest is None:
        errors = by_line([*expanded.problems, *expanded.independent(invalid)])
        return AgentCheck(None, tuple(errors), ())
    errors = list(invalid)
    _check_model(manifest.spec.model, doc, errors)
    spec = manifest.spec
    external = spec.allow_external_files
    soul = _prompt(agent_dir, doc, "soul", spec.soul, errors, external=external)
    system_prompt = _prompt(
        agent_dir, doc, "system_prompt", spec.system_prompt, errors, external=external
    )
    instructions = _prompt(
        agent_dir, doc, "instructions", spec.instructions, errors, external=external
    )
    for i, tool in enumerate(spec.tools):
        if tool.type == "cli" and not (agent_dir / tool.command).is_file():
            missing = not (agent_dir / tool.command).exists()
            errors.append(
                ConfigError(
                    "CLI tool command does not exist"
                    if missing
                    else "CLI tool command is not a file",
                    file=file,
                    line=doc.line_of(("spec", "tools", i, "command")),
                    field=f"spec.tools[{i}].command",
                    value=tool.command,
                    fix=f"create {agent_dir / tool.command} or fix the path",
                )
            )
    errors += _files_folder_errors(agent_dir, spec, doc)
    errors = by_line([*expanded.problems, *expanded.independent(errors)])
    warnings = unknown_key_warnings(manifest, doc) + _tool_warnings(spec, doc)
    warnings += unsupported_warnings("agent", doc) + _hook_warnings(spec, doc)
    warnings += exposure_warnings(agent_dir, manifest, written, doc)
    if manifest.metadata.name != agent_dir.name:
        warnings.append(
            ConfigError(
                "metadata.name differs from the directory name; policy files are looked up by "
                "agent name",
                file=file,
                line=doc.line_of(("metadata", "name")),
                field="metadata.name",
                value=manifest.metadata.name,
                fix=f"rename the directory to {manifest.metadata.name!r} or set the name to "
                f"{agent_dir.name!r}",
            )
        )
    skills, skill_problems = load_skills(
        (agent_dir / spec.skills_dir).resolve(),
        # Skills may be shared by agents: a skills_dir next to the agents (the reference's
        # ``../shared-skills``) is fine; anything farther needs the opt-in.
        confine_to=None if external else agent_dir.resolve().parent,
    )
    warnings = expanded.independent(warnings) + skill_problems
    if errors:
        return AgentCheck(None, tuple(errors), tuple(warnings))
    directives = with_runtime_defaults(
        load_directives(workspace_directives or agent_dir / "__none__", agent_dir / "directives"),
        memory=spec.memory is not None,
        agent_dir=agent_dir,
    )
    agent = Agent(
        name=manifest.metadata.name,
        directory=agent_dir,
        manifest=manifest,
        soul=soul,
        system_prompt=system_prompt,
        instructions=instructions,
        skills=tuple(skills),
        directives=tuple(directives),
        warnings=tuple(warnings),
        written=written,
    )
    return AgentCheck(agent, (), tuple(warnings))
