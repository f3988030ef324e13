"""The proxy's sans-I/O connection: which lines are passed on unchanged and which get a fault plan.

Targeting is the engine's own selector (``nth``, ``every``, ``first``, ``after``,
``probability``, ``when``, sequences), so these tests check the wiring: rules are found
by method and by tool, prompt, resource or template, a request no rule takes is passed
on byte for byte, every notification and client answer is passed on, a cancel also
reaches a running fault plan, and a planning mistake becomes that request's error.
"""

from __future__ import annotations

import json
from typing import Any

from support.messages import line, request
from mockmcp.core.actions import Cancel, Forward, Plan, Send, Sleep, WriteRaw
from mockmcp.scenario.loader import load_text
from mockmcp.record.proxy_connection import ProxyConnection
from mockmcp.launch.boot import new_engine

FAULTS = """\
mockmcp: 1
tools:
  - name: every2
    replies:
      - when: {every: 2}
        steps: [{sleep: 50ms}, {forward: pass}]
  - name: after2
    replies:
      - when: {after: 2}
        steps: [{error: {code: -32000, message: "late {{ arguments.n }}"}}]
  - name: bad_template
    replies:
      - steps: [{rawBytes: "{{ arguments.x }}"}, {forward: drop}]
resourceTemplates:
  - uriTemplate: "db://rows/{row}"
    name: rows
    replies:
      - when: {vars: {row: "13"}}
        steps: [{forward: duplicate}]
methods:
  - method: ping
    replies:
      - when: {first: 1}
        steps: [{forward: wrong-id}]
"""


def conn() -> ProxyConnection:
    scenario, _ = load_text(FAULTS, "faults.yaml")
    return ProxyConnection(new_engine(scenario, seed=1))


def call(rid: int, name: str, **args: Any) -> bytes:
    return line(request(rid, "tools/call", {"name": name, "arguments": args}))


def test_a_request_no_rule_takes_is_passed_on_byte_for_byte() -> None:
    c = conn()
    raw = b'{"jsonrpc":"2.0","id":1,  "method":"tools/list","params":{"_meta":{}}}\n'
    assert c.receive_data(raw + call(2, "other")) == []
    lines, owed, given_up = c.take_forward()
    assert lines == [raw, call(2, "other")] and owed == [1, 2] and given_up == []
    assert c.take_forward() == ([], [], [])


def test_every_and_after_count_per_rule() -> None:
    c = conn()
    kinds = []
    for i in range(1, 6):
        out = c.receive_data(call(i, "every2"))
        kinds.append("plan" if out else "forward")
    assert kinds == ["forward", "plan", "forward", "plan", "forward"]
    (plan,) = conn().receive_data(call(1, "every2")) or [None]  # a fresh connection counts from 1 again
    assert plan is None
    c = conn()
    answers = []
    for i in range(1, 5):
        out = c.receive_data(call(i, "after2", n=i))
        answers.append(out[0].actions[0].message["error"]["message"] if out else None)
    assert answers == [None, None, "late 3", "late 4"]


def test_a_fault_plan_ends_in_forward_and_keeps_the_request_line() -> None:
    c = conn()
    c.receive_data(call(1, "every2"))
    (plan,) = c.receive_data(call(2, "every2"))
    assert isinstance(plan, Plan)
    assert [type(a) for a in plan.actions] == [Sleep, Forward] and plan.actions[1].how == "pass"
    assert c.lines[2] == call(2, "every2")  # what the forward step will pass on
    assert c.take_forward() == ([call(1, "every2")], [1], [])


def test_templates_methods_and_vars_aim_rules() -> None:
    c = conn()
    (plan,) = c.receive_data(line(request(1, "resources/read", {"uri": "db://rows/13"})))
    assert isinstance(plan, Plan) and plan.actions[-1] == Forward("duplicate")
    assert c.receive_data(line(request(2, "resources/read", {"uri": "db://rows/14"}))) == []
    (plan,) = c.receive_data(line(request(3, "ping")))
    assert plan.actions == [Forward("wrong-id")]
    assert c.receive_data(line(request(4, "ping"))) == []  # first: 1


def test_notifications_answers_and_garbage_are_passed_on_and_a_cancel_reaches_the_plan() -> None:
    c = conn()
    c.receive_data(call(1, "every2"))
    c.receive_data(call(2, "every2"))  # a fault plan in flight (it sleeps)
    c.take_forward()
    cancel = line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
    answer = line({"jsonrpc": "2.0", "id": "s1", "result": {}})
    out = c.receive_data(cancel + answer + b"not json at all\n")
    assert out == [Cancel(2)]
    lines, owed, given_up = c.take_forward()
    assert lines == [cancel, answer, b"not json at all\n"] and owed == [] and given_up == [2]


def test_a_planning_mistake_is_that_requests_error() -> None:
    c = conn()
    (plan,) = c.receive_data(call(1, "bad_template", x="\u20ac"))  # rawBytes: one byte per character
    (send,) = plan.actions
    assert isinstance(send, Send) and send.message["error"]["code"] == -32602
    assert not isinstance(plan.actions[0], WriteRaw)
    assert json.loads(send.data)["id"] == 1
