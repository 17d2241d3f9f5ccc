"""Who may answer an approval in a chat, and what a chat is told when nobody in it may.

One decision for every chat platform (Telegram, Discord, external gateways): ``refusal``,
a pure function over the agent's ``spec.access`` (roles from ``agents.roles``), the chat,
the presser, the pending approval's requester and the decision pressed. ``ApprovalButtons``
asks it before anything is decided; it is the only way a chat reaches ``ChatTurns.decide``.
The HTTP API (``POST /api/v1/sessions/{id}/approve``) and the web console are the operator's
(the token holder, or a loopback client without one): they decide through the turn runner
and are not asked here.

The rules, in order (``specs/202612050000.many-people-one-bot.md``):

- an **owner** (``spec.access.owners.<gateway>``) may answer any approval, any way;
- a **blocked** sender (a group's ``block`` rule) or a **stranger** (the chat gate refuses
  them) may press nothing: their messages never reach the agent, nor do their presses;
- an approval **nobody in the chat asked for** (no ``requester_id``: a scheduled task, a
  background job's notice, a hook) is the owners' alone: the call was never a member's
  request, so a member's press would lend it an authority nobody here gave;
- otherwise only the **requester** may answer (the message that started the turn was theirs);
- **Allow Always** writes a rule to ``policy.local.yaml`` that every later call in every chat
  of the agent obeys: owners only (the requester may still Allow Once or Deny).

A chat whose type is not known (a session a schedule opened before anyone wrote in the
chat) might be a group: a sender the group rules block is refused there too.

An approval nobody asked for, in a chat of an agent that names no owner on that gateway,
could be answered by nobody in the chat: ``unanswerable_note`` is what the chat is told
alongside the buttons (how to name an owner, and where it can be decided meanwhile), so it
never waits silently.
"""

from __future__ import annotations

from collections.abc import Container

from duragent.agents.roles import access_of, role_of, sender_disposition
from duragent.agents.spec import AccessSpec
from duragent.turns import ApprovalDecision

__all__ = [
    "ALWAYS_OWNERS_ONLY",
    "BLOCKED",
    "NOT_ADMITTED",
    "NOT_REQUESTER",
    "UNASKED_OWNERS_ONLY",
    "refusal",
    "unanswerable_note",
]

NOT_REQUESTER = "Only the original requester can approve this command"
UNASKED_OWNERS_ONLY = "Only an owner can approve this (it was not asked by anyone in this chat)"
ALWAYS_OWNERS_ONLY = "Only an owner can allow always (you may Allow Once or Deny)"
BLOCKED = "You are blocked from this bot in this chat: you cannot answer its approvals"
NOT_ADMITTED = "This bot does not take requests from you in this chat: you cannot answer it"


def refusal(
    access: AccessSpec | None,
    *,
    gateway: str,
    chat_type: str | None,
    chat_id: str,
    presser_id: str,
    requester_id: str | None,
    decision: ApprovalDecision,
    paired: Container[str] = (),
) -> str | None:
    """None when this press may decide; else the toast that says why not (module docstring).

    ``paired``: the DM senders an owner paired (``dm.policy: pairing``): members, not strangers.
    """
    role = role_of(
        access,
        gateway=gateway,
        chat_type=chat_type,
        chat_id=chat_id,
        sender_id=presser_id,
        paired=paired,
    )
    if role == "owner":
        return None
    if chat_type is None and sender_disposition(access_of(access).groups, presser_id) == "block":
        role = "blocked"  # the chat may be a group: its block rule holds
    if role == "blocked":
        return BLOCKED
    if role == "stranger":
        return NOT_ADMITTED
    if requester_id is None:
        return UNASKED_OWNERS_ONLY
    if requester_id != presser_id:
        return NOT_REQUESTER
    if decision is ApprovalDecision.ALLOW_ALWAYS:
        return ALWAYS_OWNERS_ONLY
    return None


def unanswerable_note(
    access: AccessSpec | None,
    *,
    gateway: str,
    agent: str,
    session_id: str,
    requester_id: str | None,
) -> str | None:
    """What the chat is told when nobody in it may answer the approval; None when someone may.

    Nobody may when nobody asked for it (owners only) and the agent names no owner on
    ``gateway``.
    """
    if requester_id is not None or access_of(access).owner_ids(gateway):
        return None
    return (
        "Only an owner can answer this approval (it was not asked by anyone in this chat), "
        f"and agent '{agent}' names no owner on {gateway}. To answer it here, add your "
        f"{gateway} user id to spec.access.owners.{gateway} in agents/{agent}/agent.yaml, run "
        "`duragent serve reload-agents` and press again. It can also be decided over the HTTP "
        f"API (POST /api/v1/sessions/{session_id}/approve) or in the web console (/ui)."
    )
