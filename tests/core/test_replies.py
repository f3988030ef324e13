"""Compiled replies write exactly the bytes the general path writes.

``mockmcp/replies.py`` pre-encodes one-step answers with holes for the request
id and template values. These tests run the same requests through two engines,
one with compiling turned off (``compile_replies=False``), and compare every
byte written: over synthetic rules with every kind of hole, over arbitrary
request values (hypothesis), and over every bundled scenario.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from support.paths import SCENARIOS
from support.fakelink import FakeLink, close_links  # noqa: F401  (autouse: no link outlives its test)
from support.messages import call_line, line, request
from support.engines import engine_for
from mockmcp.launch.boot import new_engine
from mockmcp.scenario.loader import load

SCENARIO = """
mockmcp: 1
server: {name: compiled, version: "1.0"}
tools:
  - name: echo
    replies:
      - steps: [{text: "{{ arguments.v }}"}]
  - name: inline
    replies:
      - steps: [{text: "got {{ arguments.v }} for {{ name }} #{{ id }}"}]
  - name: static
    replies:
      - steps: [{text: "always the same"}]
  - name: structured
    replies:
      - when: {arguments: {mode: meta}}
        steps: [{result: {content: [], _meta: {mine: 1}, structuredContent: {v: "{{ arguments.v }}"}}}]
      - when: {arguments: {mode: typed}}
        steps: [{result: {resultType: complete, content: [{type: text, text: "{{ json(arguments.v) }}"}], structuredContent: {v: "{{ arguments.v }}", n: "{{ add(1, 2) }}", l: ["{{ arguments.v }}", "x {{ arguments.v }}"]}}}]
      - steps: [{result: {content: [{type: text, text: "{{ arguments.v }} and {{ arguments.v }}"}]}}]
  - name: keyed
    replies:
      - steps: [{result: {content: [], structuredContent: {"{{ arguments.k }}": 1}}}]
  - name: two
    replies:
      - steps: [{log: {level: info, data: x}}, {text: "{{ arguments.v }}"}]
prompts:
  - name: greet
    replies:
      - steps: [{text: "hello {{ arguments.who }}"}]
resources:
  - uri: file:///a.txt
    name: a
    replies:
      - steps: [{text: "A is {{ uri }}"}]
resourceTemplates:
  - uriTemplate: "file:///t/{name}"
    name: t
    replies:
      - steps: [{text: "{{ vars.name }}"}]
methods:
  - method: tools/list
    replies:
      - when: {params: {cursor: special}}
        steps: [{result: {tools: []}}]
"""


def pair(text: str = SCENARIO, **kw: Any) -> tuple[FakeLink, FakeLink]:
    compiled = engine_for(text, seed=1, state_key=b"k", **kw)
    general = engine_for(text, seed=1, state_key=b"k", compile_replies=False, **kw)
    return FakeLink(compiled), FakeLink(general)


def line_of(rid: Any, method: str, params: dict[str, Any]) -> bytes:
    """A request line of any method (what both links are fed)."""
    return line(request(rid, method, params))


def same(links: tuple[FakeLink, FakeLink], *lines: bytes) -> list[bytes]:
    """Feed both links the same lines (without parsing: faults write non-JSON); the same lines come out."""
    a, b = links
    for data in lines:
        a.feed(data)
        b.feed(data)
    assert a.written == b.written
    return a.written


def compiled_count(link: FakeLink) -> int:
    replies = link.engine.services.steps.replies
    return 0 if replies is None else replies.compiled()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
IDS = st.integers(-(2**63), 2**63) | st.text(max_size=8)


@settings(max_examples=80, deadline=None)
@given(rid=IDS, v=JSON)
def test_arbitrary_values_give_the_same_bytes(rid: Any, v: Any) -> None:
    """80 random (id, value) pairs a run, each through 15 calls of both engines (not derandomized:
    each run tries new ones)."""
    lines = [
        line_of(rid, "tools/call", {"name": tool, "arguments": {"v": v, "mode": mode}})
        for tool in ("echo", "inline", "static", "structured", "two")
        for mode in ("meta", "typed", "plain")
    ]
    a, b = links = pair()
    with a, b:
        same(links, *lines)
    # echo, inline, static, three structured rules, and the final step of "two": every final
    # text/result step compiles, wherever it stands in its rule
    assert compiled_count(a) == 7


def test_every_kind_of_hole_is_compiled_and_matches() -> None:
    links = pair()
    out = same(
        links,
        line_of(1, "tools/call", {"name": "echo", "arguments": {"v": "héllo \"quoted\" \n\u2028 \U0001f600"}}),
        line_of("s\"1", "tools/call", {"name": "inline", "arguments": {"v": [1, {"a": None}]}}),
        line_of(3, "tools/call", {"name": "static"}),
        line_of(4, "tools/call", {"name": "structured", "arguments": {"v": 2.5, "mode": "meta"}}),
        line_of(5, "tools/call", {"name": "structured", "arguments": {"v": True, "mode": "typed"}}),
        line_of(6, "tools/call", {"name": "structured", "arguments": {"v": "x"}}),
        line_of(7, "prompts/get", {"name": "greet", "arguments": {"who": "you"}}),
        line_of(8, "resources/read", {"uri": "file:///a.txt"}),
        line_of(9, "resources/read", {"uri": "file:///t/n%C3%A4me"}),
        line_of(10, "tools/list", {"cursor": "special"}),
    )
    assert len(out) == 10
    first = json.loads(out[0])
    assert first["result"]["content"][0]["text"] == "héllo \"quoted\" \n\u2028 \U0001f600"
    assert first["result"]["resultType"] == "complete"
    assert json.loads(out[9])["result"]["ttlMs"] is not None  # cacheable: hints filled in as ever
    # echo, inline, static, three structured rules, greet, a.txt, the template, the override
    assert compiled_count(links[0]) == 10


def test_what_is_not_compiled_takes_the_general_path() -> None:
    links = pair()
    same(
        links,
        line_of(1, "tools/call", {"name": "keyed", "arguments": {"k": "dyn"}}),  # a templated key
    )
    assert compiled_count(links[0]) == 0
    assert json.loads(links[0].written[0])["result"]["structuredContent"] == {"dyn": 1}


def test_lone_surrogate_falls_back_to_the_escaping_general_path() -> None:
    links = pair()
    out = same(links, call_line(1, "echo", '{"v": "\\ud800"}'))
    assert b"\\ud800" in out[0]
    assert compiled_count(links[0]) == 1  # compiled, but this one value needed the general path


def test_a_placeholder_lookalike_in_the_scenario_is_not_compiled() -> None:
    text = SCENARIO.replace('"always the same"', '"\\ue000mockmcp-hole-0\\ue000"')
    links = pair(text)
    out = same(links, line_of(1, "tools/call", {"name": "static"}))
    assert json.loads(out[0])["result"]["content"][0]["text"] == "\ue000mockmcp-hole-0\ue000"
    assert compiled_count(links[0]) == 0


def test_template_errors_are_the_same_error() -> None:
    text = SCENARIO.replace('"{{ arguments.v }}"}]\n  - name: inline', '"{{ add(arguments.v, 1) }}"}]\n  - name: inline')
    links = pair(text)
    out = same(links, line_of(1, "tools/call", {"name": "echo", "arguments": {"v": "not a number"}}))
    assert json.loads(out[0])["error"]["code"] == -32602


def _requests_for(scenario: Any) -> list[bytes]:
    """Requests that reach every tool, prompt, resource and override of a scenario."""
    out: list[bytes] = [line_of("d", "server/discover", {}), line_of("l", "tools/list", {})]
    rid = 0

    def nxt() -> int:
        nonlocal rid
        rid += 1
        return rid

    for tool in scenario.tools:
        props = list(((tool.inputSchema or {}).get("properties") or {}))
        for args in ({}, {k: "a" for k in props}, {k: 2 for k in props}):
            out.append(line_of(nxt(), "tools/call", {"name": tool.name, "arguments": args}))
    for prompt in scenario.prompts:
        out.append(line_of(nxt(), "prompts/get", {"name": prompt.name, "arguments": {a.name: "x" for a in prompt.arguments or ()}}))
    for res in scenario.resources:
        out.append(line_of(nxt(), "resources/read", {"uri": res.uri}))
    for tmpl in scenario.resourceTemplates:
        out.append(line_of(nxt(), "resources/read", {"uri": re.sub(r"\{[^}]*\}", "x", tmpl.uriTemplate)}))
    for override in scenario.methods:
        out.append(line_of(nxt(), override.method, {}))
    return out


BUNDLED = sorted(p.stem for p in SCENARIOS.glob("*.yaml"))


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_scenarios_write_the_same_bytes(name: str) -> None:
    scenario, _ = load(str(SCENARIOS / f"{name}.yaml"))
    # one fixed task clock for both (task timestamps come from it, not from the reply path)
    engines = (
        new_engine(scenario, seed=7, state_key=b"k", clock=lambda: 0.0),
        new_engine(scenario, seed=7, state_key=b"k", compile_replies=False, clock=lambda: 0.0),
    )
    links: tuple[FakeLink, FakeLink] | None = None
    for data in _requests_for(scenario) * 2:  # twice: counters, sequences and states move on
        links = links or (FakeLink(engines[0]), FakeLink(engines[1]))
        same(links, data)
        a, b = links
        assert a.exits == b.exits
        if a.exits:  # a scripted exit: that shell writes no more, the next line goes to new ones
            a.close(), b.close()
            links = None


def test_the_default_scenario_answers_echo_compiled() -> None:
    scenario, _ = load(str(SCENARIOS / "default.yaml"))
    link = FakeLink(new_engine(scenario))
    link.feed(line_of(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}))
    assert compiled_count(link) == 1
