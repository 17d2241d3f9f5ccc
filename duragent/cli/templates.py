"""Files ``duragent init`` and ``duragent agent create`` write (never over existing ones).

Placeholders are ``{agent}``, ``{provider}`` and ``{model}``, filled by ``render`` with plain
replacement (not ``str.format``) so YAML braces and ``${VAR}`` references stay literal.
"""

from __future__ import annotations

__all__ = [
    "ACCESS_BLOCK",
    "AGENT_POLICY",
    "AGENT_YAML",
    "DURAGENT_YAML",
    "SOUL_MD",
    "SYSTEM_PROMPT_MD",
    "WORKSPACE_POLICY",
    "render",
]

ACCESS_BLOCK = """\
  # Who may talk to the agent, and with whose authority (a bot many people can reach).
  access:
    owners: {}                  # user ids acting with your authority, per platform:
    #   telegram: ["123456789"]
    #   discord: ["112233445566778899"]
    dm:
      policy: open              # open | allowlist | pairing | disabled
      # allowlist: ["123456789"]  # allowlist/pairing: these ids need no code
      # pairing: a stranger gets a one-time code; an owner approves it with /pair <code>
      # in a chat with the bot, or `duragent pairing approve <code>`
    groups:
      activation: mention       # answer mentions, replies and commands | always
      # policy: open            # open | allowlist | disabled
      # allowlist: ["telegram:-1001234567890"]
    tool_scope: chat            # chat: tools see only the current chat | agent: owners reach all
    # quotas:                   # the defaults; 0 turns a limit off where noted
    #   schedules_per_chat: 20
    #   min_schedule_interval_seconds: 60
    #   messages_per_sender_per_minute: 60   # owners exempt; 0 = off
    #   tokens_per_chat_per_day: 1000000     # per UTC day; 0 = off
    #   background_processes_per_chat: 3
"""
"""The agent's ``spec.access`` as ``init`` writes it: the defaults, the choices in comments
(``examples/.duragent/agents/assistant/agent.yaml`` carries the same block)."""

DURAGENT_YAML = """\
# duragent workspace configuration. Every field is optional; ${VAR} and ${VAR:-default}
# are expanded from the environment. Paths are relative to this file.
workspace: .duragent

server:
  host: 127.0.0.1
  port: 8080
  # api_token: ${DURAGENT_API_TOKEN}     # without a token the API answers loopback only

sessions:
  ttl_hours: 168        # complete sessions idle this long; 0 disables
  compaction: archive   # archive | discard | disabled

# gateways:
#   telegram:
#     bot_token: ${TELEGRAM_BOT_TOKEN}
#   discord:
#     bot_token: ${DISCORD_BOT_TOKEN}

# routes:
#   - match: { gateway: telegram }
#     agent: {agent}
"""

AGENT_YAML = (
    """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: {agent}
  description: A helpful assistant
spec:
  model:
    provider: {provider}   # anthropic | openai | openrouter | ollama | offline | any with base_url
    name: {model}
    # base_url: http://localhost:11434/v1
    # max_input_tokens: 128000
    # max_output_tokens: 4096
  soul: ./SOUL.md
  system_prompt: ./SYSTEM_PROMPT.md
  session:
    on_disconnect: pause          # pause | continue
    max_tool_iterations: 10
    context:
      max_history_tokens: 20000   # 0 = no cap
      max_tool_result_tokens: 8000
  tools:
    - type: builtin
      name: bash
"""
    + ACCESS_BLOCK
)

SOUL_MD = """\
You are {agent}, a calm and precise assistant. You say what you know, say when you do not
know, and keep answers short unless asked for detail.
"""

SYSTEM_PROMPT_MD = """\
Help the user with their tasks. Use tools when an action is needed, and explain what you did.
Today is {{date}}.
"""

WORKSPACE_POLICY = """\
# Workspace policy: applies to every agent. Deny patterns always win.
apiVersion: duragent/v1alpha1
kind: Policy
deny:
  - "bash:rm -rf /*"
  - "bash:sudo *"
"""

AGENT_POLICY = """\
# Agent policy. mode: dangerous (allow all but deny) | ask (allow list, else ask) | restrict
apiVersion: duragent/v1alpha1
kind: Policy
mode: ask
allow:
  - "bash:ls *"
  - "bash:date"
"""


def render(template: str, **values: str) -> str:
    """Fill ``{name}`` placeholders; everything else is left exactly as written."""
    for key, value in values.items():
        template = template.replace("{" + key + "}", value)
    return template
