"""What a recorded value becomes in a scenario: the shapes the format's steps take, and the rewrites.

The model's keys (anything else a server lists is dropped: the loader is
strict), the checks of what a ``result``, ``inputRequired`` or ``request`` step
takes (a recorded value outside them is written as the ``raw`` message it was),
and the rewrites a recorded value goes through: ``{{`` as a literal template,
a redacted value matched by its presence.
"""

from __future__ import annotations

from typing import Any

from mockmcp.scenario.matching import is_matcher
from mockmcp.scenario.resultshapes import result_problems
from mockmcp.wire import protocol as p

# The keys each model class accepts (anything else a server lists is dropped: the loader is strict).
TOOL_KEYS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations", "icons", "_meta")
PROMPT_KEYS = ("name", "title", "description", "arguments", "icons", "_meta")
_ARGUMENT_KEYS = ("name", "title", "description", "required")
RESOURCE_KEYS = ("uri", "name", "title", "description", "mimeType", "size", "annotations", "icons", "_meta")
TEMPLATE_KEYS = ("uriTemplate", "name", "title", "description", "mimeType", "annotations", "icons", "_meta")
_ICON_KEYS = ("src", "mimeType", "sizes", "theme")
SERVER_KEYS = ("name", "title", "version", "description", "websiteUrl", "icons")
MODERN_RESULT_KEYS = ("resultType", "ttlMs", "cacheScope")


def json_view(value: Any) -> Any:
    """``value`` as JSON sees it: a float with an integral value is that integer (most clients
    send ``1.0`` and ``1`` alike, and the matcher takes them as equal), so two calls that differ
    only there are one call to the builder and to ``request_key``; booleans stay booleans."""
    t = type(value)
    if t is float:
        return int(value) if value.is_integer() else value
    if t is dict:
        return {k: json_view(v) for k, v in value.items()}
    if t is list:
        return [json_view(v) for v in value]
    return value


def pick(item: Any, keys: tuple[str, ...]) -> dict[str, Any] | None:
    if type(item) is not dict:
        return None
    out = {k: item[k] for k in keys if k in item and item[k] is not None}
    if type(out.get("icons")) is list:
        out["icons"] = [{k: i[k] for k in _ICON_KEYS if k in i} for i in out["icons"] if type(i) is dict and "src" in i]
    if type(out.get("arguments")) is list:
        out["arguments"] = [{k: a[k] for k in _ARGUMENT_KEYS if k in a} for a in out["arguments"]
                            if type(a) is dict and type(a.get("name")) is str]
    return out


def without_meta(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k not in ("_meta", "requestState")}


def clean_result(result: Any, drop_cache: bool) -> Any:
    """A recorded result as a ``result`` step holds it: the envelope's own fields left to the mock."""
    if type(result) is not dict:
        return result
    drop = MODERN_RESULT_KEYS if drop_cache else ("resultType",)
    out = {k: v for k, v in result.items() if k not in drop}
    meta = out.get("_meta")
    if type(meta) is dict:
        meta = {k: v for k, v in meta.items() if k != p.META_SERVER_INFO}
        if meta:
            out["_meta"] = meta
        else:
            del out["_meta"]
    return out


# What a `result`, `inputRequired` or `request` step takes (check.py refuses the rest, so a recorded
# value outside these shapes is written as the `raw` message it was): a result by the very rules
# check.py uses (``resultshapes``); input requests by the same rules as check.py's, which
# tests/record/test_record_edges.py holds them to.
_INPUT_PARAMS_REQUIRED = {p.ELICIT: ("message",), p.SAMPLE: ("messages", "maxTokens"), p.LIST_ROOTS: ()}


def result_ok(method: str, result: dict[str, Any]) -> bool:
    """Would a `result` step of ``method`` take ``result`` (resultType and cache hints already dropped)?"""
    return not result_problems(method, result)


def input_request_ok(req: Any) -> bool:
    """Would an `inputRequired` (or `request`) step take this request to the client?"""
    if type(req) is not dict or type(req.get("method")) is not str or req["method"] not in _INPUT_PARAMS_REQUIRED:
        return False
    params = req.get("params", {})
    if type(params) is not dict or not all(k in params for k in _INPUT_PARAMS_REQUIRED[req["method"]]):
        return False
    if req["method"] == p.ELICIT:
        mode = params.get("mode", "form")
        if mode == "url":
            return "url" in params
        if mode == "form":
            return type(params.get("requestedSchema")) is dict
    return True


_LITERAL_BRACES = "{{ '{{' }}"  # a template whose value is the text "{{"


def literal(value: Any) -> Any:
    """Recorded values as steps must hold them: steps render ``{{ }}`` templates, so every "{{"
    the server sent is written as a template of the literal (a replay sends the text back)."""
    t = type(value)
    if t is str:
        return value.replace("{{", _LITERAL_BRACES) if "{{" in value else value
    if t is dict:
        return {literal(k): literal(v) for k, v in value.items()}
    if t is list:
        return [literal(v) for v in value]
    return value


def duration(seconds: float) -> str:
    return f"{max(0, round(seconds * 1000))}ms"


def when_value(original: Any, redacted: Any) -> Any:
    """What a rule matches: the redacted value, except where redaction changed it (then: present),
    with every mapping a client sent whose keys all start with ``$`` written as a ``$literal`` (a
    rule would read ``{"$regex": "^a"}`` as a matcher, not as the value it was)."""
    if original == redacted:
        return _escaped(redacted)
    if is_matcher(original):
        return {"$type": "object"}  # (a secret inside it: matched by its shape, as a redacted value is)
    if type(original) is dict and type(redacted) is dict and original.keys() == redacted.keys():
        return {k: when_value(original[k], redacted[k]) for k in original}
    if type(original) is list and type(redacted) is list and len(original) == len(redacted):
        return [when_value(a, b) for a, b in zip(original, redacted)]
    if type(original) is str:
        return {"$type": "string"}
    return {"$present": True}


def _escaped(value: Any) -> Any:
    if is_matcher(value):
        return {"$literal": value}
    t = type(value)
    if t is dict:
        return {k: _escaped(v) for k, v in value.items()}
    if t is list:
        return [_escaped(v) for v in value]
    return value


__all__ = ["MODERN_RESULT_KEYS", "PROMPT_KEYS", "RESOURCE_KEYS", "SERVER_KEYS", "TEMPLATE_KEYS", "TOOL_KEYS", "clean_result", "duration", "input_request_ok", "literal", "pick", "result_ok", "when_value", "without_meta"]
