"""Every exception duragent raises on purpose.

The tree separates mistakes a person must fix in a file (``ConfigError``) from failures at run
time (``LLMError`` and friends), so a front end can decide what to tell the user without
string matching. Classes defined next to the code that raises them say where, in brackets;
the rest are defined here. Base classes from Python follow a name in parentheses::

    DuragentError
    ├── ConfigError                 a file on disk is wrong; carries file, line, field, value, fix
    │   ├── ConfigErrors            several ConfigErrors found in one pass (doctor prints them all)
    │   ├── PolicyError             a policy file is wrong [tools.policy_files]
    │   └── PairingFileError        a DM pairing file cannot be read [frontkit.pairing]
    ├── NotFoundError (LookupError)
    │   ├── AgentNotFoundError
    │   ├── SessionNotFoundError    no session with this id on disk [session.launcher]
    │   ├── SessionEndedError       the session is completed: it takes no new turn
    │   │                           [session.operations]
    │   ├── AttachmentNotFoundError no attachment with this hash in this session
    │   │                           [store.attachment_blobs]
    │   └── ScheduleNotFoundError   no such schedule (of this agent) [scheduler.front]
    ├── SessionAgentMismatchError   the session belongs to another agent than the turn named
    │                               [session.operations]
    ├── TokenizerError              an encoding could not be loaded offline
    ├── StorageError (OSError)      the disk refused a read or write (full, permission, I/O):
    │   │                           the data already on disk is intact, retry after the fix
    │   └── FencedWriteError        a write under a stale session-lease epoch
    │                               [store.ownership]
    ├── LeaseHeldError              another node's session lease is live [store.ownership]
    ├── SchemaTooNewError           the database schema is newer than this code
    │                               [store.postgres.schema]
    ├── EventSeqConflictError (ValueError)   an append repeated a stored seq
    │                               [store.postgres.event_rows]
    ├── WorkspaceBusyError          another process serves this workspace [store.serve_lock]
    ├── InboundBusyError            another node is recording this platform message now
    │   │                           [frontkit.owners]
    │   └── LeftToOwnerError        a live node keeps the chat's session: its copy is its
    ├── RelayFailedError            the chat's owner did not take a message handed to it
    │                               [cluster.relay]
    ├── GatewayDownError            an external gateway's child is not running or not reading
    │                               [gateways.external.supervisor]
    ├── GatewayCommandError         an external gateway answered ``command_error``
    │                               [gateways.external.outbound]
    ├── PlatformBusyError           a platform refused a send for a while (429, 5xx,
    │                               the network): waited out [frontkit.outbox]
    ├── UndeliveredError            a message was given up after that wait, or refused
    │                               outright; the chat is told once [frontkit.outbox]
    ├── ScheduleRefusedError        a schedule request the scheduler will not do
    │                               (a past ``at``, cancelling a declared one) [scheduler.front]
    ├── ScheduledRunFailedError     a due time handed here by another node failed here
    │                               (its sender records the attempt failed) [scheduler.relayed]
    ├── ServiceUnavailableError     a service that cannot run now refuses new work (HTTP 503)
    │   └── SchedulerUnavailableError   the scheduler did not start or its loop ended
    │                               [scheduler.front]
    ├── ServiceStartError           an essential service did not start [lifecycle.services]
    ├── ServiceStopError            services that failed to stop (the rest still stopped)
    │                               [lifecycle.services]
    ├── SnapshotCorruptError        a session's snapshot cannot be read [store.snapshot_file]
    │   └── SessionFilesInconsistentError   events the snapshot counts are missing
    ├── SessionQuarantinedError     the session's files were moved aside [session.actor]
    ├── SessionUnavailableError     the session's actor is stopped [session.bridge]
    ├── SessionTimeoutError (TimeoutError)   the actor did not answer in time [session.bridge]
    ├── ApprovalError               an approval does not match what waits [turns.errors]
    │   ├── NoPendingApprovalError  the session waits for no decision [turns.errors]
    │   └── ApprovalMismatchError   it waits for a decision on another call [turns.errors]
    ├── ContextOverflowError        even the minimum request exceeds the window [context.budget]
    ├── PinnedTooLargeError         pinned sections exceed their share [context.summaries]
    ├── PinRefusedError             a new pin would pass the pins' room [context.summaries]
    ├── ImageRejectedError (ValueError)   bytes that are no image we read (PNG, JPEG, WebP,
    │                               GIF), or a decompression bomb
    ├── MediaError                  a file a message carries could not be taken in
    │   │                           [frontkit.media]
    │   ├── MediaTooLargeError      over its kind's limit or the platform's [frontkit.media]
    │   └── MediaUnavailableError   it could not be downloaded [frontkit.media]
    └── LLMError                    a provider call failed
        ├── LLMTimeoutError         the per-call timeout expired (retryable)
        ├── LLMConnectionError      no connection / reset (retryable)
        ├── LLMRateLimitError       429 (retryable, may carry retry_after)
        ├── LLMServerError          5xx / overloaded (retryable)
        ├── LLMAuthError            401 / 403 (not retried)
        ├── LLMBadRequestError      400 / 404 / 422 (not retried)
        │   └── ContextLengthExceededError   the request did not fit the model's window
        └── LLMResponseError        the provider answered something we cannot parse

Outside the tree, signals that never leave the package that raises them (each is caught
there and turned into an answer): ``ProblemError`` (an HTTP handler's problem+json answer),
``ApiError`` and ``LaunchError`` (the CLI's client and launcher), ``BodyError``, ``_Full``
and ``ForbiddenAddress`` (the web tool's refusals), ``_NotSendable`` (a file ``send_file``
refuses: told to the model), ``WireShapeError`` (a streamed chunk of
the wrong shape; the providers turn it into ``LLMResponseError``), ``UnregisteredProblemError``
(a handler answering a status with no problem type: a bug, raised where it is made),
``FatalPollingError`` (Telegram refusing the bot; the gateway's state says so),
``ProtocolError`` (a line from an external gateway that is not an event: logged, skipped),
``ProcessError`` and ``TmuxError`` (a background-process action refused, a tmux command that
failed: the tool's result says so), ``SavedOutputNotFoundError`` (the ``tool_output`` tool
asked for an output its session does not have: its result says so), ``_Refused`` (a
``memory`` write that would change the agent's definition: its result says so),
``OpenAIError`` (an
OpenAI-compatible request refused: answered in OpenAI's error shape) and
``EntityParseError`` (the fake Telegram's HTML check). ``tests/test_errors.py`` checks
that every exception class of the package is drawn here, under its real parent.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "AgentNotFoundError",
    "ConfigError",
    "ConfigErrors",
    "ContextLengthExceededError",
    "DuragentError",
    "ImageRejectedError",
    "LLMAuthError",
    "LLMBadRequestError",
    "LLMConnectionError",
    "LLMError",
    "LLMRateLimitError",
    "LLMResponseError",
    "LLMServerError",
    "LLMTimeoutError",
    "NotFoundError",
    "StorageError",
    "TokenizerError",
]


class DuragentError(Exception):
    """Root of every error duragent raises on purpose."""


class ConfigError(DuragentError):
    """A file a person wrote is wrong.

    The message always says where (file and line when the YAML parser knows it), which field,
    what value was found and what would be accepted, so it can be fixed without reading code.
    """

    def __init__(
        self,
        message: str,
        *,
        file: Path | str | None = None,
        line: int | None = None,
        field: str | None = None,
        value: object = None,
        allowed: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.file = Path(file) if file is not None else None
        self.line = line
        self.field = field
        self.value = value
        self.allowed = allowed
        self.fix = fix
        self.reason = message
        super().__init__(self.render())

    def render(self) -> str:
        """One line a person can act on: ``file:line: field: reason (got X; allowed: Y). fix``."""
        where = ""
        if self.file is not None:
            where = str(self.file)
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        field = f"{self.field}: " if self.field else ""
        text = f"{where}{field}{self.reason}"
        details: list[str] = []
        if self.value is not None:
            details.append(f"got {self.value!r}")
        if self.allowed:
            details.append(f"allowed: {self.allowed}")
        if details:
            text += f" ({'; '.join(details)})"
        if self.fix:
            text += f". Fix: {self.fix}"
        return text


class ServiceUnavailableError(DuragentError):
    """A service of the server cannot run now (it did not start, its loop ended).

    It refuses new work instead of accepting what it would not do; HTTP answers 503.
    """


class ConfigErrors(ConfigError):
    """Several problems found while validating one file; each is a ConfigError."""

    def __init__(self, errors: list[ConfigError]) -> None:
        if not errors:
            raise ValueError("ConfigErrors needs at least one error")
        self.errors = list(errors)
        first = errors[0]
        super().__init__(
            first.reason,
            file=first.file,
            line=first.line,
            field=first.field,
            value=first.value,
            allowed=first.allowed,
            fix=first.fix,
        )

    def render(self) -> str:
        """All problems, one per line."""
        return "\n".join(e.render() for e in self.errors)


class NotFoundError(DuragentError, LookupError):
    """Something named by id or name does not exist."""


class AgentNotFoundError(NotFoundError):
    """No loaded agent has this name."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"agent '{name}' not found")


class StorageError(DuragentError, OSError):
    """The operating system refused a read or write of duragent's files.

    Disk full (ENOSPC), permission denied (EACCES/EPERM), too many open files (EMFILE/ENFILE),
    an I/O error (EIO) or a read-only file system are conditions of the machine, not of the data:
    what is on disk stays as it was and the operation may succeed once the cause is fixed. So
    this is never treated as corruption (no quarantine), and front ends report it as a storage
    failure (HTTP 507/503), not as a generic 500. ``errno``, ``filename`` and ``strerror`` are
    those of the underlying ``OSError``; ``operation`` says what was being done.
    """

    recorded_seq: int | None = None
    """Set when the request's own input (a turn's message, an approval's decision) was durably
    recorded, as this seq, before the failure: it must not be sent again."""

    def __init__(self, operation: str, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror, cause.filename)
        self.operation = operation
        self.cause = cause

    def after_recording(self, seq: int) -> StorageError:
        """This failure as told to a caller whose message was recorded (as ``seq``) first.

        A copy: one failed turn can answer several callers (messages steered into it), each
        with its own message.
        """
        told = StorageError(self.operation, self.cause)
        told.recorded_seq = seq
        return told

    def __str__(self) -> str:
        where = f" ({self.filename})" if self.filename else ""
        text = f"storage error while {self.operation}{where}: {self.strerror or self.cause}"
        if self.recorded_seq is not None:  # every front end tells it (HTTP, SSE, chats)
            text += (
                f"; what you sent was recorded (seq {self.recorded_seq}) before this failure, "
                "so do not send it again"
            )
        return text


class TokenizerError(DuragentError):
    """A tokenizer encoding could not be loaded (offline data missing or corrupt)."""


class ImageRejectedError(DuragentError, ValueError):
    """An image that cannot be sent to a model: not one (or not a format we read), or a bomb.

    A decompression bomb is a small file that claims (and would decode to) a huge canvas:
    ``llm.images.fit_image`` refuses it from its header, before decoding a pixel. The message
    is one sentence a person can be told; ``reason`` is ``not_an_image``, ``too_many_pixels``
    or ``too_large`` (no encoding fits the provider's byte limit).
    """

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class LLMError(DuragentError):
    """A call to a language model failed.

    Attributes:
        retryable: whether trying the same request again may succeed.
        status: the HTTP status the provider answered with, when there was one.
    """

    retryable: bool = False

    def __init__(self, message: str, *, status: int | None = None, provider: str = "") -> None:
        self.status = status
        self.provider = provider
        super().__init__(message)


class LLMTimeoutError(LLMError):
    """The call did not complete within ``llm_timeout_seconds``."""

    retryable = True


class LLMConnectionError(LLMError):
    """The provider could not be reached or the connection broke."""

    retryable = True


class LLMRateLimitError(LLMError):
    """The provider answered 429; ``retry_after`` is its hint in seconds, if it gave one."""

    retryable = True

    def __init__(
        self,
        message: str,
        *,
        status: int | None = 429,
        provider: str = "",
        retry_after: float | None = None,
    ) -> None:
        self.retry_after = retry_after
        super().__init__(message, status=status, provider=provider)


class LLMServerError(LLMError):
    """The provider failed on its side (5xx, overloaded)."""

    retryable = True

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider: str = "",
        retry_after: float | None = None,
    ) -> None:
        self.retry_after = retry_after
        super().__init__(message, status=status, provider=provider)


class LLMAuthError(LLMError):
    """The credentials were refused (401/403); retrying cannot help."""


class LLMBadRequestError(LLMError):
    """The provider rejected the request as malformed; retrying cannot help."""


class ContextLengthExceededError(LLMBadRequestError):
    """The provider says the request is longer than the model's context window.

    Later layers answer this by compacting and retrying, never by dropping the session.
    """


class LLMResponseError(LLMError):
    """The provider's answer could not be understood (malformed JSON, missing fields)."""
