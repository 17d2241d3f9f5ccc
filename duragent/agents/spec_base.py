"""The base of every ``agent.yaml`` section model (apart, so section modules can share it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, model_validator

from duragent.config.validation import empty_means_default

__all__ = ["SpecModel"]


class SpecModel(BaseModel):
    """Frozen, keeps unknown keys (reported as warnings), an empty section means its defaults."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _empty_is_default(cls, data: object) -> object:
        """A section left empty (``hooks:`` with only comments under it) means its defaults."""
        return empty_means_default(cls, data)
