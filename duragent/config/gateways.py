"""``gateways:`` and ``routes:`` of ``duragent.yaml``: the chat platforms and who answers.

Telegram and Discord are built in (``gateways.telegram``, ``gateways.discord``); any other
platform is a child process speaking the reference's plugin protocol
(``gateways.external[]``). Tokens are checked for their shape at load, so a pasted token with
a stray character fails with a clear message instead of at the platform's first refusal.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from duragent.config.section import Section
from duragent.config.wording import did_you_mean
from duragent.config.yamlio import LocatedYaml
from duragent.errors import ConfigError

__all__ = [
    "DISCORD_TOKEN_HELP",
    "TELEGRAM_TOKEN_HELP",
    "DiscordConfig",
    "ExternalGatewayConfig",
    "GatewayConfig",
    "GatewaysConfig",
    "RestartPolicy",
    "RouteConfig",
    "RouteMatch",
    "TelegramConfig",
    "route_warnings",
]


class GatewayConfig(Section):
    """``gateways.telegram`` / ``gateways.discord``: a built-in chat gateway."""

    enabled: bool = True
    bot_token: str | None = None
    delivery_retry_seconds: float = Field(default=600.0, gt=0, le=86_400)
    """Ours: how long a message the platform refuses for a while (flood control, 5xx, the
    network) is retried, in the chat's order, before the chat is told it was not delivered."""


TELEGRAM_TOKEN_HELP = (
    "set gateways.telegram.bot_token (e.g. ${TELEGRAM_BOT_TOKEN}) to the token @BotFather gave"
)
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_-]+")


class TelegramConfig(GatewayConfig):
    """``gateways.telegram``: the reference's fields plus ours (README, "Telegram")."""

    base_url: str | None = None
    """A self-hosted Bot API server (``http://localhost:8081``); duragent adds ``/bot<token>``."""
    webhook_url: str | None = None
    """Receive updates by webhook at this public HTTPS address instead of long polling."""
    webhook_secret: str | None = None
    """Telegram sends it in ``X-Telegram-Bot-Api-Secret-Token``; a request without it is refused."""
    poll_timeout_seconds: int = Field(default=30, ge=0, le=600)
    """How long one ``getUpdates`` call waits for an update (long polling)."""
    max_messages_per_second: float = Field(default=30.0, gt=0)
    """The bot's overall send rate (Telegram allows about 30 a second)."""
    max_messages_per_minute_per_group: float = Field(default=20.0, gt=0)
    """Each group's send rate (Telegram allows about 20 a minute)."""
    max_messages_per_second_per_chat: float = Field(default=1.0, gt=0)
    """Each private chat's send rate (Telegram allows about one a second)."""

    @field_validator("base_url", "webhook_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value

    def token_problem(self) -> str | None:
        """Why ``bot_token`` cannot be a Telegram bot token, or None (checked without a call).

        @BotFather's tokens are ``<bot id>:<35 letters, digits, - or _>``; anything else is a
        paste error or an unexpanded variable, said before a request is made.
        """
        token = self.bot_token
        if not token:
            return f"gateways.telegram.bot_token is empty: {TELEGRAM_TOKEN_HELP}"
        head, sep, tail = token.partition(":")
        if not (sep and head.isdigit() and len(tail) >= 30 and _TOKEN_TAIL.fullmatch(tail)):
            return (
                "gateways.telegram.bot_token does not look like a bot token (expected "
                f"<digits>:<about 35 letters, digits, - or _>): {TELEGRAM_TOKEN_HELP}"
            )
        return None


DISCORD_TOKEN_HELP = (
    "set gateways.discord.bot_token (e.g. ${DISCORD_BOT_TOKEN}) to the token of the bot on "
    "the Discord Developer Portal (Applications → your app → Bot → Reset Token)"
)
_DISCORD_TOKEN_PART = re.compile(r"[A-Za-z0-9_-]+")


class DiscordConfig(GatewayConfig):
    """``gateways.discord``: the reference's fields plus ``base_url`` (README, "Discord")."""

    base_url: str | None = None
    """A Discord-compatible API server instead of discord.com (a test double, a proxy):
    REST at ``<base_url>/api/v10``, the gateway websocket at ``<base_url>/gateway``."""

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value

    def token_problem(self) -> str | None:
        """Why ``bot_token`` cannot be a Discord bot token, or None (checked without a call).

        A bot token is three dot-separated parts of letters, digits, ``-`` and ``_`` (the
        bot's id, a timestamp, a signature); anything else is a paste error or an unexpanded
        variable, said before Discord is asked.
        """
        token = self.bot_token
        if not token:
            return f"gateways.discord.bot_token is empty: {DISCORD_TOKEN_HELP}"
        if token.lower().startswith("bot "):
            return (
                "gateways.discord.bot_token starts with 'Bot ': give the token alone (duragent "
                f"adds the prefix): {DISCORD_TOKEN_HELP}"
            )
        parts = token.split(".")
        if len(parts) != 3 or not all(_DISCORD_TOKEN_PART.fullmatch(p) for p in parts):
            return (
                "gateways.discord.bot_token does not look like a bot token (expected three "
                f"parts separated by dots, e.g. MTA4...xyz.GAbc12.abc...): {DISCORD_TOKEN_HELP}"
            )
        return None


_GATEWAY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
RestartPolicy = Literal["always", "on_failure", "never"]


def _env_value(value: object) -> object:
    """A number or a boolean in ``env`` is the text YAML read it from (``PORT: 8080``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


class ExternalGatewayConfig(Section):
    """``gateways.external[]``: a gateway plugin run as a child process (JSON lines on stdio).

    ``command`` is resolved when the gateway starts (``gateways.external.launch``): an
    absolute path as it is, a path with a ``/`` against the config file's directory, a bare
    name in that directory if a file of that name is there, else on ``PATH``. ``env`` is added
    to duragent's own environment (``${VAR}`` expanded like the rest of the file).
    """

    name: str
    """The gateway's name: routes match it (``match.gateway``) and sessions are keyed by it."""
    command: str = Field(min_length=1)
    args: list[str] = []  # noqa: RUF012 (a pydantic field: copied per instance)
    env: dict[str, Annotated[str, BeforeValidator(_env_value)]] = {}  # noqa: RUF012
    restart: RestartPolicy = "on_failure"
    """When the child exits: ``always`` restart, ``on_failure`` (non-zero exit), ``never``."""
    bot_username: str | None = None
    """Ours: the bot's name on the platform, so ``/reset@<name>`` is a command there (a
    gateway may also say it as ``bot_username`` in its ``ready`` event)."""
    fans_out: bool = False
    """Ours: with several nodes on one database, the platform sends every message to every
    node running this gateway (as Discord does); the node serving the chat then takes it
    (``frontkit.owners``). Leave false for a platform that hands each message to one node."""
    delivery_retry_seconds: float = Field(default=600.0, gt=0, le=86_400)
    """Ours: how long a message the gateway refuses for a while (``command_error`` with code
    ``rate_limited``, ``timeout``, ``network_error`` or ``server_error``; the child restarting)
    is retried, in the chat's order, before the chat is told it was not delivered."""

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _GATEWAY_NAME.fullmatch(value):
            raise ValueError(
                "must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit "
                "(routes and session keys use it)"
            )
        return value


class GatewaysConfig(Section):
    """``gateways:``."""

    telegram: TelegramConfig | None = None
    discord: DiscordConfig | None = None
    external: list[ExternalGatewayConfig] = []  # noqa: RUF012 (a pydantic field)

    @model_validator(mode="after")
    def _names_are_unique(self) -> GatewaysConfig:
        taken: set[str] = set()
        for i, gateway in enumerate(self.external):
            if gateway.name == "openai":  # gateways/http/openai/routes.py keys its sessions so
                raise ValueError(
                    f"external[{i}].name 'openai' is the OpenAI-compatible API's (/v1): give "
                    "this gateway another name"
                )
            if gateway.name in taken:
                raise ValueError(
                    f"external[{i}].name {gateway.name!r} is already the name of another "
                    "gateway: give each gateway its own name"
                )
            taken.add(gateway.name)
        return self

    def builtin_names(self) -> set[str]:
        """The enabled built-in gateways."""
        return {
            name
            for name, builtin in (("telegram", self.telegram), ("discord", self.discord))
            if builtin is not None and builtin.enabled
        }

    def shadowed(self) -> list[int]:
        """Indexes of external gateways named like an enabled built-in one: not started.

        The reference's configuration guide itself writes ``gateways.discord`` and an external
        gateway named ``discord`` side by side (an external plugin stands in for a built-in
        its binary was compiled without). Such a file loads; the built-in is served and the
        external one is reported (``shadowed_warnings``) and not started, as two gateways of
        one name would share sessions and routes.
        """
        builtins = self.builtin_names()
        return [i for i, g in enumerate(self.external) if g.name in builtins]


class RouteMatch(Section):
    """Conditions of a routing rule; every present condition must match."""

    gateway: str | None = None
    chat_type: str | None = None
    chat_id: str | None = None
    sender_id: str | None = None


class RouteConfig(Section):
    """``routes[]``: first matching rule picks the agent for a chat."""

    match: RouteMatch = RouteMatch()
    agent: str


def route_warnings(
    gateways: GatewaysConfig, routes: Sequence[RouteConfig], doc: LocatedYaml
) -> list[ConfigError]:
    """A rule whose ``match.gateway`` names no configured gateway: it can never match."""
    names = sorted(
        {
            *(n for n, g in (("telegram", gateways.telegram), ("discord", gateways.discord)) if g),
            *(g.name for g in gateways.external),
        }
    )
    found = []
    for i, route in enumerate(routes):
        wanted = route.match.gateway
        if wanted is None or wanted.lower() in {n.lower() for n in names}:
            continue
        listed = f"use one of: {', '.join(names)}" if names else "configure it under gateways:"
        close = did_you_mean(wanted, [*names, "telegram", "discord"])
        found.append(
            ConfigError(
                "no gateway of this name is configured: the rule never matches",
                file=doc.file,
                line=doc.line_of(("routes", i, "match", "gateway")),
                field=f"routes[{i}].match.gateway",
                value=wanted,
                fix=f"{close} ({listed})" if close else listed,
            )
        )
    return found
