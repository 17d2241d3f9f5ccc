"""What the agentic loop needs for one turn: provider, tools, policy, budget, prompt, recorder.

Split from the turn runner, which decides *when* a turn runs; this decides *with what*. The
recorder writes the loop's events through the session actor (durable or batched, see
``session.journal``).
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from duragent.agents import Agent
from duragent.agents.access_spec import AccessSpec
from duragent.agents.roles import access_of, caller_for
from duragent.agents.spec import BuiltinToolSpec
from duragent.agents.system_prompt import build_system_prompt
from duragent.context.quoting import quoted_block
from duragent.context.render import HistoryCache
from duragent.context.tokens import counter_for_model
from duragent.core.approval import PendingApproval
from duragent.core.caller import ChatRef
from duragent.core.messages import ToolCall, Usage
from duragent.core.snapshot import SessionStatus
from duragent.llm import OutputLimits
from duragent.observability.metrics import Metrics
from duragent.session import SessionHandle, SessionRegistry
from duragent.session.memory_ops import MemoryView
from duragent.store import SavedOutputLimits, SavedOutputStorage
from duragent.tools.base import SessionReader, Tool, ToolContext
from duragent.tools.policy_files import load_policy
from duragent.tools.registry import build_tools
from duragent.tools.sandbox import TRUST, Sandbox
from duragent.tools.send_file import ReplyFile, SendFileTool
from duragent.tools.tool_output import TOOL_OUTPUT, ToolOutputTool
from duragent.turns.agent_budget import budget_settings
from duragent.turns.decision_tool import DecisionTool
from duragent.turns.hooks import effective_hooks
from duragent.turns.images import Attachments
from duragent.turns.inbox import Inbox
from duragent.turns.loop import LoopContext
from duragent.turns.pins import PinRooms
from duragent.turns.providers import ProviderPool
from duragent.turns.reply_files import ReplyShelf
from duragent.turns.sink import TurnSink
from duragent.turns.summaries import SummaryTier, agent_summary_settings
from duragent.turns.token_quota import TokenQuota

__all__ = ["HISTORY_CACHES", "UNKNOWN_CHAT", "ContextFactory", "UnknownChat"]


class UnknownChat(enum.Enum):
    """The type of ``UNKNOWN_CHAT`` (a sentinel apart from None, which means "no chat")."""

    CHAT = "unknown"


UNKNOWN_CHAT = UnknownChat.CHAT
"""``ContextFactory.build``'s default ``chat``: not known to the caller (None means no chat)."""

HISTORY_CACHES = 64
"""Sessions whose split history is kept between turns (each holds up to its window of units,
~100 bytes a message: 64 × 2,000 messages is ~13 MB at most)."""


class _ActorRecorder:
    """The loop's Recorder over the session's handle.

    ``requester_id``: who sent the message that started the turn; a pending approval is
    recorded with it, so a chat lets only that person decide, after a restart too.
    ``answers_seq``: the newest message the turn answers, written on its final reply when
    messages after it wait for turns of their own (a ``sequential`` chat queue).
    ``turn_seq``: the person's message the turn answers, recorded with an approval it asks
    for (its continuation starts from there). ``inbox``: the loop's; asking for an approval
    closes it and records the newest message it was handed (``through_seq``).
    """

    __slots__ = ("_answers_seq", "_inbox", "_requester_id", "_session", "_turn_seq")

    def __init__(
        self,
        session: SessionHandle,
        requester_id: str | None = None,
        answers_seq: int | None = None,
        turn_seq: int | None = None,
        inbox: Inbox | None = None,
    ) -> None:
        self._session = session
        self._requester_id = requester_id
        self._answers_seq = answers_seq
        self._turn_seq = turn_seq
        self._inbox = inbox

    async def assistant(
        self,
        content: str,
        tool_calls: tuple[ToolCall, ...],
        usage: Usage | None,
        budget: dict[str, int],
        message_id: str | None,
        files: Sequence[ReplyFile] = (),
    ) -> int:
        return await self._session.add_assistant_response(
            content,
            tool_calls=tool_calls,
            usage=usage,
            message_id=message_id,
            budget=budget,
            durable=True,  # a response with calls too: no tool may run before it is on disk
            answers_seq=None if tool_calls else self._answers_seq,
            attachments=files,
        )

    async def tool_result(self, call_id: str, success: bool, content: str) -> None:
        await self._session.add_tool_result(call_id, success, content)

    async def skipped(self, call_ids: list[str], reason: str) -> None:
        await self._session.add_tools_skipped(call_ids, reason)

    async def steering(self, content: str) -> None:
        await self._session.add_steering(content)

    async def pending_approval(self, approval: PendingApproval) -> None:
        if approval.requester_id is None and self._requester_id is not None:
            approval = replace(approval, requester_id=self._requester_id)
        if approval.turn_seq is None and self._turn_seq is not None:
            approval = replace(approval, turn_seq=self._turn_seq)
        if approval.answers_seq is None and self._answers_seq is not None:
            approval = replace(approval, answers_seq=self._answers_seq)
        through = self._inbox.pause() if self._inbox is not None else None
        turn_seq = approval.turn_seq
        if through is not None and turn_seq is not None and through > turn_seq:
            approval = replace(approval, through_seq=through)
        await self._session.set_pending_approval(approval)
        await self._session.set_status(SessionStatus.PAUSED)


class ContextFactory:
    """Builds a turn's ``LoopContext`` from the agent's current definition."""

    def __init__(
        self,
        registry: SessionRegistry,
        *,
        providers: ProviderPool,
        workspace_dir: Path,
        world_memory_dir: Path,
        policy_file: Path,
        sessions: SessionReader | None,
        extra_tools: Callable[[Agent, str], Sequence[Tool]] | None,
        env: Mapping[str, str],
        sandbox: Sandbox = TRUST,
        metrics: Metrics | None = None,
    ) -> None:
        self._registry = registry
        self._metrics = metrics
        self._sandbox = sandbox
        self._providers = providers
        self._workspace_dir = workspace_dir
        self._world_memory_dir = world_memory_dir
        self._policy_file = policy_file
        self._sessions = sessions
        self._extra_tools = extra_tools
        self._env = env
        self._histories: OrderedDict[str, HistoryCache] = OrderedDict()
        self.attachments = Attachments(registry.store.attachments)
        """Each session's attachments as requests show them, and the fitted images' cache."""
        self.pin_rooms = PinRooms(workspace_dir)
        """Each agent's room for pins (``turns.pins``): turns and new pins use the same."""
        self.reply_files = ReplyShelf(registry.store.attachments)
        """The files ``send_file`` kept for each session's next reply (``turns.reply_files``)."""

    def _history_cache(self, session_id: str) -> HistoryCache:
        """The session's history cache; the least recently used go beyond ``HISTORY_CACHES``."""
        cache = self._histories.pop(session_id, None) or HistoryCache()
        self._histories[session_id] = cache
        while len(self._histories) > HISTORY_CACHES:
            self._histories.popitem(last=False)
        return cache

    def _saved_outputs(self, session_id: str, agent: Agent) -> SavedOutputStorage | None:
        """The session's saved full outputs, or None when the agent turned saving off."""
        spec = agent.spec.session.context.saved_outputs
        if not spec.enabled:
            return None
        limits = SavedOutputLimits(
            max_output_bytes=spec.max_output_bytes,
            max_session_bytes=spec.max_session_bytes,
            retention_days=spec.retention_days,
        )
        return self._registry.store.saved_outputs(session_id, limits)

    async def build(
        self,
        session_id: str,
        agent: Agent,
        inbox: Inbox,
        sink: TurnSink | None,
        *,
        extra_blocks: Sequence[str] = (),
        requester_id: str | None = None,
        answers_seq: int | None = None,
        memory: MemoryView | None = None,
        chat: ChatRef | UnknownChat | None = UNKNOWN_CHAT,
        tokens: tuple[str, int] | None = None,
        turn_seq: int | None = None,
    ) -> LoopContext:
        """The loop's context for one turn of ``agent`` in ``session_id``.

        ``inbox`` holds the messages that arrive while the loop runs; the loop takes them at
        each boundary (``Inbox.take`` marks them read). ``extra_blocks`` are this turn's
        context only (a group's recent chatter): people wrote them, so they go quoted in a
        user message before the turn's own (``context.quoting``), never in the system prompt;
        they count against the budget like the prompt and are never written to the history.
        ``requester_id`` goes with an approval the turn asks for, and gives the turn's tools
        the sender's role and chat (``agents.roles.caller_for``). ``chat``: the session's chat
        when the caller has it already (None: the session has none; else one more read).
        ``memory``: the session's summary and pins when the caller has them already (else one
        more read). ``tokens``: the session's ``(tokens_day, tokens_today)`` when the caller
        has them (a chat with a daily token quota: else one more read). ``turn_seq``: the
        person's message the turn answers (recorded with an approval it asks for).
        """
        spec = agent.spec
        budget = budget_settings(agent)
        provider = await self._providers.for_agent(agent)
        counter = counter_for_model(agent.model.name)
        price = _pricer(agent)
        handle = self._registry.handle(session_id)
        if chat is UNKNOWN_CHAT:  # not given by the caller: one more read
            info = await handle.info()
            chat, tokens = info.chat, (info.tokens_day, info.tokens_today)
        quota = await _token_quota(handle, spec.access, isinstance(chat, ChatRef), tokens)
        caller = caller_for(
            spec.access,
            gateway=chat.gateway if chat is not None else None,
            chat_type=chat.kind if chat is not None else None,
            chat_id=chat.chat_id if chat is not None else None,
            sender_id=requester_id,
        )
        summaries = agent_summary_settings(agent, budget.window)
        metrics = self._metrics
        meter = metrics.meter(agent.name, agent.model.name) if metrics is not None else None
        history_cache = self._history_cache(session_id)
        attachments = self.attachments.for_turn(session_id, agent, budget, counter)
        tier = SummaryTier(
            session=handle,
            settings=summaries,
            budget=budget,
            counter=counter,
            memory=memory if memory is not None else await handle.memory(),
            summariser=(
                await self._providers.for_model(agent, summaries.model)
                if summaries.model
                else provider
            ),
            summariser_model=summaries.model or agent.model.name,
            price=price,
            sink=sink,
            meter=meter,
            pin_room=self.pin_rooms.room(agent),
            history_cache=history_cache,
            spent=quota.spent if quota is not None else None,
            carried=attachments.carried,
        )
        extra = self._extra_tools(agent, session_id) if self._extra_tools else ()
        listed = {t.name for t in spec.tools if t.type == "builtin"}
        if summaries.enabled and "record_decision" in listed:  # it pins its own decisions
            extra = (*extra, DecisionTool(handle, tier))
        files = self.reply_files.for_session(session_id)
        if "send_file" in listed:  # URLs reach what the agent's web tool may reach
            web = [t for t in spec.tools if isinstance(t, BuiltinToolSpec) and t.name == "web"]
            allowed = web[0].allow_private if web else ()
            extra = (*extra, SendFileTool(files, allow_private=allowed))

        outputs = self._saved_outputs(session_id, agent)

        def tools() -> dict[str, Tool]:
            built = build_tools(
                agent,
                workspace_dir=self._workspace_dir,
                world_memory_dir=self._world_memory_dir,
                extra=extra,
            )
            # offered once the session has something to read (``calls`` offers it mid-turn)
            if outputs is not None and TOOL_OUTPUT not in built and outputs.ids():
                built[TOOL_OUTPUT] = ToolOutputTool()
            return built

        return LoopContext(
            provider=provider,
            tools=tools(),
            rebuild_tools=tools,
            policy=load_policy(self._policy_file, agent.directory),
            counter=counter,
            budget=budget,
            system_prompt=build_system_prompt(agent, compact=not budget.full_prompt),
            context=quoted_block([("", block) for block in extra_blocks]),
            max_iterations=spec.session.max_tool_iterations,
            max_calls_per_response=spec.session.max_tool_calls_per_response,
            max_calls_per_turn=spec.session.max_tool_calls_per_turn,
            limits=OutputLimits(
                max_reply_bytes=spec.session.max_reply_bytes,
                max_tool_argument_bytes=spec.session.max_tool_argument_bytes,
                max_tool_argument_depth=spec.session.max_tool_argument_depth,
            ),
            tool_context=ToolContext(
                session_id=session_id,
                agent_name=agent.name,
                caller=caller,
                agent_dir=agent.directory,
                workspace_dir=self._workspace_dir,
                world_memory_dir=self._world_memory_dir,
                sessions=self._sessions,
                env=self._env,
                sandbox=self._sandbox,
                outputs=outputs,
            ),
            recorder=_ActorRecorder(handle, requester_id, answers_seq, turn_seq, inbox),
            meter=meter,
            temperature=agent.model.temperature,
            price=price,
            sink=sink,
            steering=inbox.take,
            history_cache=history_cache,
            summaries=tier,
            hooks=effective_hooks(spec),
            quota=quota,
            attachments=attachments,
            reply_files=files,
        )


def _pricer(agent: Agent) -> Callable[[Usage], Usage]:
    pricing = agent.model.pricing
    if pricing is None:
        return lambda usage: usage
    return lambda usage: Usage(
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        cost_usd=pricing.cost(usage.prompt_tokens, usage.completion_tokens),
    )


async def _token_quota(
    session: SessionHandle,
    access: AccessSpec | None,
    chat: bool,
    tokens: tuple[str, int] | None,
) -> TokenQuota | None:
    """The chat's ``tokens_per_chat_per_day`` for this turn (None: no chat, or no limit)."""
    limit = access_of(access).quotas.tokens_per_chat_per_day
    if not chat or limit <= 0:
        return None
    if tokens is None:  # not given by the caller: one more read
        info = await session.info()
        tokens = (info.tokens_day, info.tokens_today)
    return TokenQuota(limit, day=tokens[0], used=tokens[1])
