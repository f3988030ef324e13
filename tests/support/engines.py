"""The request builders and engine builders the tests share (one copy each).

``conftest`` keeps ``META``, ``request`` and ``line`` (the schema checker and the
process helpers live there too); what the engine-level and shell-level tests
repeated on top of them lives here.
"""

from __future__ import annotations

import json
from typing import Any

from support.messages import line

from support.paths import SCENARIOS

from mockmcp.core.actions import Cancel, Plan
from mockmcp.core.connection import Connection
from mockmcp.core.engine import Engine
from mockmcp.scenario.loader import load, load_text
from mockmcp.launch.boot import new_engine

__all__ = ["GATED", "bundled", "engine_for", "plan_for", "scenario_engine", "session_engine"]


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


def session_engine(name_or_yaml: str, store: Any, **kw: Any) -> Engine:
    """An engine served from a session directory (as ``mockmcp run --session`` builds it): the
    store's archive of ended tasks is where the task table looks for a task it does not hold."""
    return scenario_engine(name_or_yaml, task_lookup=store.archived, task_archived_ids=store.archived_ids, **kw)


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
