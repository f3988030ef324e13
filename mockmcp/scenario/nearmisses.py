"""Warnings of ``mockmcp check`` for names one typo away from a name the protocol defines.

A server capability ``tols``, a result's ``isErorr``, an ``inputSchema`` keyword ``propertes`` or
``minLenght``, a ``methods:`` rule for ``tools/lst``: each is legal (capabilities, results and
schemas may carry extra members; a scenario may answer a custom method), so the scenario loads
and runs, and silently does something else: the capability is never offered, the result is not
an error, the schema checks nothing, the rule never answers. So a name is flagged only when it
is not defined and is close to one that is (``did_you_mean``): a member far from every defined
name is taken as meant.

Names are the revision's (and the legacy era's: a ``tasks`` capability); results are checked
where a ``result`` step gives one literally, for the methods whose results the scenario writes.
Sans-I/O, run by ``checkwarn.warnings`` only.
"""

from __future__ import annotations

from typing import Any, Iterator

from mockmcp.scenario.check import Found, iter_step_lists
from mockmcp.scenario.jsonschema.vocabulary import SCHEMA_KEYS, SCHEMA_LISTS, SCHEMA_MAPS
from mockmcp.scenario.model import base as model
from mockmcp.scenario.problems import did_you_mean
from mockmcp.scenario.resultshapes import CONTENT_MEMBERS, RESULT_MEMBERS
from mockmcp.wire import protocol as p

Path_ = tuple[Any, ...]

CAPABILITIES = frozenset({"completions", "experimental", "extensions", "logging", "prompts", "resources", "tools", "tasks"})

# Every keyword of JSON Schema 2020-12 and draft-07 (core, applicators, validation, annotations).
KEYWORDS = frozenset({
    *SCHEMA_KEYS, *SCHEMA_MAPS, *SCHEMA_LISTS,
    "$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor",
    "$vocabulary", "$comment", "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
    "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains",
    "minContains", "maxProperties", "minProperties", "required", "dependentRequired", "dependencies", "title",
    "description", "default", "deprecated", "readOnly", "writeOnly", "examples", "format", "contentEncoding",
    "contentMediaType", "contentSchema",
})

# Every method a client sends in either era: a ``methods:`` rule or an expectation names one of these.
METHODS = frozenset({
    p.DISCOVER, p.TOOLS_LIST, p.TOOLS_CALL, p.PROMPTS_LIST, p.PROMPTS_GET, p.RESOURCES_LIST, p.RESOURCES_READ,
    p.RESOURCE_TEMPLATES_LIST, p.COMPLETE, p.SUBSCRIPTIONS_LISTEN, p.TASKS_GET, p.TASKS_UPDATE, p.TASKS_CANCEL,
    p.LEGACY_SET_LEVEL, p.LEGACY_SUBSCRIBE, p.LEGACY_UNSUBSCRIBE, "initialize", "ping", "tasks/list", "tasks/result",
    p.CANCELLED, p.PROGRESS, "notifications/initialized", "notifications/roots/list_changed",
})

MAX_SCHEMA_NODES = 10_000  # a schema is walked this far at most (check is bounded like run)


def _near(name: Any, known: frozenset[str], cutoff: float = 0.8) -> str:
    """``"; did you mean 'x'?"`` when ``name`` is not known but close to a known name, else ``""``.

    Closer than ``did_you_mean``'s default: these names are legal, so only a near twin is a typo
    (a method's long shared prefix needs closer still: ``notifications/poke`` is a custom one)."""
    if type(name) is not str or name in known:
        return ""
    return did_you_mean(name, known, cutoff)


def capabilities(s: model.Scenario) -> Iterator[Found]:
    for key in s.capabilities or {}:
        if hint := _near(key, CAPABILITIES):
            yield Found(("capabilities", key), f"unknown capability {key!r}{hint} (it is offered as written, "
                        "and clients look for the defined names)", "warning")


def results(s: model.Scenario) -> Iterator[Found]:
    for path, method, steps in iter_step_lists(s):
        members = RESULT_MEMBERS.get(method)
        if members is None:
            continue
        for i, step in enumerate(steps):
            if not isinstance(step, model.ResultStep) or type(step.result) is not dict:
                continue
            result = step.result
            at = path + (i, "result")
            for key in result:
                if hint := _near(key, members):
                    yield Found(at + (key,), f"unknown result member {key!r}{hint} (sent as written; clients ignore it)",
                                "warning")
            content = result.get("content")
            for n, block in enumerate(content if type(content) is list else ()):
                for key in block if type(block) is dict else ():
                    if hint := _near(key, CONTENT_MEMBERS):
                        yield Found(at + ("content", n, key), f"unknown content member {key!r}{hint}", "warning")


def _schema_keywords(schema: Any, path: Path_, budget: list[int]) -> Iterator[Found]:
    """Unknown keywords close to known ones, in ``schema`` and every subschema (at most
    ``MAX_SCHEMA_NODES`` nodes: ``budget`` counts down across the walk)."""
    if type(schema) is not dict or budget[0] <= 0:
        return
    budget[0] -= 1
    for key in schema:
        if hint := _near(key, KEYWORDS):
            yield Found(path + (key,), f"unknown JSON Schema keyword {key!r}{hint} (an unknown keyword checks nothing)",
                        "warning")
    for key in SCHEMA_KEYS:
        sub = schema.get(key)
        if key == "items" and type(sub) is list:
            for n, item in enumerate(sub):
                yield from _schema_keywords(item, path + (key, n), budget)
        else:
            yield from _schema_keywords(sub, path + (key,), budget)
    for key in SCHEMA_MAPS:
        subs = schema.get(key)
        for name, sub in subs.items() if type(subs) is dict else ():
            yield from _schema_keywords(sub, path + (key, name), budget)
    for key in SCHEMA_LISTS:
        subs = schema.get(key)
        for n, sub in enumerate(subs if type(subs) is list else ()):
            yield from _schema_keywords(sub, path + (key, n), budget)


def schema_keywords(s: model.Scenario) -> Iterator[Found]:
    for i, tool in enumerate(s.tools):
        yield from _schema_keywords(tool.inputSchema, ("tools", i, "inputSchema"), [MAX_SCHEMA_NODES])
        yield from _schema_keywords(tool.outputSchema, ("tools", i, "outputSchema"), [MAX_SCHEMA_NODES])


def methods(s: model.Scenario) -> Iterator[Found]:
    for i, override in enumerate(s.methods):
        if hint := _near(override.method, METHODS, 0.9):
            yield Found(("methods", i, "method"), f"{override.method!r} is not a method of the protocol{hint} "
                        "(a custom method is answered as written)", "warning")
    for i, expectation in enumerate(s.expectations):
        if hint := _near(expectation.method, METHODS, 0.9):
            yield Found(("expectations", i, "method"), f"{expectation.method!r} is not a method of the protocol{hint} "
                        "(no request of a client can meet this expectation)", "warning")
