"""A fake link for testing the sans-I/O core without processes or trio.

``FakeLink`` feeds bytes to a ``Connection`` and runs the plans it returns on a
virtual clock, recording what the shell would write and when. Sleeps advance
the virtual clock; parks stay open until cancelled.
"""

from __future__ import annotations

import json
from typing import Any

from mockmcp.actions import Cancel, Dribble, Emit, Exit, Park, Plan, Send, Sleep, Stderr, WriteRaw
from mockmcp.connection import Connection
from mockmcp.engine import Engine
from mockmcp.run import new_engine
from mockmcp.loader import load_text


def engine_for(yaml_text: str, **kw: Any) -> Engine:
    scenario, _ = load_text(yaml_text, "<test>")
    return new_engine(scenario, **kw)


class FakeLink:
    def __init__(self, engine: Engine, *, max_line: int | None = None) -> None:
        self.conn = Connection(engine, **({"max_line": max_line} if max_line else {}))
        self.engine = engine
        self.written: list[bytes] = []  # raw bytes, in order
        self.timeline: list[tuple[float, bytes]] = []
        self.exits: list[int] = []
        self.stderr: list[str] = []
        self.open: dict[Any, Plan] = {}  # parked plans (hangs, subscriptions)

    def send(self, *messages: Any) -> list[dict[str, Any]]:
        """Send messages (dicts or raw bytes); run resulting plans to completion; return new output."""
        before = len(self.written)
        for m in messages:
            data = m if isinstance(m, bytes) else (json.dumps(m) + "\n").encode()
            for out in self.conn.receive_data(data):
                self._run(out)
        return self.parse(self.written[before:])

    def eof(self) -> list[dict[str, Any]]:
        before = len(self.written)
        for out in self.conn.receive_eof():
            self._run(out)
        return self.parse(self.written[before:])

    @staticmethod
    def parse(chunks: list[bytes]) -> list[dict[str, Any]]:
        data = b"".join(chunks)
        return [json.loads(line) for line in data.split(b"\n") if line.strip()]

    def _run(self, out: Any) -> None:
        if isinstance(out, Cancel):
            plan = self.open.pop(out.request_id, None)
            if plan is not None:
                self.conn.finished(out.request_id)
            return
        clock = 0.0
        for action in out.all_actions():
            if action is None:
                continue
            if isinstance(action, Send):
                self._write(clock, action.data)
            elif isinstance(action, Sleep):
                clock += action.seconds
            elif isinstance(action, Emit):
                for s in self.engine.fan_out(action):
                    self._write(clock, s.data)
            elif isinstance(action, Park):
                self.open[out.request_id] = out
                return
            elif isinstance(action, WriteRaw):
                self._write(clock, action.data)
            elif isinstance(action, Exit):
                if action.partial:
                    self._write(clock, action.partial)
                self.exits.append(action.status)
                return
            elif isinstance(action, Stderr):
                self.stderr += [action.text] * action.repeat
            elif isinstance(action, Dribble):
                pass
        if not out.immediate:
            self.conn.finished(out.request_id)

    def _write(self, at: float, data: bytes) -> None:
        self.written.append(data)
        self.timeline.append((at, data))
