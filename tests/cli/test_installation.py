"""Where duragent runs from: a clone, another source tree, pipx or pip (what ``upgrade`` says)."""

from __future__ import annotations

import json
from importlib.metadata import PathDistribution
from pathlib import Path

from duragent.cli.installation import Installation, Kind, find_installation


def _tree(root: Path, *, package: str = "duragent", pyproject: bool = True) -> Path:
    (root / package).mkdir(parents=True)
    if pyproject:
        (root / "pyproject.toml").write_text('[project]\nname = "duragent"\n')
    return root / package


def _editable(tmp_path: Path, root: Path) -> PathDistribution:
    """The metadata ``pip install -e <root>`` leaves in site-packages."""
    info = tmp_path / "site-packages" / "duragent-0.1.0.dist-info"
    info.mkdir(parents=True)
    url = root.resolve().as_uri()
    (info / "direct_url.json").write_text(json.dumps({"dir_info": {"editable": True}, "url": url}))
    return PathDistribution(info)


def test_a_package_beside_pyproject_in_a_git_work_tree_is_a_clone(tmp_path: Path) -> None:
    package = _tree(tmp_path / "clone")
    (tmp_path / "clone" / ".git").mkdir()
    found = find_installation(package, distributions=[])
    assert found == Installation(Kind.GIT, (tmp_path / "clone").resolve(), editable=False)


def test_a_git_worktree_whose_dot_git_is_a_file_is_a_clone_too(tmp_path: Path) -> None:
    package = _tree(tmp_path / "worktree")
    (tmp_path / "worktree" / ".git").write_text("gitdir: /elsewhere/.git/worktrees/w\n")
    assert find_installation(package, distributions=[]).kind is Kind.GIT


def test_an_editable_install_of_a_clone_is_reinstalled_after_the_pull(tmp_path: Path) -> None:
    root = tmp_path / "clone"
    package = _tree(root, package="src/duragent", pyproject=False)  # found by its metadata
    (root / ".git").mkdir()
    found = find_installation(package, distributions=[_editable(tmp_path, root)])
    assert found == Installation(Kind.GIT, root.resolve(), editable=True)


def test_a_venv_inside_a_clone_is_not_the_clone(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "duragent"\n')
    site = tmp_path / ".venv" / "lib" / "python3.11" / "site-packages"
    package = _tree(site, pyproject=False)
    found = find_installation(package, prefix=str(tmp_path / ".venv"), distributions=[])
    assert found == Installation(Kind.PIP)


def test_an_editable_install_of_another_tree_does_not_claim_this_package(tmp_path: Path) -> None:
    other = tmp_path / "other-clone"
    other.mkdir()
    package = _tree(tmp_path / "site-packages", pyproject=False)
    found = find_installation(package, prefix="/usr", distributions=[_editable(tmp_path, other)])
    assert found.kind is Kind.PIP


def test_a_source_tree_outside_git_is_a_source_tree(tmp_path: Path) -> None:
    package = _tree(tmp_path / "duragent-0.6.0")
    found = find_installation(package, distributions=[])
    assert found == Installation(Kind.SOURCE, (tmp_path / "duragent-0.6.0").resolve())


def test_a_package_in_a_pipx_venv_is_upgraded_by_pipx(tmp_path: Path) -> None:
    prefix = tmp_path / ".local" / "pipx" / "venvs" / "duragent"
    package = _tree(prefix / "lib" / "python3.11" / "site-packages", pyproject=False)
    assert find_installation(package, prefix=str(prefix), distributions=[]).kind is Kind.PIPX
