"""Shared driver code for the benchmarks: spawn a server, talk NDJSON, read /proc.

Every benchmark talks to its server through real pipes, as a client suite does.
The same driver code measures the floor (floor.py) and mockmcp, so the ratios
compare servers, not drivers.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PY = sys.executable

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
}


def compile_package() -> None:
    """Byte-compile mockmcp as a wheel install does. In a checkout run with
    ``PYTHONDONTWRITEBYTECODE=1``, a module edited since its ``.pyc`` was written is
    compiled again by every spawn (model.py alone: about 10 ms), which would be
    measured as start-up time no user pays."""
    import compileall

    compileall.compile_dir(str(ROOT / "mockmcp"), quiet=1)


compile_package()


def floor_cmd() -> list[str]:
    return [PY, str(HERE / "floor.py")]


def mock_cmd(scenario: str, *extra: str) -> list[str]:
    return [PY, "-m", "mockmcp", "run", scenario, *extra]


def request(rid: Any, method: str, params: dict[str, Any] | None = None) -> bytes:
    p = dict(params or {})
    p["_meta"] = META
    return (json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": p}, separators=(",", ":")) + "\n").encode()


def call(rid: Any, tool: str, arguments: dict[str, Any] | None = None) -> bytes:
    return request(rid, "tools/call", {"name": tool, "arguments": arguments or {}})


class Server:
    """A spawned server with pipes; ``t0`` is the moment just before the spawn."""

    def __init__(self, cmd: list[str], env: dict[str, str] | None = None) -> None:
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
        )
        self.out = self.proc.stdout
        self._buf = b""

    def write(self, data: bytes) -> None:
        self.proc.stdin.write(data)

    def readline(self) -> bytes:
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line, self._buf = self._buf[: nl + 1], self._buf[nl + 1 :]
                return line
            chunk = os.read(self.out.fileno(), 1 << 16)
            if not chunk:
                raise EOFError("server closed stdout")
            self._buf += chunk

    def read_lines(self, n: int) -> int:
        """Read ``n`` lines (counting newlines in bulk) and return the count."""
        got = self._buf.count(b"\n")
        tail = self._buf.rsplit(b"\n", 1)[-1] if got else self._buf
        fd = self.out.fileno()
        while got < n:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise EOFError(f"server closed stdout after {got} of {n} lines")
            got += chunk.count(b"\n")
            tail = (tail + chunk).rsplit(b"\n", 1)[-1] if b"\n" in chunk else tail + chunk
        self._buf = tail
        return got

    def ask(self, data: bytes) -> dict[str, Any]:
        self.write(data)
        return json.loads(self.readline())

    def rss_kib(self, key: str = "VmRSS") -> int:
        with open(f"/proc/{self.proc.pid}/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        raise KeyError(key)

    def close(self, timeout: float = 10.0) -> float:
        """Close stdin and return the seconds until the process exited."""
        t = time.perf_counter()
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        took = time.perf_counter() - t
        self.out.close()
        return took


def write_in_thread(server: Server, data: bytes) -> threading.Thread:
    def run() -> None:
        try:
            server.write(data)
        except BrokenPipeError:
            pass

    th = threading.Thread(target=run, daemon=True)
    th.start()
    return th


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def scenario_file(name: str, text: str) -> str:
    d = Path(tempfile.gettempdir()) / "mockmcp-bench"
    d.mkdir(exist_ok=True)
    path = d / name
    path.write_text(text)
    return str(path)
