"""``store:`` in ``duragent.yaml``: where sessions live (files by default, or PostgreSQL).

```yaml
store:
  backend: postgres          # file (default) | postgres
  dsn: ${DATABASE_URL}       # required for postgres; never logged with its password
  schema: duragent           # optional (default public): one database, several workspaces
```

``file`` keeps sessions under ``.duragent/sessions`` (``services.session.path``) as before.
``postgres`` needs ``pip install 'duragent[postgres]'``; see specs/202611240900.postgres-store.md.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from duragent.config.validation import empty_means_default

__all__ = ["StoreConfig"]

_SCHEMA = re.compile(r"[a-z_][a-z0-9_]{0,62}\Z")
_URL = re.compile(r"https?://(\[[0-9a-fA-F:.]+\]|[^/\s:\[\]]+)(:\d+)?(/\S*)?\Z")


class StoreConfig(BaseModel):
    """``store:``: the session store's backend."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)

    backend: Literal["file", "postgres"] = "file"
    dsn: str | None = None
    """PostgreSQL connection string (``postgresql://user:pass@host:5432/db``); usually
    ``${DATABASE_URL}`` so the password stays out of the file."""
    db_schema: str = Field(default="public", alias="schema")
    """The schema holding duragent's tables (created by the first migration)."""
    node_id: str | None = None
    """This node's name in session leases (default: the host name; set it when several nodes
    run on one machine)."""
    lease_seconds: float = Field(default=30, gt=0, le=3600)
    """How long a session lease lasts without a write (issue 24: fenced leases)."""
    advertise_url: str | None = None
    """The base URL other nodes forward this node's sessions' requests to (default:
    ``http://<server.host>:<port>``; set it when that is not how other nodes reach it)."""
    pool_size: int = Field(default=8, ge=1, le=200)
    """At most this many connections (the actor threads share them)."""

    @model_validator(mode="before")
    @classmethod
    def _empty_is_default(cls, data: object) -> object:
        return empty_means_default(cls, data)

    @field_validator("db_schema")
    @classmethod
    def _plain_schema(cls, value: str) -> str:
        if not _SCHEMA.match(value):
            raise ValueError("must be lower-case letters, digits and _ (not starting with a digit)")
        return value

    @field_validator("advertise_url")
    @classmethod
    def _reachable_url(cls, value: str | None) -> str | None:
        # Other nodes send requests there: a typo would only show as failed forwards.
        if value is not None and not _URL.match(value):
            raise ValueError("must be an http(s) URL such as http://10.0.0.5:8080")
        return value

    @model_validator(mode="after")
    def _postgres_needs_a_dsn(self) -> StoreConfig:
        if self.backend == "postgres" and not (self.dsn or "").strip():
            raise ValueError(
                "store.backend postgres needs store.dsn (e.g. dsn: ${DATABASE_URL}, with "
                "DATABASE_URL=postgresql://user:password@host:5432/dbname)"
            )
        return self
