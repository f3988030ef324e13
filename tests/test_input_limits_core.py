"""Limits met at the connection and in check: a notification past the limits goes unanswered,
and expectation matchers get the same operand checks as ``when`` (issue 11, left over from defects 6 and 10)."""

from __future__ import annotations

import json

from helpers import engine_for

from mockmcp.actions import Plan
from mockmcp.connection import Connection

SCENARIO = "mockmcp: 1\ntools: [{name: t}]\n"


def test_a_notification_past_the_limits_is_not_answered() -> None:
    conn = Connection(engine_for(SCENARIO))
    deep = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":' + b"[" * 100 + b"]" * 100 + b"}}\n"
    huge = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1e400}}\n'
    assert conn.receive_data(deep + huge) == []
    # the same past-the-limit values in a request are answered with its id
    (plan,) = conn.receive_data(b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":1e400}}\n')
    assert isinstance(plan, Plan) and json.loads(plan.actions[0].data)["id"] == 5  # type: ignore[union-attr]


def test_check_refuses_expectation_matchers_run_could_not_use() -> None:
    from mockmcp.loader import load_text
    from mockmcp.problems import LoadError

    for bad in ("{$regex: '['}", "{$anyOf: 5}", "{$regex: '^(a+)+$'}"):
        yaml = f"mockmcp: 1\ntools: [{{name: t}}]\nexpectations:\n  - method: tools/call\n    arguments: {{x: {bad}}}\n"
        try:
            load_text(yaml, "<test>")
        except LoadError as exc:
            assert "expectations[0].arguments.x" in str(exc), str(exc)
        else:
            raise AssertionError(f"check accepted {bad}")
