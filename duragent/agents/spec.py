"""``agent.yaml``: the typed model of an agent definition.

Field names, nesting and defaults follow the reference (giosakti/duragent v0.5.4) so its agents
load unchanged, with one deliberate difference: ``max_history_tokens`` defaults to 20,000 as the
context-window spec says (the reference's code used 40,000). Unknown keys are kept and reported
as warnings; values that would hurt (a bad enum, zero where a positive number is needed) are
errors. Two large sections have modules of their own, named here too: ``spec.session``
(``session_spec``) and ``spec.access`` (``access_spec``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    Field,
    field_validator,
    model_validator,
)

from duragent.agents.access_spec import (
    AccessPolicy,
    AccessSpec,
    ContextBufferSpec,
    DebounceSpec,
    DmAccess,
    GroupAccess,
    QueueSpec,
    QuotaSpec,
    SenderDisposition,
)
from duragent.agents.session_spec import (
    ContextSpec,
    PruneSpec,
    SavedOutputsSpec,
    SessionSpec,
    SummariesSpec,
)
from duragent.config.section import Section as _Spec
from duragent.core.net_rules import parse_allow_rule

__all__ = [
    "AGENT_NAME_PATTERN",
    "API_VERSION",
    "AccessPolicy",
    "AccessSpec",
    "AfterToolHook",
    "AgentManifest",
    "AgentSpec",
    "BeforeToolHook",
    "BuiltinToolSpec",
    "CliToolSpec",
    "ContextBufferSpec",
    "ContextSpec",
    "DebounceSpec",
    "DmAccess",
    "GroupAccess",
    "HooksSpec",
    "MemorySpec",
    "Metadata",
    "ModelSpec",
    "PricingSpec",
    "PruneSpec",
    "QueueSpec",
    "QuotaSpec",
    "SavedOutputsSpec",
    "ScheduleSpec",
    "SenderDisposition",
    "SessionSpec",
    "SummariesSpec",
    "ToolSpec",
]

API_VERSION = "duragent/v1alpha1"

KNOWN_PROVIDERS = ("anthropic", "openai", "openrouter", "ollama", "offline")


class PricingSpec(_Spec):
    """``spec.model.pricing``: what the provider charges, to record the cost of every call."""

    input_per_million: float = Field(ge=0, description="USD per million prompt tokens.")
    output_per_million: float = Field(ge=0, description="USD per million completion tokens.")

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """USD for one call."""
        return (
            prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million
        ) / 1_000_000


class ModelSpec(_Spec):
    """``spec.model``: which LLM answers and how much it may read and write."""

    provider: str = Field(
        description="anthropic, openai, openrouter, ollama, offline, or any name with a base_url "
        "pointing at an OpenAI-compatible server.",
    )
    name: str = Field(min_length=1, description="Model name as the provider knows it.")
    base_url: str | None = Field(default=None, description="Override the provider's API URL.")
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_input_tokens: int | None = Field(
        default=None, gt=0, description="Context window; default from the model name."
    )
    max_output_tokens: int | None = Field(
        default=None,
        gt=0,
        validation_alias=AliasChoices("max_output_tokens", "max_tokens"),
        description="Tokens reserved for the reply; when unset, a quarter of the window "
        "between 256 and 4096. Alias: max_tokens.",
    )
    pricing: PricingSpec | None = Field(
        default=None, description="Optional prices; when set, each call's cost is recorded."
    )
    vision: bool | None = Field(
        default=None,
        description="Whether the model can see images (they are sent to it); when unset, "
        "decided from the model name by a table of known vision models (unknown: no).",
    )
    attachment_turns: int = Field(
        default=3,
        ge=1,
        le=1000,
        description="For how many turns, counting the one it came with, an image is sent to a "
        "model that can see and a text file's text is inlined; after that each is one line "
        "naming the file, which the agent's tools can still open. When the window is short, "
        "images give way to those lines before any history is left out.",
    )

    @field_validator("provider")
    @classmethod
    def _lower(cls, value: str) -> str:
        return value.strip().lower()

    @field_validator("name")
    @classmethod
    def _strip(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("model name must not be blank")
        return value.strip()


class BuiltinToolSpec(_Spec):
    """A tool shipped with duragent (``bash``, ``web``, ``schedule``, ``session``, …).

    ``allow_private`` and ``max_body_bytes`` are options of ``web`` only: the non-public hosts,
    addresses or networks it may fetch (it reaches only public ones by default, so a page or a
    prompt-injected model cannot make it read this server's API or the local network), and the
    decoded body size it reads at most.
    """

    type: Literal["builtin"]
    name: str = Field(min_length=1)
    allow_private: list[str] = Field(
        default=[], description="web only: 127.0.0.1:3000, 10.0.0.0/8, [::1]:8080, wiki.internal"
    )
    max_body_bytes: int | None = Field(
        default=None, gt=0, le=64 * 1024 * 1024, description="web only; default 1 MiB."
    )

    @field_validator("allow_private")
    @classmethod
    def _valid_rules(cls, value: list[str]) -> list[str]:
        for entry in value:
            parse_allow_rule(entry)  # raises ValueError naming the entry and the forms
        return value

    @model_validator(mode="after")
    def _web_options_on_web_only(self) -> BuiltinToolSpec:
        if self.name != "web" and (self.allow_private or self.max_body_bytes is not None):
            raise ValueError("allow_private and max_body_bytes are options of the web tool only")
        return self


class CliToolSpec(_Spec):
    """A script run as a tool; ``command`` is relative to the agent directory."""

    type: Literal["cli"]
    name: str = Field(min_length=1)
    command: str = Field(min_length=1)
    readme: str | None = None
    description: str | None = None


ToolSpec = Annotated[BuiltinToolSpec | CliToolSpec, Field(discriminator="type")]


class MemorySpec(_Spec):
    """``spec.memory``: its presence enables the memory tool."""

    backend: Literal["filesystem"] = "filesystem"


class BeforeToolHook(_Spec):
    """A guard checked before a tool runs."""

    match: str = Field(alias="match")
    type: Literal["depends_on", "skip_duplicate"]
    prior: str | None = None
    match_arg: str | None = None
    match_args: list[str] = []


class AfterToolHook(_Spec):
    """A steering message appended after a tool succeeds."""

    match: str
    message: str
    unless: dict[str, Any] = Field(
        default={},
        description="Any argument with a key here and an equal value (any YAML value: true, 3, "
        '"x") suppresses the message.',
    )


class HooksSpec(_Spec):
    """``spec.hooks``."""

    before_tool: list[BeforeToolHook] = []
    after_tool: list[AfterToolHook] = []


AGENT_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
"""What ``metadata.name`` (and so an agent's folder name) may be: no spaces, no slashes."""


class Metadata(_Spec):
    """``metadata``: identity of the agent."""

    name: str = Field(min_length=1, pattern=AGENT_NAME_PATTERN)
    description: str | None = None
    version: str | None = None
    labels: dict[str, str] = {}


class ScheduleSpec(_Spec):
    """``spec.schedules[]``: a schedule the agent declares (no ``schedule`` tool call needed).

    The same fields as a schedule file (``.duragent/schedules/<id>.yaml``) less ``id``,
    ``agent``, ``created_at`` and ``status``: ``name`` makes its id (``decl_<agent>_<name>``,
    stable across restarts so its run log carries over). ``schedule``, ``payload``,
    ``destination`` and ``retry`` are checked by the scheduler when it loads the agent.
    """

    name: str = Field(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9_-]*$")
    schedule: dict[str, dict[str, str | int]] = Field(
        description="Exactly one of at: {at: RFC 3339}, every: {every_seconds, anchor?}, "
        "cron: {expr: '0 9 * * MON-FRI', tz?: IANA zone}."
    )
    payload: dict[str, dict[str, str]] = Field(
        description="Exactly one of message: {message: text} or task: {task: instruction}."
    )
    destination: dict[str, str | int] | None = Field(
        default=None,
        description="{gateway, chat_id}: the chat that receives the result; without it a "
        "task runs in a session of its own.",
    )
    retry: dict[str, int] | None = Field(
        default=None, description="{max_retries (3), initial_delay_ms (1000), max_delay_ms}"
    )


RUNTIME_COMMANDS = frozenset({"start", "help", "reset", "status", "pin", "unpin", "pair"})
"""The chat commands the runtime answers itself (``frontkit.commands``): an agent's own
commands (``spec.chat.commands``) may not take these names."""


class ChatCommandSpec(_Spec):
    """``spec.chat.commands[]``: a command of the agent's own, offered in the chat's menu.

    The runtime does not run it: the message goes to the model like any other (the agent's
    instructions say what it means); in a group it addresses the bot as a mention does.
    """

    command: str = Field(
        pattern=r"^[a-z0-9_]{1,32}$",
        description="The name without its slash: 1-32 of a-z, 0-9 and _ (Telegram's rule).",
    )
    description: str = Field(
        min_length=1, max_length=256, description="One line, for the menu and for /help."
    )

    @field_validator("command")
    @classmethod
    def _not_the_runtimes(cls, value: str) -> str:
        if value in RUNTIME_COMMANDS:
            raise ValueError(f"/{value} is answered by the runtime; give the command another name")
        return value

    @field_validator("description")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a command's description must not be blank")
        return value.strip()


class ChatSpec(_Spec):
    """``spec.chat``: what the runtime itself answers in a chat, on every chat gateway.

    In either message ``{commands}`` is replaced by the commands the reader may use (an
    owner sees the owners' too).
    """

    start_message: str | None = Field(
        default=None,
        description="The answer to /start. Unset: a greeting naming the agent and saying how "
        "to talk to it.",
    )
    help_message: str | None = Field(
        default=None,
        description="The answer to /help. Unset: how to talk to the agent, then the commands "
        "the reader may use.",
    )
    commands: list[ChatCommandSpec] = Field(
        default=[],
        max_length=50,
        description="The agent's own commands, shown in the command menu and by /help; a "
        "message with one goes to the model.",
    )

    @field_validator("commands")
    @classmethod
    def _unique(cls, value: list[ChatCommandSpec]) -> list[ChatCommandSpec]:
        names = [c.command for c in value]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"commands named twice: {', '.join(twice)}")
        return value


class AgentSpec(_Spec):
    """``spec``: everything that shapes the agent's behaviour."""

    model: ModelSpec
    chat: ChatSpec = ChatSpec()
    soul: str | None = Field(default=None, description="Path to SOUL.md, relative to the agent.")
    system_prompt: str | None = None
    instructions: str | None = None
    skills_dir: str = "./skills/"
    allow_external_files: bool = Field(
        default=False,
        description="Allow soul, system_prompt, instructions and skills to resolve (after "
        "symlinks) outside the agent's folder.",
    )
    session: SessionSpec = SessionSpec()
    tools: list[ToolSpec] = []
    access: AccessSpec | None = None
    memory: MemorySpec | None = None
    hooks: HooksSpec = HooksSpec()
    schedules: list[ScheduleSpec] = []


class AgentManifest(_Spec):
    """A whole ``agent.yaml`` document."""

    api_version: Literal["duragent/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["Agent"]
    metadata: Metadata
    spec: AgentSpec
