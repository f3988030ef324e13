"""JSON Schemas (2020-12) of what mockmcp hands a test in other languages: the report, a journal
record and the control channel's operations (``mockmcp schema report|journal|control``).

The scenario's schema is derived from the model (``cli/schema.py``); these shapes are written in
plain dicts by the modules that produce them (``verify/reportshape.py``,
``scenario/expectations.py``, ``verify/checks.py``, ``verify/verifier.py``, ``core/control/``), so
they are written out here, once, and held to those producers by tests that validate real output
against them (``tests/cli/test_output_schemas.py``). The TypeScript package generates its types
from these (``packages/mockmcp-js/scripts/gen-types.mjs``), and the suite regenerates and diffs
them, so a shape changed here reaches TypeScript or the suite fails.
"""

from __future__ import annotations

from typing import Any

BASE = "https://mockmcp.invalid/schema/"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
_JSON: dict[str, Any] = {"description": "any JSON value"}
_ID = {"type": ["string", "integer"], "description": "a JSON-RPC id"}
_OBJ: dict[str, Any] = {"type": "object"}


def _obj(props: dict[str, Any], required: list[str] | None = None, *, description: str | None = None,
         more: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object"}
    if description:
        out["description"] = description
    out["properties"] = props
    if required:
        out["required"] = required
    out["additionalProperties"] = more
    return out


def _str(description: str | None = None) -> dict[str, Any]:
    return {"type": "string", **({"description": description} if description else {})}


def _int(description: str | None = None) -> dict[str, Any]:
    return {"type": "integer", **({"description": description} if description else {})}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/$defs/{name}"}


_FINDING = _obj({
    "check": _str("the check's id, e.g. mrtr.requestState.dropped (docs/verification.md lists them)"),
    "level": {"enum": ["error", "warning", "note"]},
    "spec": _str("the specification section it enforces (a URL)"),
    "text": _str("what the client did wrong"),
    "id": _ID,
    "message": _JSON,
    "nearMiss": _JSON,
    "pid": _int("the mock process that saw it (a session's report)"),
}, ["check", "level", "text"], description="One broken rule of the client checks.", more=True)

_VERDICT = _obj({
    "expectation": _str("the expectation's id, or its place (expectations[1])"),
    "request": _str("the requests it counts, described"),
    "wanted": _str("how many were wanted, described"),
    "count": _int("how many matching requests were seen"),
    "ids": {"type": "array", "items": _ID, "description": "the ids of the first matching requests"},
    "verdict": {"enum": ["passed", "failed"]},
    "why": _str("why it failed"),
    "retriesNotCounted": _int(),
    "before": _str(),
    "after": _str(),
}, ["expectation", "request", "wanted", "count", "ids", "verdict"],
    description="One expectation of the scenario, judged.")

_COUNTS = _obj({
    "requests": _int(),
    "notifications": _int(),
    "findings": _obj({"error": _int(), "warning": _int(), "note": _int()}, ["error", "warning", "note"]),
    "byCheck": {"type": "object", "additionalProperties": {"type": "integer"}},
    "expectations": _obj({"passed": _int(), "failed": _int()}, ["passed", "failed"]),
    "clientResponses": _int(), "invalid": _int(), "cancelled": _int(), "sent": _int(), "rawWrites": _int(),
}, ["requests", "notifications", "findings", "byCheck", "expectations"], more=True)

_REPORT = _obj({
    "mockmcp": {"const": 1},
    "pid": _int("one process's report (--report)"),
    "session": _str("a session's report (mockmcp report DIR): its directory"),
    "processes": {"type": "array", "items": {"type": "integer"}, "description": "the session's processes"},
    "ok": {"type": "boolean", "description": "no failed expectation and no error-level finding"},
    "counts": _ref("Counts"),
    "expectations": {"type": "array", "items": _ref("ExpectationVerdict")},
    "findings": {"type": "array", "items": _ref("Finding")},
    "perProcess": {"type": "object", "additionalProperties": _ref("Report"),
                   "description": "each process's own report, by pid (mockmcp report --per-process)"},
}, ["mockmcp", "ok", "counts", "expectations", "findings"],
    description="The verification report: what --report writes, and mockmcp report DIR --json.")

_JOURNAL_RECORD = _obj({
    "t": {"type": "number", "description": "monotonic clock, seconds"},
    "pid": _int("the mock's process id"),
    "dir": {"enum": ["start", "in", "out", "event", "finding", "verdict"]},
    "message": {**_OBJ, "description": "the parsed JSON-RPC message"},
    "raw": _str("the line as latin-1 text when it did not parse, or the bytes a fault wrote"),
    "fault": {"type": "boolean"},
    "error": {"type": ["string", "null"], "description": "why an inbound line was rejected"},
    "oversized": _int("the length of an over-long line"),
    "headers": {"type": "object", "additionalProperties": {"type": "string"}},
    "rule": _str("on out: the rule that answered"),
    "kind": _str("on event: what happened (cancelled, exit, ...)"),
    "finding": _ref("Finding"),
    "verdict": _ref("ExpectationVerdict"),
    "scenario": _str("on start: the scenario's description"),
    "argv": {"type": "array", "items": {"type": "string"}},
    "versions": {"type": "array", "items": {"type": "string"}},
}, ["t", "pid", "dir"], description="One line of --journal FILE (JSON Lines).", more=True)


def _schema(name: str, title: str, root: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": DRAFT, "$id": BASE + name + ".json", "title": title, **root, "$defs": dict(sorted(defs.items()))}


def report_schema() -> dict[str, Any]:
    """The report of one process or of a session."""
    return _schema("report", "mockmcp report", _ref("Report"),
                   {"Report": _REPORT, "Counts": _COUNTS, "ExpectationVerdict": _VERDICT, "Finding": _FINDING})


def journal_schema() -> dict[str, Any]:
    """One journal record."""
    return _schema("journal", "mockmcp journal record", _ref("JournalRecord"),
                   {"JournalRecord": _JOURNAL_RECORD, "ExpectationVerdict": _VERDICT, "Finding": _FINDING})


_KIND = {"enum": ["tool", "prompt", "resource", "template"]}
_WHEN = _obj({"method": _str(), "name": _str(), "uri": _str()}, description=(
    "which requests: method, optionally name and uri, and any key of a rule's when"), more=True)
_TASK_STATUS = {"enum": ["working", "input_required", "completed", "failed", "cancelled"]}
_ARMED = _obj({"id": _int(), "method": _str(), "name": _str(), "uri": _str(), "remaining": _int(), "hits": _int()},
              ["id", "method", "remaining", "hits"], description="An armed reply.")
_EMPTY = _obj({})
_STRS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
_SCOPES: dict[str, Any] = {**_STRS, "description": "OAuth scopes"}
_AUTH_STATE = _obj({
    "mcp": {"type": ["string", "null"], "description": "the MCP URL"},
    "authorizationServer": {"type": ["string", "null"], "description": "the issuer the resource's metadata names now"},
    "secondOrigin": {"type": ["string", "null"], "description": "the second origin's base URL (null: none)"},
    "pending": _int("authorization requests waiting for a decision"),
    "migrated": {"type": "boolean"},
}, ["mcp", "authorizationServer", "secondOrigin", "pending"], description="Where the authorization parts are served.")
_PENDING = _obj({"id": _str(), "clientId": _str(), "scopes": _SCOPES, "redirectUri": _str(), "state": _str(),
                 "waited": {"type": "number"}, "remaining": {"type": "number"}},
                ["id", "clientId", "scopes", "redirectUri", "waited", "remaining"],
                description="An authorization request parked by decision: wait.")

# operation -> (params, result, what it does); the wire names, in docs/control.md's order
_OPERATIONS: dict[str, tuple[dict[str, Any], dict[str, Any], str]] = {
    "emit": (_obj({"event": {"enum": ["tools/list_changed", "prompts/list_changed", "resources/list_changed",
                                      "resources/updated", "log", "tasks"]},
                   "uri": _str(), "level": _str(), "data": _JSON, "logger": _str(), "taskId": _str()}, ["event"]),
             _obj({"delivered": _int()}, ["delivered"]), "an event now, to every listen stream that asked for it"),
    "add": (_obj({"kind": _KIND, "definition": _OBJ, "notify": {"type": "boolean"}}, ["kind", "definition"]),
            _obj({"kind": _KIND, "key": _str(), "warnings": {"type": "array", "items": _JSON}, "delivered": _int()},
                 ["kind", "key", "delivered"]), "add a tool, prompt, resource or template"),
    "replace": (_obj({"kind": _KIND, "definition": _OBJ, "notify": {"type": "boolean"}}, ["kind", "definition"]),
                _obj({"kind": _KIND, "key": _str(), "warnings": {"type": "array", "items": _JSON}, "delivered": _int()},
                     ["kind", "key", "delivered"]), "replace a definition with the same key"),
    "remove": (_obj({"kind": _KIND, "key": _str(), "notify": {"type": "boolean"}}, ["kind", "key"]),
               _obj({"kind": _KIND, "key": _str(), "delivered": _int()}, ["kind", "key", "delivered"]),
               "remove a definition by its key"),
    "getState": (_EMPTY, _obj({"state": _str(), "auth": _ref("AuthState")}, ["state"]),
                 "the named state (and, with auth over HTTP, where the authorization server is)"),
    "setState": (_obj({"state": _str()}, ["state"]), _obj({"state": _str(), "previous": _str()}, ["state", "previous"]),
                 "set the named state"),
    "counters": (_EMPTY, _obj({"requests": _int(),
                               "rules": {"type": "array", "items": _obj({"rule": _str(), "matched": _int()}, ["rule", "matched"])},
                               "armed": {"type": "array", "items": _ref("Armed")}}, ["requests", "rules", "armed"]),
                 "what matched so far"),
    "arm": (_obj({"when": _ref("When"), "steps": {"type": "array", "items": _OBJ}, "times": _int()}, ["when", "steps"]),
            _ref("Armed"), "a one-shot reply for the next matching requests"),
    "disarm": (_obj({"id": _int()}), _obj({"disarmed": _int()}, ["disarmed"]), "remove one armed reply, or all"),
    "listTasks": (_EMPTY, _obj({"tasks": {"type": "array", "items": _obj(
        {"taskId": _str(), "status": _TASK_STATUS, "tool": {"type": ["string", "null"]}}, ["taskId", "status"])},
        "total": _int()}, ["tasks", "total"]), "the newest tasks"),
    "getTask": (_obj({"taskId": _str()}, ["taskId"]), _obj({"task": _ref("Task")}, ["task"]), "a task as tasks/get shows it"),
    "setTask": (_obj({"taskId": _str(), "status": _TASK_STATUS, "statusMessage": _str(), "result": _OBJ, "error": _OBJ,
                      "inputRequests": _OBJ, "pollIntervalMs": _int(), "notify": {"type": "boolean"},
                      "force": {"type": "boolean"}}, ["taskId", "status"]),
                _obj({"task": _ref("Task"), "previous": _TASK_STATUS, "delivered": _int()}, ["task", "previous", "delivered"]),
                "put a task in a status now"),
    "pause": (_obj({"seconds": {"type": "number"}}), _EMPTY, "stop reading requests, for seconds or until resume"),
    "resume": (_EMPTY, _EMPTY, "read requests again"),
    "journal": (_obj({"since": _int(), "limit": _int()}),
                _obj({"records": {"type": "array", "items": _obj(
                    {"position": _int(), "dir": {"enum": ["in", "out"]}, "message": _JSON, "raw": _str(),
                     "error": _str()}, ["position", "dir"])}, "next": _int(), "dropped": _int()},
                    ["records", "next", "dropped"]), "the traffic since a position"),
    "waitFor": (_obj({"when": _ref("When"), "timeout": {"type": "number"}, "since": _int()}, ["when", "timeout"]),
                _obj({"position": _int(), "message": _JSON}, ["position", "message"]), "wait for a request"),
    "shutdown": (_obj({"mode": {"enum": ["graceful", "crash"]}, "status": _int()}),
                 _obj({"mode": {"enum": ["graceful", "crash"]}, "status": _int()}, ["mode", "status"]), "end the mock"),
    "ping": (_EMPTY, _obj({"position": _int()}, ["position"]), "the channel is up; the next journal position"),
    "expireTokens": (_obj({"clientId": _str(), "scope": _str(), "refresh": {"type": "boolean"}}),
                     _obj({"expired": _int()}, ["expired"]),
                     "expire access tokens now (a client's, a scope's, or all; refresh: refresh tokens too)"),
    "revokeTokens": (_obj({"clientId": _str(), "scope": _str(), "refresh": {"type": "boolean"}}),
                     _obj({"revoked": _int()}, ["revoked"]),
                     "revoke tokens now (a client's, a scope's, or all; refresh tokens too unless refresh: false)"),
    "requireScope": (_obj({"scopes": _SCOPES, "method": _str(), "tool": _str(), "prompt": _str(), "resource": _str()},
                          ["scopes"]),
                     _obj({"requiredScopes": _SCOPES, "scopes": {"type": "array", "items": _obj(
                         {"scopes": _SCOPES, "method": _str(), "tool": _str(), "prompt": _str(), "resource": _str()},
                         ["scopes"])}}, ["requiredScopes", "scopes"]),
                     "require scopes from now on, for a method, tool, prompt, resource or every request"),
    "listAuthorizations": (_EMPTY, _obj({"pending": {"type": "array", "items": _ref("PendingAuthorization")}},
                                        ["pending"]), "the authorization requests waiting for a decision"),
    "approveAuthorization": (_obj({"id": _str(), "scopes": _SCOPES}), _obj({"decided": _STRS}, ["decided"]),
                             "approve a waiting authorization request (or all), perhaps with fewer scopes"),
    "denyAuthorization": (_obj({"id": _str(), "description": _str()}), _obj({"decided": _STRS}, ["decided"]),
                          "deny a waiting authorization request (or all)"),
    "setAuthMetadata": (_obj({"resource": _OBJ, "server": _OBJ}),
                        _obj({"resource": _OBJ, "server": _OBJ}, ["resource", "server"]),
                        "override metadata fields from now on (null removes one)"),
    "migrate": (_EMPTY, _obj({"authorizationServer": {"type": ["string", "null"]}}, ["authorizationServer"]),
                "move the resource to the second authorization server now"),
}


def control_schema() -> dict[str, Any]:
    """Every control operation's params and result (``<Op>Params``, ``<Op>Result``), and the error."""
    defs: dict[str, Any] = {
        "When": _WHEN, "Armed": _ARMED, "AuthState": _AUTH_STATE, "PendingAuthorization": _PENDING,
        "Task": {**_obj({"taskId": _str(), "status": _TASK_STATUS}, ["taskId", "status"], more=True),
                 "description": "a task as tasks/get shows it (the Tasks extension's DetailedTask)"},
        "ErrorObject": _obj({"code": _int(), "message": _str(), "data": _JSON}, ["code", "message"],
                             description="An error answer: -32602 invalid params (data.problems), -32004 not found, "
                                         "-32008 waitFor timed out (data.nearMiss)"),
    }
    ops = {}
    for op, (params, result, doc) in _OPERATIONS.items():
        name = op[0].upper() + op[1:]
        defs[f"{name}Params"] = {**params, "description": f"{op}: {doc}"}
        defs[f"{name}Result"] = result
        ops[op] = _obj({"params": _ref(f"{name}Params"), "result": _ref(f"{name}Result")}, ["params", "result"])
    root = _obj(ops, list(ops), description="The control channel's operations (docs/control.md): "
                "each one's params and result, by its wire name.")
    return _schema("control", "mockmcp control operations", root, defs)


SCHEMAS = {"report": report_schema, "journal": journal_schema, "control": control_schema}

__all__ = ["SCHEMAS", "control_schema", "journal_schema", "report_schema"]
