"""A real ``mockmcp run --control PATH`` process: MCP lines over its pipes, the control socket through ``SyncControl``."""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

from support.messages import discover, line
from support.process import direct_cmd, mockmcp_cmd

from mockmcp.controlclient import SyncControl

__all__ = ["SCENARIO", "Mock"]

SCENARIO = """\
mockmcp: 1
tools:
  - name: greet
    replies:
      - steps: [{text: "hello {{ arguments.who }}"}]
"""


class Mock:
    """A mock process with a control socket; MCP lines over its pipes."""

    def __init__(self, tmp_path: Path, *extra: str, scenario: str = SCENARIO, direct: bool = False) -> None:
        """``direct``: a fresh interpreter even under the warm server, for a test that reads the
        mock's own process (``support.process.direct_cmd``)."""
        self.path = str(tmp_path / "c.sock")
        file = tmp_path / "s.yaml"
        file.write_text(scenario)
        self.proc = subprocess.Popen(
            (direct_cmd if direct else mockmcp_cmd)("run", str(file), "--control", self.path, *extra),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        # 60 s for the socket to appear: the default 10 s was not enough for a spawn under a load of 13
        self.ctl = SyncControl(self.path, connect_timeout=60)
        self.ctl.position()  # waits for the socket: the mock is up
        self.buffer = b""

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line(msg))
        self.proc.stdin.flush()

    def read(self, timeout: float = 10.0) -> dict[str, Any] | None:
        """The next stdout line, or ``None`` if none came within ``timeout``."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self.buffer += chunk
        first, self.buffer = self.buffer.split(b"\n", 1)
        out: dict[str, Any] = json.loads(first)
        return out

    def round_trip(self, rid: Any) -> dict[str, Any]:
        self.send(discover(rid))
        msg = self.read()
        assert msg is not None and msg["id"] == rid, msg
        return msg

    def close(self) -> int:
        """Close stdin; the exit status. Stdin and stdout are closed once the mock is gone; stderr
        stays open for a caller to read what the mock said."""
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        status = self.proc.wait(10)
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):  # stdin's unwritten bytes: the mock is gone
                assert pipe is not None
                pipe.close()
        return status
