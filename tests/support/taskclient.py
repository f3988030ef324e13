"""A raw reference client of the Tasks extension, for tests through the real process.

The official clients do not drive every path of the extension (see
docs/interop.md), so this one does: it spawns ``mockmcp run``, writes one JSON
line per request with the extension declared (unless told otherwise), and
reads lines until the answer with its id, keeping every notification it saw.
It polls as the extension asks: no faster than ``pollIntervalMs`` (scaled by
the run's time scale), stopping at a terminal status.
"""

from __future__ import annotations

import itertools
import json
import select
import subprocess
import time
from typing import Any, Protocol

from support.messages import META

from support.process import mockmcp_cmd

EXTENSION = "io.modelcontextprotocol/tasks"
WITH_TASKS = {"extensions": {EXTENSION: {}}}
TERMINAL = ("completed", "failed", "cancelled")


class TaskClient:
    def __init__(self, *args: str, time_scale: float = 1.0, start_id: int = 1) -> None:
        extra = ["--time-scale", str(time_scale)] if time_scale != 1.0 else []
        self.time_scale = time_scale
        self.proc = subprocess.Popen(
            mockmcp_cmd("run", *args, *extra), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.ids = itertools.count(start_id)
        self.notifications: list[dict[str, Any]] = []
        self._buffer = b""

    # ------------------------------------------------------------ the wire

    def write(self, method: str, params: dict[str, Any] | None = None, caps: Any = WITH_TASKS) -> int:
        rid = next(self.ids)
        p = dict(params or {})
        p["_meta"] = {**META, "io.modelcontextprotocol/clientCapabilities": caps}
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": p}) + "\n").encode())
        self.proc.stdin.flush()
        return rid

    def read(self, timeout: float = 20.0) -> dict[str, Any]:
        """The next message the mock wrote (fails after ``timeout`` seconds, or if it closed stdout)."""
        msg = self.read_or_eof(timeout)
        assert msg is not None, f"the mock closed stdout; stderr: {self.proc.stderr.read().decode() if self.proc.stderr else ''}"
        return msg

    def read_or_eof(self, timeout: float = 20.0) -> dict[str, Any] | None:
        """The next message, or ``None`` when the mock closed stdout (it exited)."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            assert left > 0, "the mock wrote nothing in time"
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if ready:
                chunk = self.proc.stdout.read1(65536)  # type: ignore[union-attr]
                if not chunk:
                    return None
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(raw)  # type: ignore[no-any-return]

    def answer(self, rid: int, timeout: float = 20.0) -> dict[str, Any]:
        msg = self.answer_or_eof(rid, timeout)
        assert msg is not None, f"the mock exited before answering {rid}"
        return msg

    def answer_or_eof(self, rid: int, timeout: float = 20.0) -> dict[str, Any] | None:
        while True:
            msg = self.read_or_eof(timeout)
            if msg is None or (msg.get("id") == rid and "method" not in msg):
                return msg
            self.notifications.append(msg)

    def ask(self, method: str, params: dict[str, Any] | None = None, caps: Any = WITH_TASKS) -> dict[str, Any]:
        return self.answer(self.write(method, params, caps))

    # ------------------------------------------------------------ the extension

    def call(self, tool: str, caps: Any = WITH_TASKS, **arguments: Any) -> dict[str, Any]:
        return self.ask("tools/call", {"name": tool, "arguments": arguments}, caps)

    def get(self, task_id: str) -> dict[str, Any]:
        return self.ask("tasks/get", {"taskId": task_id})

    def poll_until_terminal(self, task_id: str, interval_ms: float, limit: int = 50, answers: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Poll at the task's interval until it ends; answer input requests from ``answers``.

        Returns every ``tasks/get`` result seen, in order."""
        seen: list[dict[str, Any]] = []
        answered: set[str] = set()
        for _ in range(limit):
            result = self.get(task_id)["result"]
            seen.append(result)
            if result["status"] in TERMINAL:
                return seen
            if result["status"] == "input_required":
                fresh = {k: (answers or {})[k] for k in result["inputRequests"] if k not in answered and k in (answers or {})}
                if fresh:
                    ack = self.ask("tasks/update", {"taskId": task_id, "inputResponses": fresh})
                    assert ack["result"]["resultType"] == "complete", ack
                    answered |= set(fresh)
            time.sleep(result.get("pollIntervalMs", interval_ms) / 1000 * self.time_scale)
        raise AssertionError(f"task {task_id} did not end in {limit} polls: {seen[-1]}")

    def close(self, timeout: float = 10.0) -> int:
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        finally:
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


class TasksPeer(Protocol):
    """What ``walk_the_task_faults`` needs of a client: ``TaskClient`` over stdio, ``HttpClient`` over HTTP."""

    def ask(self, method: str, params: dict[str, Any] | None = None, caps: Any = ...) -> dict[str, Any]: ...

    def call(self, tool: str, caps: Any = ..., **arguments: Any) -> dict[str, Any]: ...

    def get(self, task_id: str) -> dict[str, Any]: ...


def walk_the_task_faults(client: TasksPeer) -> None:
    """The ``tasks-faults`` scenario's tools, but ``hang_get`` (each transport shows a hung answer
    its own way): each fault as the scenario promises it, whatever the transport."""
    tid = client.call("vanish")["result"]["taskId"]
    assert client.get(tid)["result"]["status"] == "working"
    assert client.get(tid)["error"]["code"] == -32602

    tid = client.call("backwards")["result"]["taskId"]
    assert [client.get(tid)["result"]["status"] for _ in range(3)] == ["working", "working", "completed"]

    tid = client.call("terminal_changes")["result"]["taskId"]
    assert [client.get(tid)["result"]["status"] for _ in range(3)] == ["working", "completed", "failed"]

    tid = client.call("expires")["result"]["taskId"]
    time.sleep(0.2)
    assert "expired" in client.get(tid)["error"]["message"]

    tid = client.call("reused_key")["result"]["taskId"]
    assert list(client.get(tid)["result"]["inputRequests"]) == ["confirm"]
    client.ask("tasks/update", {"taskId": tid, "inputResponses": {"confirm": {"action": "accept"}}})
    again = client.get(tid)["result"]
    assert list(again["inputRequests"]) == ["confirm"] and "Second question" in again["inputRequests"]["confirm"]["params"]["message"]

    assert client.call("no_capability", caps={})["result"]["resultType"] == "task"
    assert client.ask("prompts/get", {"name": "report"})["result"]["resultType"] == "task"
