"""Installing a Debian package the tests need, on a throw-away root machine.

The suite's machines (CI included) are root containers where a tool such as ``bwrap`` or
``chromium`` may not be preinstalled. Skipping there would leave its tests unrun exactly
where they are checked, so when the user is root and ``apt-get`` exists, a fixture installs
the package once per run (``DURAGENT_TEST_NO_APT=1`` turns that off). Anywhere else the
caller skips with the reason this returns.
"""

from __future__ import annotations

import os
import shutil
import subprocess

__all__ = ["apt_install"]

_APT_SECONDS = 300


def apt_install(package: str) -> str | None:
    """Install ``package`` with apt-get (updating the lists once if needed); None once done.

    Otherwise the reason it could not be installed, for a skip message.
    """
    if os.environ.get("DURAGENT_TEST_NO_APT"):
        return "DURAGENT_TEST_NO_APT is set"
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"not root with apt-get: install the {package} package to run these tests"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", package]
    for step in (install, ["apt-get", "update", "-q"], install):
        try:
            done = subprocess.run(step, env=env, capture_output=True, timeout=_APT_SECONDS)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{' '.join(step)} failed: {exc}"
        if step is install and done.returncode == 0:
            return None
    tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
    return f"apt-get install {package} failed: {' '.join(tail)}"
