"""Installing a Debian package the tests need, on a throw-away root machine.

The suite's machines (CI included) are root containers where a tool such as ``bwrap`` or
``chromium`` may not be preinstalled. Skipping there would leave its tests unrun exactly
where they are checked, so when the user is root and ``apt-get`` exists, a fixture installs
the package once per run (``DURAGENT_TEST_NO_APT=1`` turns that off). Anywhere else the
caller skips with the reason this returns.

The suite runs on several workers (pytest-xdist), each with its own session fixtures: two
installs at once would fight over the dpkg lock and one would skip its tests. A file lock
makes them take turns (the second finds the package installed), and apt-get itself waits
for a lock another program holds.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["apt_install"]

_APT_SECONDS = 300
_LOCK = Path(tempfile.gettempdir()) / "duragent-tests-apt.lock"


def apt_install(package: str) -> str | None:
    """Install ``package`` with apt-get (updating the lists once if needed); None once done.

    Otherwise the reason it could not be installed, for a skip message.
    """
    if os.environ.get("DURAGENT_TEST_NO_APT"):
        return "DURAGENT_TEST_NO_APT is set"
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"not root with apt-get: install the {package} package to run these tests"
    with _LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        return _install(package)


def _install(package: str) -> str | None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    wait = ["-o", f"DPkg::Lock::Timeout={_APT_SECONDS}"]
    install = ["apt-get", *wait, "install", "-y", "-q", "--no-install-recommends", package]
    for step in (install, ["apt-get", *wait, "update", "-q"], install):
        try:
            done = subprocess.run(step, env=env, capture_output=True, timeout=_APT_SECONDS)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{' '.join(step)} failed: {exc}"
        if step is install and done.returncode == 0:
            return None
    tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
    return f"apt-get install {package} failed: {' '.join(tail)}"
