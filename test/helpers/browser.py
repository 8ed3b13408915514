"""A real browser for tests: headless Chromium (Debian's package) driven over the Chrome
DevTools Protocol, so that a test sees what a person's browser would: the console's errors,
uncaught exceptions, and every resource that failed to load.

One harness for every page the project makes (the documentation site, reports): `open_page`
loads a URL, waits for the load event, and returns what went wrong plus the page's title and
text. The protocol is spoken with `websockets` (already a dependency, through openpi-client).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import websockets

from indgen_core.waiting import wait_until

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class PageReport:
    url: str
    title: str = ""
    text: str = ""
    console_errors: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # resources that did not load, and why
    images: list[tuple[str, int]] = field(default_factory=list)  # (src, naturalWidth): 0 = broken

    @property
    def problems(self) -> list[str]:
        broken = [f"image {src} did not render" for src, width in self.images if width == 0]
        return [*self.console_errors, *self.exceptions, *self.failed, *broken]


def open_page(
    url: str, timeout: float = 30.0, evaluate: str | None = None, screenshot: Path | None = None, width: int = 1280
) -> tuple[PageReport, object]:
    """Load `url` in headless Chromium; return its report and, with `evaluate`, the value of that
    JavaScript expression evaluated after the load (awaited when it is a promise). `screenshot`:
    a PNG of the whole page after that, `width` pixels wide."""
    if CHROMIUM is None:
        raise RuntimeError("chromium is not installed (scripts/ensure-system-deps.sh installs it)")
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        proc = subprocess.Popen(
            [
                CHROMIUM,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            port_file = Path(profile) / "DevToolsActivePort"

            def port_written() -> bool:
                return port_file.exists() and bool(port_file.read_text().strip())

            if not wait_until(lambda: port_written() or proc.poll() is not None, timeout, poll=0.05) or (
                not port_written()
            ):
                raise RuntimeError("chromium did not open its DevTools port")
            port = int(port_file.read_text().split()[0])
            return asyncio.run(asyncio.wait_for(_drive(port, url, evaluate, screenshot, width), timeout))
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


async def _drive(port: int, url: str, evaluate: str | None, screenshot: Path | None, width: int):
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list") as reply:
        targets = json.loads(reply.read())
    page = next(t for t in targets if t["type"] == "page")
    report = PageReport(url)
    async with websockets.connect(page["webSocketDebuggerUrl"], max_size=2**26) as ws:
        ids = iter(range(1, 10**6))
        pending: dict[int, asyncio.Future] = {}
        loaded = asyncio.Event()

        async def reader():
            async for raw in ws:
                msg = json.loads(raw)
                if "id" in msg and msg["id"] in pending:
                    pending.pop(msg["id"]).set_result(msg)
                    continue
                method, params = msg.get("method"), msg.get("params", {})
                if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                    report.console_errors.append(
                        "console: " + " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
                    )
                elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                    report.console_errors.append(
                        f"console: {params['entry']['text']} ({params['entry'].get('url', '')})"
                    )
                elif method == "Runtime.exceptionThrown":
                    details = params["exceptionDetails"]
                    report.exceptions.append(
                        f"exception: {details.get('exception', {}).get('description', details['text'])}"
                    )
                elif method == "Network.loadingFailed" and not params.get("canceled"):
                    report.failed.append(f"failed to load ({params.get('errorText')}): request {params['requestId']}")
                elif method == "Page.loadEventFired":
                    loaded.set()

        async def call(method: str, **params):
            n = next(ids)
            pending[n] = asyncio.get_running_loop().create_future()
            await ws.send(json.dumps({"id": n, "method": method, "params": params}))
            reply = await pending[n]
            if "error" in reply:
                raise RuntimeError(f"{method}: {reply['error']}")
            return reply.get("result", {})

        task = asyncio.create_task(reader())
        for domain in ("Page", "Runtime", "Log", "Network"):
            await call(f"{domain}.enable")
        await call("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1, mobile=False)
        await call("Page.navigate", url=url)
        await loaded.wait()
        await asyncio.sleep(0.3)  # scripts that run on load (search index, theme) have their turn
        info = await call(
            "Runtime.evaluate",
            expression="JSON.stringify({title: document.title, text: document.body.innerText, "
            "images: Array.from(document.images).map(i => [i.getAttribute('src'), i.naturalWidth])})",
            returnByValue=True,
        )
        data = json.loads(info["result"]["value"])
        report.title, report.text, report.images = data["title"], data["text"], [tuple(i) for i in data["images"]]
        value = None
        if evaluate is not None:
            result = await call("Runtime.evaluate", expression=evaluate, returnByValue=True, awaitPromise=True)
            value = result["result"].get("value")
        if screenshot is not None:
            import base64

            shot = await call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
            Path(screenshot).write_bytes(base64.b64decode(shot["data"]))
        task.cancel()
        return report, value
