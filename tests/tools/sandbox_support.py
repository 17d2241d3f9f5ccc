"""Whether bubblewrap can run here, installing it first on a throw-away root machine.

The suite's machines (CI included) are root containers where ``bwrap`` may not be
preinstalled. Skipping would leave the sandbox's promises untested exactly where they are
checked, so when ``bwrap`` is missing, the user is root and ``apt-get`` exists, the fixture
installs the Debian package ``bubblewrap`` once per run (``DURAGENT_TEST_NO_APT=1`` turns
that off). Anywhere else, or when bwrap cannot create its namespaces (a locked-down
container), the tests that need it are skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from duragent.tools.sandbox import Sandbox, probe

_APT_SECONDS = 300


def _apt_install() -> str | None:
    """Install bubblewrap with apt-get; why not, or None once it is installed."""
    if os.environ.get("DURAGENT_TEST_NO_APT"):
        return "DURAGENT_TEST_NO_APT is set"
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "not root with apt-get: install the bubblewrap package to run these tests"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "bubblewrap"]
    for step in (install, ["apt-get", "update", "-q"], install):
        try:
            done = subprocess.run(step, env=env, capture_output=True, timeout=_APT_SECONDS)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{' '.join(step)} failed: {exc}"
        if step is install and done.returncode == 0:
            return None
    tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
    return f"apt-get install bubblewrap failed: {' '.join(tail)}"


@pytest.fixture(scope="session")
def bwrap() -> str:
    """The path of a ``bwrap`` that confines commands here (the test is skipped otherwise)."""
    problem = probe(Sandbox(mode="bubblewrap"))
    if problem is not None and shutil.which("bwrap") is None:
        why = _apt_install()
        problem = probe(Sandbox(mode="bubblewrap")) if why is None else f"{problem} ({why})"
    if problem is not None:
        pytest.skip(f"the bubblewrap sandbox cannot run here: {problem}")
    found = shutil.which("bwrap")
    assert found is not None
    return found
