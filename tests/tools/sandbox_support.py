"""Whether bubblewrap can run here, installing it first on a throw-away root machine.

The suite's machines (CI included) are root containers where ``bwrap`` may not be
preinstalled. Skipping would leave the sandbox's promises untested exactly where they are
checked, so when ``bwrap`` is missing, the user is root and ``apt-get`` exists, the fixture
installs the Debian package ``bubblewrap`` once per run (``DURAGENT_TEST_NO_APT=1`` turns
that off). Anywhere else, or when bwrap cannot create its namespaces (a locked-down
container), the tests that need it are skipped with the reason.
"""

from __future__ import annotations

import shutil

import pytest

from duragent.tools.sandbox import Sandbox, probe
from tests.system_packages import apt_install


@pytest.fixture(scope="session")
def bwrap() -> str:
    """The path of a ``bwrap`` that confines commands here (the test is skipped otherwise)."""
    problem = probe(Sandbox(mode="bubblewrap"))
    if problem is not None and shutil.which("bwrap") is None:
        why = apt_install("bubblewrap")
        problem = probe(Sandbox(mode="bubblewrap")) if why is None else f"{problem} ({why})"
    if problem is not None:
        pytest.skip(f"the bubblewrap sandbox cannot run here: {problem}")
    found = shutil.which("bwrap")
    assert found is not None
    return found
