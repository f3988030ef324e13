"""Property: a literal ``result`` that ``mockmcp check`` accepts is a valid result by the official schema.

A ``result`` step is how a scenario says "a valid answer" (a wrong one is a ``raw`` step), so
check must refuse every literal result the revision's schema would: it took an image whose
``data`` was a number, annotations for a ``robot`` audience, an embedded resource with neither
``text`` nor ``blob``, a prompt's ``description`` that was a number. Hypothesis mutates a valid result of each
method (a member dropped, or given a value of another JSON type), loads it as check does, and
serves each accepted one through the real shell: the answer must pass the official schema.
The recorder decides ``result`` or ``raw`` by the same function (``resultshapes``), so what
it writes as a ``result`` step passes check.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.fakelink import FakeLink, close_links  # noqa: F401  (autouse: no link outlives its test)
from support.messages import request

from mockmcp.launch.boot import new_engine
from mockmcp.record.cassette.shapes import result_ok
from mockmcp.scenario.loader import load_text
from mockmcp.scenario.problems import LoadError
from mockmcp.scenario.resultshapes import result_problems

VALID = {
    "tools/call": {
        "content": [
            {"type": "text", "text": "hi", "annotations": {"audience": ["user"], "priority": 0.5, "lastModified": "2026-01-01T00:00:00Z"}},
            {"type": "image", "data": "aGk=", "mimeType": "image/png", "_meta": {"k": "v"}},
            {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///x", "text": "t", "mimeType": "text/plain"}},
            {"type": "resource_link", "uri": "file:///y", "name": "y", "title": "Y", "description": "d", "size": 3,
             "mimeType": "text/plain", "icons": [{"src": "https://example.com/i.png", "sizes": ["48x48"], "mimeType": "image/png"}]},
        ],
        "structuredContent": {"a": 1},
        "isError": False,
        "_meta": {"k": "v"},
    },
    "prompts/get": {
        "description": "d",
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}},
                     {"role": "assistant", "content": {"type": "resource", "resource": {"uri": "file:///b", "blob": "aGk="}}}],
    },
    "resources/read": {"contents": [{"uri": "file:///r", "text": "t", "mimeType": "text/plain"}, {"uri": "file:///r", "blob": "aGk="}]},
}
OTHER_VALUES = [None, True, 7, 2.5, -1, "s", "robot", [], ["x"], [1], {}, {"a": 1}]
REQUESTS = {
    "tools/call": request(1, "tools/call", {"name": "t", "arguments": {}}),
    "prompts/get": request(1, "prompts/get", {"name": "p"}),
    "resources/read": request(1, "resources/read", {"uri": "file:///r"}),
}


def scenario_for(method: str, result: Any) -> str:
    steps = [{"result": result}]
    doc: dict[str, Any] = {"mockmcp": 1}
    if method == "tools/call":
        doc["tools"] = [{"name": "t", "replies": [{"steps": steps}]}]
    elif method == "prompts/get":
        doc["prompts"] = [{"name": "p", "replies": [{"steps": steps}]}]
    else:
        doc["resources"] = [{"uri": "file:///r", "name": "r", "replies": [{"steps": steps}]}]
    return json.dumps(doc)  # (JSON is YAML)


def paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every member and item of ``value``, by path."""
    out = []
    children = value.items() if type(value) is dict else enumerate(value) if type(value) is list else ()
    for key, child in children:
        out.append(at + (key,))
        out += paths(child, at + (key,))
    return out


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, Any]:
    method = draw(st.sampled_from(sorted(VALID)))
    result = copy.deepcopy(VALID[method])
    for _ in range(draw(st.integers(1, 2))):
        where = draw(st.sampled_from(paths(result)))
        parent = result
        for key in where[:-1]:
            parent = parent[key]
        if type(parent) is dict and draw(st.booleans()):
            del parent[where[-1]]
        else:
            parent[where[-1]] = copy.deepcopy(draw(st.sampled_from(OTHER_VALUES)))  # (a later mutation may edit it)
        if not paths(result):
            break
    return method, result


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=mutated())
def test_a_literal_result_check_accepts_passes_the_official_schema(case: tuple[str, Any], schema: Any) -> None:
    method, result = case
    try:
        scenario, _ = load_text(scenario_for(method, result), "r.yaml")
    except LoadError:
        assert result_problems(method, result), "check refused a result the shape rules take"
        return
    assert not result_problems(method, result)
    (answer,) = FakeLink(new_engine(scenario)).send(REQUESTS[method])
    schema.check(answer, method)


@pytest.mark.parametrize("method", sorted(VALID))
def test_the_valid_results_are_accepted_and_valid(method: str, schema: Any) -> None:
    """The property is not vacuous: each base result loads, and its answer passes the schema."""
    scenario, _ = load_text(scenario_for(method, VALID[method]), "r.yaml")
    (answer,) = FakeLink(new_engine(scenario)).send(REQUESTS[method])
    schema.check(answer, method)
    assert result_ok(method, VALID[method])


@pytest.mark.parametrize(("method", "member", "value", "message"), [
    ("tools/call", ("content", 1, "data"), 5, "data must be a string"),
    ("tools/call", ("content", 0, "annotations", "audience"), ["robot"], "audience must be a list of user and assistant"),
    ("tools/call", ("content", 0, "annotations", "priority"), 7, "priority must be a number from 0 to 1"),
    ("tools/call", ("content", 3, "resource"), {"uri": "file:///x"}, "resource contents need 'text' or 'blob'"),
    ("prompts/get", ("description",), 5, "description must be a string"),
    ("resources/read", ("contents", 0, "uri"), 5, "uri must be a string"),
])
def test_check_names_the_member_and_why(method: str, member: tuple[Any, ...], value: Any, message: str) -> None:
    result = copy.deepcopy(VALID[method])
    parent = result
    for key in member[:-1]:
        parent = parent[key]
    parent[member[-1]] = value
    with pytest.raises(LoadError) as info:
        load_text(scenario_for(method, result), "r.yaml")
    (problem,) = info.value.problems
    assert problem.message == message
    assert problem.path[-len(member):] == member
