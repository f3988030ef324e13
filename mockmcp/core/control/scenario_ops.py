"""The control operations on the running scenario: events, definitions, state, counters, armed replies.

``emit`` sends an event now; ``add``, ``replace`` and ``remove`` change a tool, prompt, resource
or template (checked exactly like a scenario file by the handed-in ``Fragments``, problems
located by JSON path inside the control request) and tell the listening streams; ``getState``
and ``setState`` read and set the named state; ``counters`` reads how often each rule matched;
``arm`` and ``disarm`` manage one-shot replies (``mockmcp.core.armed``). Sans-I/O.
"""

from __future__ import annotations

from typing import Any, cast

import attrs

from mockmcp.wire import errors
from mockmcp.wire import protocol as p
from mockmcp.scenario.model import base as model
from mockmcp.scenario.problems import did_you_mean
from mockmcp.core.actions import Emit, Send
from mockmcp.core.armed import Armed
from mockmcp.core.control.outcome import Outcome
from mockmcp.core.control.params import NotFound, bool_param, int_param, ok, str_param, when_param
from mockmcp.core.control.surface import AuthSurface, ControlledEngine, Fragments
from mockmcp.core.control.task_ops import Op, TaskOps

KIND_EVENT = {"tool": "tools/list_changed", "prompt": "prompts/list_changed", "resource": "resources/list_changed", "template": "resources/list_changed"}
KIND_FIELD = {"tool": ("tools", "name"), "prompt": ("prompts", "name"), "resource": ("resources", "uri"), "template": ("resourceTemplates", "uriTemplate")}


class ScenarioOps:
    """Changes and reads the engine's scenario and session for the control channel."""

    def __init__(self, engine: ControlledEngine, fragments: Fragments, tasks: TaskOps, auth: AuthSurface | None = None) -> None:
        self.engine = engine
        self.auth = auth  # getState says where the authorization server is
        self.fragments = fragments
        self.tasks = tasks
        self.armed_ids = 0  # the id the last armed reply got

    def operations(self) -> dict[str, Op]:
        return {
            "emit": self.emit,
            "add": self.add,
            "replace": self.replace,
            "remove": self.remove,
            "getState": self.get_state,
            "setState": self.set_state,
            "counters": self.counters,
            "arm": self.arm,
            "disarm": self.disarm,
        }

    # ------------------------------------------------------------ events

    def emit(self, rid: Any, params: dict[str, Any]) -> Outcome:
        event = str_param(params, "event", rid)
        if event == "log":
            sends = self._log_sends(params, rid)
        elif event == "tasks":
            sends = self.tasks.announce(params, rid)
        elif event in p.EVENT_METHOD:
            uri = str_param(params, "uri", rid, required=event == "resources/updated")
            sends = self.engine.fan_out(Emit(event, uri))
        else:
            known = [*p.EVENT_METHOD, "log", "tasks"]
            raise errors.InvalidParams(
                f"Invalid params: unknown event {event!r}{did_you_mean(event, known)} (known: {', '.join(known)})",
                request_id=rid,
            )
        return Outcome(ok(rid, {"delivered": len(sends)}), sends)

    def _log_sends(self, params: dict[str, Any], rid: Any) -> list[Send]:
        """A log message on every open stream whose listen request asked for that level or below."""
        level = str_param(params, "level", rid, required=False) or "info"
        if level not in p.LOG_LEVEL_RANK:
            raise errors.InvalidParams(f"Invalid params: level must be one of {', '.join(p.LOG_LEVELS)}", request_id=rid)
        logger = str_param(params, "logger", rid, required=False)
        if "data" not in params:
            raise errors.InvalidParams("Invalid params: a log event needs 'data'", request_id=rid)
        rank = p.LOG_LEVEL_RANK[level]
        out = []
        for sid, sub in self.engine.session.subscriptions.items():
            wanted = sub.log_level
            if wanted is None or wanted not in p.LOG_LEVEL_RANK or p.LOG_LEVEL_RANK[wanted] > rank:
                continue
            body: dict[str, Any] = {"_meta": {p.META_SUBSCRIPTION_ID: sid}, "level": level, "data": params["data"]}
            if logger is not None:
                body["logger"] = logger
            out.append(self.engine.envelope.notification(p.MESSAGE, body))
        return out

    # ------------------------------------------------------------ definitions

    def _kind(self, params: dict[str, Any], rid: Any) -> str:
        kind = str_param(params, "kind", rid)
        if kind not in KIND_FIELD:
            raise errors.InvalidParams(
                f"Invalid params: kind must be one of {', '.join(KIND_FIELD)}, not {kind!r}{did_you_mean(kind, KIND_FIELD)}",
                request_id=rid,
            )
        return str(kind)

    def _changed(self, rid: Any, params: dict[str, Any], kind: str, scenario: model.Scenario, result: dict[str, Any]) -> Outcome:
        self.engine.replace_scenario(scenario)
        sends: list[Send] = []
        if bool_param(params, "notify", rid, default=True):
            sends = self.engine.fan_out(Emit(KIND_EVENT[kind], None))
        result["delivered"] = len(sends)
        return Outcome(ok(rid, result), sends)

    def _keys(self, kind: str) -> list[str]:
        field, key = KIND_FIELD[kind]
        return [str(getattr(x, key)) for x in getattr(self.engine.scenario, field)]

    def _define(self, rid: Any, params: dict[str, Any], replace: bool) -> Outcome:
        kind = self._kind(params, rid)
        if "definition" not in params:
            raise errors.InvalidParams("Invalid params: missing 'definition'", request_id=rid)
        definition = params["definition"]
        key_field = KIND_FIELD[kind][1]
        key = definition.get(key_field) if type(definition) is dict else None
        if replace and type(key) is str and key not in self._keys(kind):
            raise self._missing(kind, key, rid)
        scenario, warnings = self.fragments.primitive(
            self.engine.scenario, kind, definition, replace=replace and type(key) is str, at=("params", "definition"), request_id=rid
        )
        return self._changed(rid, params, kind, scenario, {"kind": kind, "key": key, "warnings": warnings})

    def add(self, rid: Any, params: dict[str, Any]) -> Outcome:
        return self._define(rid, params, replace=False)

    def replace(self, rid: Any, params: dict[str, Any]) -> Outcome:
        return self._define(rid, params, replace=True)

    def _missing(self, kind: str, key: str, rid: Any) -> NotFound:
        keys = self._keys(kind)
        return NotFound(
            f"no {kind} {key!r}{did_you_mean(key, keys)} (defined: {', '.join(map(repr, keys)) or 'none'})",
            data={"kind": kind, "key": key},
            request_id=rid,
        )

    def remove(self, rid: Any, params: dict[str, Any]) -> Outcome:
        kind = self._kind(params, rid)
        key = str_param(params, "key", rid)
        field, key_field = KIND_FIELD[kind]
        items = getattr(self.engine.scenario, field)
        kept = [x for x in items if getattr(x, key_field) != key]
        if len(kept) == len(items):
            raise self._missing(kind, key, rid)

        changes: dict[str, Any] = {field: kept}
        return self._changed(rid, params, kind, attrs.evolve(self.engine.scenario, **changes), {"kind": kind, "key": key})

    # ------------------------------------------------------------ state and counters

    def get_state(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        if self.auth is None:
            return ok(rid, {"state": self.engine.session.state})
        return ok(rid, {"state": self.engine.session.state, "auth": self.auth.describe()})

    def set_state(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        state = str_param(params, "state", rid)
        declared = self.engine.scenario.state.states
        if declared is not None and state not in declared:
            raise errors.InvalidParams(
                f"Invalid params: unknown state {state!r}{did_you_mean(state, declared)} (declared: {', '.join(declared)})",
                request_id=rid,
            )
        session = self.engine.session
        previous = session.state
        session.set_state(state)
        return ok(rid, {"state": state, "previous": previous})

    def counters(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        svc = self.engine.services
        session = self.engine.session
        # (the session counts rules by identity, as objects; every one it counts is a scenario rule)
        rules = [{"rule": svc.rule_label(cast(model.Rule, rule)), "matched": count} for rule, count in session.match_counts()]
        armed = [a.describe() for a in session.armed]
        return ok(rid, {"requests": session.requests_seen, "rules": rules, "armed": armed})

    # ------------------------------------------------------------ armed replies

    def arm(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        when, method, name, uri = when_param(params, rid, method_required=True)
        assert method is not None
        times = int_param(params, "times", rid, default=1)
        if times < 1:
            raise errors.InvalidParams("Invalid params: times must be at least 1", request_id=rid)
        if "steps" not in params:
            raise errors.InvalidParams("Invalid params: missing 'steps' (the reply, as in a scenario rule)", request_id=rid)
        rule = self.fragments.rule(
            self.engine.scenario, method, when, params["steps"], at_when=("params", "when"), at_steps=("params", "steps"), request_id=rid
        )
        self.armed_ids += 1

        named = attrs.evolve(rule, name=f"armed#{self.armed_ids}")
        entry = Armed(self.armed_ids, method, name, uri, named, times)
        self.engine.session.armed.append(entry)
        return ok(rid, entry.describe())

    def disarm(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        armed = self.engine.session.armed
        if "id" not in params:
            n = len(armed)
            armed.clear()
            return ok(rid, {"disarmed": n})
        which = int_param(params, "id", rid)
        for entry in armed:
            if entry.id == which:
                armed.remove(entry)
                return ok(rid, {"disarmed": 1})
        raise NotFound(f"no armed reply with id {which} (armed: {[a.id for a in armed] or 'none'})", request_id=rid)
