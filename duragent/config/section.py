"""The base of every ``duragent.yaml`` section model.

Open to unknown keys (reported, not refused), frozen, and an empty section
(``world_memory:`` with nothing under it) meaning its defaults, as the reference's
documented files write them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, model_validator

from duragent.config.validation import empty_means_default

__all__ = ["Section"]


class Section(BaseModel):
    """A section of ``duragent.yaml`` (module docstring)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _empty_is_default(cls, data: object) -> object:
        return empty_means_default(cls, data)
