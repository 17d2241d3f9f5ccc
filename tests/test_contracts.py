"""The import-linter contracts name every module of the package, so a new one cannot slip past.

A ``forbidden`` contract only checks the source modules it lists: a package added later and
not listed could import an SDK (or ``duragent.testing``) unnoticed. These tests walk the
package and fail when a module is missing from a contract that must cover it.
"""

from __future__ import annotations

import importlib
import pkgutil
import tomllib
from pathlib import Path
from typing import Any

import pytest

import duragent

ROOT = Path(__file__).resolve().parents[1]
CONTRACTS: list[dict[str, Any]] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
    "importlinter"
]["contracts"]

# Each contract that keeps something inside one module, and that module.
OWNERS = {
    "The Telegram SDK is imported only by gateways.telegram": "duragent.gateways.telegram",
    "The Discord SDK is imported only by gateways.discord": "duragent.gateways.discord",
    "The OpenAI and Anthropic SDKs are imported only by llm": "duragent.llm",
    "Production code never imports duragent.testing": "duragent.testing",
    "The PostgreSQL driver is imported only by store.postgres": "duragent.store.postgres",
}


def contract(name: str) -> dict[str, Any]:
    return next(c for c in CONTRACTS if c["name"] == name)


def children(package: str) -> list[str]:
    module = importlib.import_module(package)
    path = getattr(module, "__path__", None)
    return [f"{package}.{m.name}" for m in pkgutil.iter_modules(path)] if path else []


def covered(module: str, listed: set[str], owner: str) -> bool:
    """``module`` is listed, is the owner, or contains the owner and all its other parts are."""
    if module in listed or module == owner:
        return True
    if owner.startswith(module + "."):
        return all(covered(child, listed, owner) for child in children(module))
    return False


@pytest.mark.parametrize("name", sorted(OWNERS))
def test_a_keep_inside_contract_lists_every_module_but_its_owner(name: str) -> None:
    owner = OWNERS[name]
    listed = set(contract(name)["source_modules"])
    missing = [m for m in children("duragent") if not covered(m, listed, owner)]
    assert not missing, f"add {missing} to the source_modules of '{name}'"


def test_every_module_but_testing_has_a_layer() -> None:
    layers = contract("Layers depend downward only")["layers"]
    layered = {part.strip() for layer in layers for part in layer.split("|")}
    exempt = {"duragent.testing", "duragent.__main__"}
    missing = [m for m in children("duragent") if m not in layered | exempt]
    assert not missing, f"add {missing} to a layer of the layers contract"


def test_the_walk_sees_the_package() -> None:
    """The checks above are vacuous if the walk finds nothing."""
    found = children("duragent")
    assert {"duragent.session", "duragent.cpu", "duragent.testing"} <= set(found)
    assert duragent.__path__
