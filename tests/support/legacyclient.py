"""A 2025-11-25 (legacy era) client on a real ``mockmcp run`` process's pipes.

It initializes as such a client would, then sends requests a line at a time and reads
every line up to an answer, so a test can answer the server's own requests when they come.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

from support.process import mockmcp_cmd

__all__ = ["CAPS", "Legacy"]

CAPS = {"sampling": {}, "roots": {"listChanged": True}, "elicitation": {"form": {}, "url": {}}}


class Legacy:
    """A 2025-11-25 client on the real process's pipes."""

    def __init__(self, scenario: str | Path, *args: str, capabilities: dict[str, Any] | None = None) -> None:
        self.buffer = b""
        self.proc = subprocess.Popen(mockmcp_cmd("run", str(scenario), *args), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        init = self.call(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": CAPS if capabilities is None else capabilities,
                                           "clientInfo": {"name": "legacy-test", "version": "1"}})
        assert init["result"]["protocolVersion"] == "2025-11-25", init
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def read(self, timeout: float = 10) -> dict[str, Any]:
        """The next line (read from the fd itself: a buffered reader would hide lines from select)."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no line from the mock in time (have {self.buffer[:200]!r})"
            chunk = os.read(fd, 65536)
            assert chunk, "the mock closed stdout"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)  # type: ignore[no-any-return]

    def until(self, rid: Any) -> list[dict[str, Any]]:
        """Every message up to and including the response to ``rid``."""
        out = []
        while True:
            msg = self.read()
            out.append(msg)
            if msg.get("id") == rid and "method" not in msg:
                return out

    def call(self, rid: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
        return self.until(rid)[-1]

    def tool(self, rid: Any, name: str, **arguments: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": arguments}})

    def close(self) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode()
