"""Language-model providers behind one interface.

```
 caller ──▶ ResilientProvider (timeout, retries, backoff, Retry-After)
                 │
                 ├─▶ OpenAICompatibleProvider  (openai SDK: openai, openrouter, ollama, base_url)
                 ├─▶ AnthropicProvider          (anthropic SDK)
                 └─▶ OfflineProvider            (deterministic, no network)
```

Providers raise only ``duragent.errors.LLMError`` subclasses; ``ContextLengthExceededError``
is distinct so the context layer can compact and retry.
"""

from __future__ import annotations

from duragent.llm.base import LLMProvider
from duragent.llm.factory import build_provider, credential_problem
from duragent.llm.limits import REJECTED_KEY, OutputLimits
from duragent.llm.offline import OfflineProvider
from duragent.llm.retry import ResilientProvider, RetryPolicy
from duragent.llm.types import (
    ChatRequest,
    ChatResponse,
    ResponseDone,
    StreamEvent,
    StreamProgress,
    TextDelta,
)

__all__ = [
    "REJECTED_KEY",
    "ChatRequest",
    "ChatResponse",
    "LLMProvider",
    "OfflineProvider",
    "OutputLimits",
    "ResilientProvider",
    "ResponseDone",
    "RetryPolicy",
    "StreamEvent",
    "StreamProgress",
    "TextDelta",
    "build_provider",
    "credential_problem",
]
