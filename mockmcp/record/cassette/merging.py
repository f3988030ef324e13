"""New episodes: a new recording added to an existing cassette, and which requests a cassette answers.

``merge`` adds what a new recording has that the cassette had not (primitives
not listed before, rules for requests not recorded before) without changing
anything already there (``record --mode new_episodes``). ``recorded_keys`` says
which requests a cassette answers, by ``request_key``, so those are replayed and
the rest go to the real server.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

from mockmcp.record.cassette.shapes import json_view
from mockmcp.scenario.model import base as model
from mockmcp.wire import protocol as p


def _canonical(value: Any) -> str:
    return json.dumps(json_view(value), sort_keys=True, separators=(",", ":"))


def _rule_keys(rules: Any) -> set[str]:
    return {_canonical(r.get("when", {})) for r in rules if type(r) is dict} if type(rules) is list else set()


def merge(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``old`` with what ``new`` adds: primitives not listed before, rules for requests not recorded before.

    Nothing already in ``old`` changes (its identity, definitions and rules are kept as written)."""
    out = dict(old)
    for section, ident in (("tools", "name"), ("prompts", "name"), ("resources", "uri"), ("resourceTemplates", "uriTemplate")):
        items = [dict(i) if type(i) is dict else i for i in out.get(section) or []]
        index = {i.get(ident): i for i in items if type(i) is dict}
        for item in new.get(section) or []:
            have = index.get(item.get(ident))
            if have is None:
                items.append(item)
                index[item.get(ident)] = item
                continue
            known = _rule_keys(have.get("replies"))
            added = [r for r in item.get("replies") or [] if _canonical(r.get("when", {})) not in known]
            if added:
                have["replies"] = list(have.get("replies") or []) + added
        if items:
            out[section] = items
    overrides = [dict(m) if type(m) is dict else m for m in out.get("methods") or []]
    by_method = {m.get("method"): m for m in overrides if type(m) is dict}
    for m in new.get("methods") or []:
        have = by_method.get(m["method"])
        if have is None:
            overrides.append(m)
            by_method[m["method"]] = m
            continue
        known = _rule_keys(have.get("replies"))
        added = [r for r in m.get("replies") or [] if _canonical(r.get("when", {})) not in known]
        if added:
            have["replies"] = list(have.get("replies") or []) + added
    if overrides:
        out["methods"] = overrides
    return out


def _written(value: Any) -> Any:
    """A rule's value as the request had it: a ``$literal`` (a client's mapping of ``$`` keys,
    escaped by the recording) is that mapping."""
    t = type(value)
    if t is dict:
        if len(value) == 1 and "$literal" in value:
            return value["$literal"]
        return {k: _written(v) for k, v in value.items()}
    if t is list:
        return [_written(v) for v in value]
    return value


def request_key(method: str, params: dict[str, Any]) -> str:
    """What identifies a request when deciding whether a cassette has it (its first round)."""
    if method in (p.TOOLS_CALL, p.PROMPTS_GET):
        args = params.get("arguments")
        core: Any = {"name": params.get("name"), "arguments": args if type(args) is dict else {}}
    elif method == p.RESOURCES_READ:
        core = {"uri": params.get("uri")}
    else:
        core = {k: v for k, v in params.items() if k not in ("_meta", "requestState", "inputResponses")}
    return _canonical([method, core])


def recorded_keys(scenario: model.Scenario) -> set[str]:
    """The ``request_key`` of every request a cassette answers (rules on exact values only)."""
    keys: set[str] = set()

    def first_rounds(rules: list[model.Rule]) -> Iterator[model.Match]:
        for rule in rules:
            if rule.when.round in (None, 1) and rule.when.inputResponses is None:
                yield rule.when

    for tool in scenario.tools:
        for when in first_rounds(tool.replies):
            if when.arguments is not None and when.exactArguments:
                keys.add(request_key(p.TOOLS_CALL, {"name": tool.name, "arguments": _written(when.arguments)}))
    for prompt in scenario.prompts:
        for when in first_rounds(prompt.replies):
            if when.arguments is not None and when.exactArguments:
                keys.add(request_key(p.PROMPTS_GET, {"name": prompt.name, "arguments": _written(when.arguments)}))
    for reads in (*(r.replies for r in scenario.resources), *(t.replies for t in scenario.resourceTemplates)):
        for when in first_rounds(reads):
            if when.params is not None and type(when.params.get("uri")) is str:
                keys.add(request_key(p.RESOURCES_READ, {"uri": when.params["uri"]}))
    for override in scenario.methods:
        for when in first_rounds(override.replies):
            keys.add(request_key(override.method, _written(when.params or {})))
    return keys


__all__ = ["merge", "recorded_keys", "request_key"]
