"""The control core without sockets: a ``Control`` and an MCP ``Connection`` over one engine.

Control lines go in as bytes and come back as an ``Outcome``; MCP messages go in through the
connection, and what its plans send is shown to the control's journal as written, as the
shell does, so an operation can be judged by its effect on the MCP stream.
"""

from __future__ import annotations

import json
from typing import Any

from support.engines import engine_for
from support.messages import line

from mockmcp.core.actions import Plan, Send
from mockmcp.core.connection import Connection
from mockmcp.core.control import Control, Outcome
from mockmcp.scenario import fragments

__all__ = ["SCENARIO", "Rig"]

SCENARIO = """\
mockmcp: 1
state: {initial: start, states: [start, ready]}
tools:
  - name: greet
    replies:
      - steps: [{text: "hello {{ arguments.who }}"}]
resources:
  - {uri: "file:///a", name: a, text: A}
"""


class Rig:
    def __init__(self, yaml_text: str = SCENARIO) -> None:
        self.engine = engine_for(yaml_text)
        self.conn = Connection(self.engine)
        self.control = Control(self.engine, fragments)
        self.conn.observers.append(self.control.inbound)
        self.ids = 0

    def ctl(self, method: str, **params: Any) -> Outcome:
        self.ids += 1
        data = json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}).encode()
        return self.control.handle_line(data)

    def ok(self, method: str, **params: Any) -> dict[str, Any]:
        out = self.ctl(method, **params)
        assert out.response is not None and "result" in out.response, out.response
        result: dict[str, Any] = out.response["result"]
        return result

    def error(self, method: str, **params: Any) -> dict[str, Any]:
        out = self.ctl(method, **params)
        assert out.response is not None and "error" in out.response, out.response
        err: dict[str, Any] = out.response["error"]
        return err

    def mcp(self, msg: dict[str, Any]) -> list[dict[str, Any]]:
        """Feed one MCP message; the lines its plan sends at once (and sees them as written)."""
        out = []
        for plan in self.conn.receive_data(line(msg)):
            assert isinstance(plan, Plan)
            for action in plan.actions:
                if isinstance(action, Send):
                    self.control.outbound(action.data)
                    out.append(json.loads(action.data))
        return out
