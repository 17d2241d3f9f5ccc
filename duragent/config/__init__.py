"""Workspace configuration (``duragent.yaml``) and the YAML/validation helpers agents share.

- ``workspace``: the ``duragent.yaml`` model, defaults and resolved paths.
- ``envvars``: ``${VAR}`` / ``${VAR:-default}`` expansion.
- ``yamlio``: YAML parsing with line numbers.
- ``validation``: pydantic errors → ConfigError naming file, line, field, value, fix.
"""

from __future__ import annotations

from duragent.config.envvars import expand_env
from duragent.config.store import StoreConfig
from duragent.config.workspace import (
    CONFIG_FILENAME,
    LoadedWorkspace,
    WorkspaceConfig,
    WorkspacePaths,
    load_workspace,
)

__all__ = [
    "CONFIG_FILENAME",
    "LoadedWorkspace",
    "StoreConfig",
    "WorkspaceConfig",
    "WorkspacePaths",
    "expand_env",
    "load_workspace",
]
