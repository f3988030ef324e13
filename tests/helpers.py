"""The request builders and engine builders the tests share (one copy each).

``conftest`` keeps ``META``, ``request`` and ``line`` (the schema checker and the
process helpers live there too); what the engine-level and shell-level tests
repeated on top of them lives here.
"""

from __future__ import annotations

import json
from typing import Any

from conftest import META, SCENARIOS, line, request

from mockmcp.actions import Cancel, Plan
from mockmcp.connection import Connection
from mockmcp.engine import Engine
from mockmcp.loader import load, load_text
from mockmcp.run import new_engine

__all__ = [
    "GATED", "META", "bundled", "call", "call_line", "cancelled", "discover", "engine_for", "line", "listen", "plan_for",
    "request", "scenario_engine",
]


# ---------------------------------------------------------------- requests


def call(rid: Any, name: str, *, meta: dict[str, Any] | None = None, **args: Any) -> dict[str, Any]:
    """A ``tools/call`` of tool ``name`` with keyword arguments as its ``arguments``; ``meta``
    adds to (or overrides) the request's ``_meta`` (a ``progressToken``, a log level)."""
    return request(rid, "tools/call", {"name": name, "arguments": args}, meta)


def call_line(rid: Any, tool: str, arguments_json: str) -> bytes:
    """A ``tools/call`` line whose arguments are raw JSON text (values ``json.dumps`` cannot write)."""
    return (
        '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%s,"arguments":%s,"_meta":%s}}\n'
        % (json.dumps(rid), json.dumps(tool), arguments_json, json.dumps(META))
    ).encode()


def discover(rid: Any) -> dict[str, Any]:
    """``server/discover``: every scenario answers it at once, so it is the usual probe."""
    return request(rid, "server/discover")


def cancelled(rid: Any, reason: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"requestId": rid}
    if reason is not None:
        params["reason"] = reason
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}


def listen(rid: Any, **notifications: Any) -> dict[str, Any]:
    return request(rid, "subscriptions/listen", {"notifications": notifications})


# ---------------------------------------------------------------- engines


def engine_for(yaml_text: str, **kw: Any) -> Engine:
    """An engine for a scenario given as YAML text (``kw``: ``new_engine``'s seed, state_key, ...)."""
    scenario, _ = load_text(yaml_text, "<test>")
    return new_engine(scenario, **kw)  # type: ignore[no-any-return]


def bundled(name: str, **kw: Any) -> Engine:
    """An engine for the bundled scenario ``scenarios/NAME.yaml``, loaded without the cache."""
    scenario, _ = load(str(SCENARIOS / f"{name}.yaml"), use_cache=False)
    return new_engine(scenario, **kw)  # type: ignore[no-any-return]


def scenario_engine(name_or_yaml: str, **kw: Any) -> Engine:
    """YAML text (it has a newline) or a bundled name or path."""
    if "\n" in name_or_yaml:
        return engine_for(name_or_yaml, **kw)
    scenario, _ = load(name_or_yaml, use_cache=False)
    return new_engine(scenario, **kw)  # type: ignore[no-any-return]


def plan_for(engine: Engine, msg: dict[str, Any]) -> Plan | Cancel:
    """What the core plans for one message (no shell runs it: for tests of the plan itself)."""
    (out,) = Connection(engine).receive_data(line(msg))
    return out


# A task whose one phase ends when the named state becomes `released` (the tool `release` sets it).
GATED = """mockmcp: 1
state: {initial: idle, states: [idle, released]}
tools:
  - name: release
    replies: [{steps: [{setState: released}, {text: ok}]}]
  - name: gated
    replies:
      - steps:
          - task: {phases: [{state: released}], outcome: [{text: "released"}]}
"""
