"""Not a benchmark: regenerates ``docs/console.png``, the console screenshot in the README.

A real server on a temporary workspace, the scripted model, one conversation with a tool
call, a summary and a pending approval, photographed by the system's Chromium::

    .venv/bin/python -m bench.http.console_screenshot [docs/console.png]
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path

import httpx
from playwright.async_api import async_playwright

from duragent.config import load_workspace
from duragent.runtime import Runtime
from duragent.testing import Reply, ScriptedLLMServer, ToolCallReply

AGENT = """\
apiVersion: duragent/v1alpha1
kind: Agent
metadata:
  name: helper
  description: answers questions and runs shell commands when allowed
spec:
  model:
    provider: fake
    name: gpt-4o
    base_url: {url}
    max_input_tokens: 16000
  tools:
    - type: builtin
      name: bash
"""
POLICY = "apiVersion: duragent/v1alpha1\nkind: Policy\nmode: ask\n"


async def photograph(out: Path) -> None:
    """Build the conversation, open it in Chromium, save a PNG of the page."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("install the chromium package first (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        async with ScriptedLLMServer() as llm:
            (root / "duragent.yaml").write_text("server:\n  host: 127.0.0.1\n")
            folder = root / ".duragent" / "agents" / "helper"
            folder.mkdir(parents=True)
            (folder / "agent.yaml").write_text(AGENT.format(url=llm.openai_base_url))
            (folder / "policy.yaml").write_text(POLICY)
            runtime = Runtime(load_workspace(root), port=0)
            await runtime.start()
            base = f"http://127.0.0.1:{runtime.http_port}"
            try:
                async with httpx.AsyncClient(base_url=base, timeout=30) as api:
                    made = await api.post("/api/v1/sessions", json={"agent": "helper"})
                    sid = made.json()["session_id"]
                    path = f"/api/v1/sessions/{sid}/messages"
                    llm.enqueue(Reply(text="Sure: which folder should I look at?"))
                    await api.post(path, json={"content": "How big are my log files?"})
                    llm.enqueue(Reply(text="Noted: /var/log, and sizes in MiB."))
                    await api.post(path, json={"content": "/var/log please, in MiB"})
                    handle = runtime.registry.handle(sid)
                    window = await handle.messages()
                    summary = textwrap.dedent("""\
                        ## Goal
                        - report the size of the log files
                        ## Decisions
                        - folder: /var/log; unit: MiB""")
                    await handle.record_summary(
                        summary, last=window[1], tokens_before=180, tokens_after=40, model="m"
                    )
                    call = ToolCallReply(
                        name="bash", arguments={"command": "du -sm /var/log"}, id="call_1"
                    )
                    llm.enqueue(Reply(tool_calls=[call]))
                    await api.post(path, json={"content": "go ahead"})
                async with async_playwright() as pw:
                    browser = await pw.chromium.launch(executable_path=chromium)
                    page = await browser.new_page(viewport={"width": 820, "height": 900})
                    await page.goto(f"{base}/ui/sessions/{sid}")
                    await page.locator("#approval").wait_for()
                    await page.locator("details.budget summary").first.click()
                    await page.locator(".msg.summary details summary").click()
                    await page.screenshot(path=str(out), full_page=True)
                    await browser.close()
            finally:
                await runtime.aclose()


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/console.png")
    asyncio.run(photograph(target))
    print(f"{target}: {target.stat().st_size} bytes")
