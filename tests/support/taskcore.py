"""The Tasks extension driven on the core itself, in process: no shell, no process, a clock the test moves.

``Core`` is a client of one engine through a ``Connection``; every message the core writes to it
is checked against the official schemas (the revision's, and the Tasks extension's for its own
shapes: ``support.schema``). ``send_with_tasks`` and ``task_notes`` work on any connection (a
plain one, or a session directory's), and check what they see the same way.
"""

from __future__ import annotations

import itertools
from typing import Any

from support.engines import scenario_engine
from support.messages import line, request
from support.schema import checker

from mockmcp.core.actions import Send
from mockmcp.core.connection import Connection
from mockmcp.wire import protocol as p

__all__ = ["EXT", "TASKS_META", "Core", "send_with_tasks", "task_notes"]

EXT = {"extensions": {p.TASKS_EXTENSION: {}}}  # the client capabilities that declare the extension
TASKS_META = {p.META_CLIENT_CAPABILITIES: EXT}  # a request's ``_meta`` with them


class Core:
    """A client on the core itself: one request in, the messages it planned out."""

    def __init__(self, scenario: str = "tasks", key: bytes = b"k", *, checked: bool = True, **kw: Any) -> None:
        self.checked = checked  # False: a scenario whose faults break the extension on purpose
        self.now = 1_800_000_000.0
        self.engine = scenario_engine(scenario, state_key=key, seed=0, clock=lambda: self.now, **kw)
        self.conn = Connection(self.engine)
        self.ids = itertools.count(1)

    def send(self, method: str, params: dict[str, Any] | None = None, caps: Any = EXT) -> list[dict[str, Any]]:
        msg = request(next(self.ids), method, params, {p.META_CLIENT_CAPABILITIES: caps})
        out = []
        for plan in self.conn.receive_data(line(msg)):
            out.extend(a.message for a in plan.actions if isinstance(a, Send))  # type: ignore[union-attr]
        if self.checked:
            for message in out:
                checker().check(message, method if "id" in message else None)
        return out

    def ask(self, method: str, params: dict[str, Any] | None = None, caps: Any = EXT) -> dict[str, Any]:
        """The response (notifications to streams, if any, are dropped)."""
        (answer,) = [m for m in self.send(method, params, caps) if "id" in m]
        return answer

    def call(self, tool: str, caps: Any = EXT, **args: Any) -> dict[str, Any]:
        return self.ask("tools/call", {"name": tool, "arguments": args}, caps)

    def start(self, tool: str, **args: Any) -> str:
        result = self.call(tool, **args)["result"]
        assert result["resultType"] == "task", result
        return str(result["taskId"])

    def get(self, task_id: Any) -> dict[str, Any]:
        return self.ask("tasks/get", {"taskId": task_id})


def send_with_tasks(conn: Any, rid: Any, method: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Every message the immediate part of the answer writes (the answer, notifications)."""
    (plan,) = conn.receive_data(line(request(rid, method, params, TASKS_META)))
    out = [a.message for a in plan.actions if hasattr(a, "message")]
    for message in out:
        checker().check(message, method if "id" in message else None)
    return out


def task_notes(sends: list[Any]) -> list[dict[str, Any]]:
    """The params of each ``notifications/tasks`` among ``sends`` (the engine's ``Send`` actions)."""
    return [s.message["params"] for s in sends if s.message.get("method") == p.TASKS_NOTIFICATION]
