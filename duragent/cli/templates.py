"""Files ``duragent init`` and ``duragent agent create`` write (never over existing ones).

Placeholders are ``{agent}``, ``{provider}`` and ``{model}``, filled by ``render`` with plain
replacement (not ``str.format``) so YAML braces and ``${VAR}`` references stay literal.
"""

from __future__ import annotations

__all__ = [
    "AGENT_POLICY",
    "AGENT_YAML",
    "DURAGENT_YAML",
    "SOUL_MD",
    "SYSTEM_PROMPT_MD",
    "WORKSPACE_POLICY",
    "render",
]

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

AGENT_YAML = """\
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
