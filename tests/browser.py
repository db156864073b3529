"""Headless Chromium for tests and benchmarks, driven over the DevTools protocol on a pipe (fds 3 and 4), with
networking off (a proxy at a closed port), and a stdlib PNG reader to tell a drawn screenshot from a blank one.
Tests skip when Chromium is absent (`chromium_binary()` is None)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import struct
import subprocess
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any


def chromium_binary() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Browser:
    """One headless Chromium with one page; `requests` lists every URL the page asked for."""

    def __init__(self, width: int = 1200, height: int = 800) -> None:
        binary = chromium_binary()
        assert binary, "no Chromium on this machine"
        self.profile = tempfile.mkdtemp(prefix="amem-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire() -> None:  # the child's fd 3 reads our commands, fd 4 carries its answers
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        args = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe"]
        args += ["--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>", "--no-first-run"]
        args += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]
        args += ["--disable-dev-shm-usage", f"--user-data-dir={self.profile}", f"--window-size={width},{height}"]
        self.proc = subprocess.Popen(
            [*args, "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=wire,  # noqa: PLW1509 - only dup2 runs in the child
            pass_fds=(3, 4),  # close_fds runs after wire(): keep what it made
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Network.enable", session=True)
        self.call("Page.enable", session=True)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=True,
        )

    def call(
        self, method: str, params: dict[str, Any] | None = None, *, session: bool = False, timeout: float = 60
    ) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._receive(timeout)
            if answer.get("id") == self._next:
                assert "error" not in answer, answer
                result: dict[str, Any] = answer.get("result", {})
                return result
            self.events.append(answer)

    def _receive(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            assert left > 0, "Chromium did not answer"
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if ready:
                chunk = os.read(self._from_chrome, 1 << 20)
                assert chunk, "Chromium went away"
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(line)  # type: ignore[no-any-return]

    def open(self, path: Path) -> None:
        self.call("Page.navigate", {"url": path.resolve().as_uri()}, session=True)

    def evaluate(self, expression: str, *, wait: bool = False, timeout: float = 60) -> Any:
        """The value of `expression`; with `wait`, of the promise it gives, once it settles."""
        params = {"expression": expression, "returnByValue": True, "awaitPromise": wait}
        result = self.call("Runtime.evaluate", params, session=True, timeout=timeout)
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 240) -> Any:
        """The value of `expression` once it is truthy (polled)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.2)
        raise AssertionError(f"the page never made {expression!r} true")

    def screenshot(self, scale: float = 1.0) -> bytes:
        params: dict[str, Any] = {"format": "png"}
        if scale != 1.0:
            size = self.evaluate("[window.innerWidth, window.innerHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": scale}
        return base64.b64decode(self.call("Page.captureScreenshot", params, session=True)["data"])

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def close(self) -> None:
        with contextlib.suppress(AssertionError, OSError):
            self.call("Browser.close")
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)
        shutil.rmtree(self.profile, ignore_errors=True)


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGBA or RGB bytes) of an 8-bit truecolour PNG, unfiltered: stdlib only."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, idat, header = 8, b"", b""
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6), (depth, colour)
    step = 4 if colour == 6 else 3
    raw = zlib.decompress(idat)
    rows, previous, stride = [], bytearray(width * step), width * step
    for row in range(height):
        kind, line = raw[row * (stride + 1)], bytearray(raw[row * (stride + 1) + 1 : (row + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - step] if i >= step else 0
            up, corner = previous[i], previous[i - step] if i >= step else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, [bytes(r[i : i + 3]) for r in rows for i in range(0, stride, step)]


def colour_census(png: bytes) -> tuple[int, float]:
    """(distinct colours, share of pixels not of the most common colour, the background)."""
    from collections import Counter

    _, _, pixels = png_pixels(png)
    counts = Counter(pixels)
    background = counts.most_common(1)[0][1]
    return len(counts), 1 - background / len(pixels)
