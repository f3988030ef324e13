"""Templated sleeps and the uuid/now/counter/base64 helpers.

The fake link runs the real shell on a mock clock, so a templated sleep's
length is read off the virtual timeline; the helpers are checked through the
engine with a fixed clock and seed, and through the real process once.
"""

from __future__ import annotations

import base64
import json
import re

import pytest
from support.messages import line
from support.process import run_mock
from support.fakelink import FakeLink, close_links  # noqa: F401  (autouse: no link outlives its test)
from support.messages import call
from support.engines import engine_for

from mockmcp.scenario.loader import load_text
from mockmcp.scenario.problems import LoadError

SLEEPY = """
mockmcp: 1
tools:
  - name: work
    inputSchema: {type: object, properties: {ms: {type: integer}, wait: {type: string}}}
    replies:
      - when: {arguments: {wait: {$present: true}}}
        steps: [{sleep: {min: "{{ arguments.wait }}", max: "{{ arguments.wait }}"}}, {text: "waited {{ arguments.wait }}"}]
      - steps: [{sleep: "{{ arguments.ms }}ms"}, {text: "worked {{ arguments.ms }}"}]
"""


def test_a_sleep_lasts_what_the_arguments_say():
    link = FakeLink(engine_for(SLEEPY))
    link.send(call(1, "work", ms=250))
    link.send(call(2, "work", wait="1.5s"))
    (first, second) = link.timeline
    assert first[0] == pytest.approx(0.25) and b"worked 250" in first[1]
    assert second[0] - first[0] == pytest.approx(1.5) and b"waited 1.5s" in second[1]


@pytest.mark.parametrize("ms", [-1, "x", 3_600_001])
def test_a_sleep_that_renders_no_usable_duration_is_invalid_params(ms):
    link = FakeLink(engine_for(SLEEPY.replace("ms: {type: integer}", "ms: {}")))
    (resp,) = link.send(call(1, "work", ms=ms))
    assert resp["error"]["code"] == -32602 and "is not a duration" in resp["error"]["message"]


def test_the_real_process_sleeps_what_the_arguments_say(tmp_path):
    import time

    path = tmp_path / "sleepy.yaml"
    path.write_text(SLEEPY)
    started = time.monotonic()
    proc = run_mock("run", str(path), input=line(call(1, "work", ms=400)))
    (resp,) = map(json.loads, proc.stdout.splitlines())
    assert resp["result"]["content"][0]["text"] == "worked 400"
    assert time.monotonic() - started >= 0.4


def test_check_takes_templated_durations_only_in_sleeps():
    text = """
mockmcp: 1
tools:
  - name: t
    replies:
      - steps: [{dribble: {pause: "{{ arguments.p }}"}}, {text: x}]
  - name: r
    replies:
      - steps: [{request: {method: ping, timeout: "{{ arguments.t }}"}}, {text: x}]
subscriptions:
  timers: [{emit: {event: tools/list_changed}, after: "{{ arguments.a }}"}]
"""
    with pytest.raises(LoadError) as info:
        load_text(text, "t.yaml")
    messages = str(info.value)
    assert messages.count("only a sleep's duration may be a template") == 3
    with pytest.raises(LoadError, match="unknown helper"):
        load_text("mockmcp: 1\ntools: [{name: t, replies: [{steps: [{sleep: '{{ nope() }}ms'}, {text: x}]}]}]\n", "t.yaml")



def test_check_names_a_template_in_a_field_sent_as_written(tmp_path):
    """setState, a task's statusMessage, an HTTP fault's body and headers, a
    huge step's char and a request's name are never rendered: ``mockmcp check`` refuses a
    ``{{ }}`` there, with its place, rather than let the braces reach the client."""
    text = """
mockmcp: 1
tools:
  - name: go
    replies:
      - steps:
          - setState: "{{ arguments.s }}"
          - log: {level: info, logger: "{{ name }}", data: "{{ name }}"}
          - http: {body: "{{ id }}", headers: {x-id: "{{ id }}"}}
          - request: {method: ping, name: "{{ name }}"}
          - huge: {bytes: 3, char: "{{ name }}"}
  - name: job
    replies:
      - steps:
          - task:
              statusMessage: "working on {{ arguments.what }}"
              phases: [{polls: 1, statusMessage: "{{ arguments.what }}"}]
              outcome: [{text: "done with {{ arguments.what }}"}]
"""
    with pytest.raises(LoadError) as info:
        load_text(text, "t.yaml")
    places = [(p.line, p.path) for p in info.value.problems if "is sent as written" in p.message]
    step = ("tools", 0, "replies", 0, "steps")
    task = ("tools", 1, "replies", 0, "steps", 0, "task")
    assert places == [
        (7, (*step, 0, "setState")),
        (9, (*step, 2, "http", "body")),
        (9, (*step, 2, "http", "headers")),
        (10, (*step, 3, "request", "name")),
        (11, (*step, 4, "huge", "char")),
        (16, (*task, "statusMessage")),
        (17, (*task, "phases", 0, "statusMessage")),
    ]
    scenario = tmp_path / "t.yaml"
    scenario.write_text(text)
    proc = run_mock("check", str(scenario))
    assert proc.returncode == 1
    assert b"t.yaml:7:13: setState is sent as written" in proc.stdout + proc.stderr

HELPERS = """
mockmcp: 1
tools:
  - name: mint
    replies:
      - steps:
          - result:
              content: [{type: text, text: "basket-{{ counter('basket') }} other-{{ counter('other') }}"}]
              structuredContent: {id: "{{ uuid() }}", at: "{{ now() }}", ms: "{{ now('ms') }}", b64: "{{ base64(arguments.s) }}"}
"""

UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def test_helpers_read_the_clock_and_generator_handed_in():
    from mockmcp.launch.boot import new_engine

    scenario, _ = load_text(HELPERS, "h.yaml")
    results = []
    for _ in range(2):
        engine = new_engine(scenario, seed=7)
        engine.effects.clock = lambda: 1_796_122_798.5  # what the shell would hand in
        link = FakeLink(engine)
        results.append([link.send(call(i, "mint", s="héllo"))[0]["result"] for i in (1, 2)])
        link.close()
    first, second = results[0]
    assert first["content"][0]["text"] == "basket-1 other-1" and second["content"][0]["text"] == "basket-2 other-2"
    sc = first["structuredContent"]
    assert UUID4.match(sc["id"]) and sc["id"] != second["structuredContent"]["id"]
    assert sc["at"] == "2026-12-01T10:59:58.500Z" and sc["ms"] == 1_796_122_798_500
    assert base64.b64decode(sc["b64"]).decode() == "héllo"
    assert results[0] == results[1]  # the same seed mints the same ids


def test_the_real_process_mints_handles(tmp_path):
    path = tmp_path / "h.yaml"
    path.write_text(HELPERS)
    proc = run_mock("run", str(path), input=line(call(1, "mint", s="a")) + line(call(2, "mint", s="b")))
    out = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [m["result"]["content"][0]["text"] for m in out] == ["basket-1 other-1", "basket-2 other-2"]
    assert all(UUID4.match(m["result"]["structuredContent"]["id"]) for m in out)
    assert out[0]["result"]["structuredContent"]["at"].startswith("20") and out[0]["result"]["structuredContent"]["at"].endswith("Z")


def test_counter_names_are_bounded():
    link = FakeLink(engine_for("mockmcp: 1\ntools: [{name: c, replies: [{steps: [{text: \"{{ counter(arguments.n) }}\"}]}]}]\n"))
    (resp,) = link.send(call(1, "c", n="x" * 300))
    assert resp["error"]["code"] == -32602 and "256" in resp["error"]["message"]
