"""Limits met at the connection and in check: a notification past the limits goes unanswered,
and expectation matchers get the same operand checks as ``when``."""

from __future__ import annotations

import json

import pytest
from support.engines import engine_for
from hypothesis import given, settings
from hypothesis import strategies as st

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.core.actions import Plan
from mockmcp.core.connection import Connection

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
    from mockmcp.scenario.loader import load_text
    from mockmcp.scenario.problems import LoadError

    for bad in ("{$regex: '['}", "{$anyOf: 5}", "{$regex: '^(a+)+$'}"):
        yaml = f"mockmcp: 1\ntools: [{{name: t}}]\nexpectations:\n  - method: tools/call\n    arguments: {{x: {bad}}}\n"
        try:
            load_text(yaml, "<test>")
        except LoadError as exc:
            assert "expectations[0].arguments.x" in str(exc), str(exc)
        else:
            raise AssertionError(f"check accepted {bad}")


JSON_TEXT = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=12,
).map(json.dumps)
SPACE = st.text(alphabet=" \t\r\n\x0c\xa0", max_size=3)


def _not_json(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


@settings(max_examples=300, deadline=None)
@given(before=SPACE, body=JSON_TEXT | st.text(max_size=12) | st.sampled_from(["NaN", "Infinity", "-Infinity", "[NaN]"]), after=SPACE | st.sampled_from(["x", "}", "1", " {}"]))
def test_parse_agrees_with_json_loads(before: str, body: str, after: str) -> None:
    """jsonrpc.parse reads JSON exactly as json.loads does (within the input limits), except
    that NaN and Infinity, which json.loads accepts and JSON does not have, are parse errors."""
    text = before + body + after
    try:
        expected = json.loads(text, parse_constant=_not_json)
    except ValueError as exc:
        with pytest.raises(errors.ParseError) as caught:
            jsonrpc.parse(text.encode("utf-8", "surrogatepass"))
        if isinstance(exc, json.JSONDecodeError):
            assert str(exc) in caught.value.message
        return
    if _has_infinity(expected):  # a number past a double: beyond the input limits, refused on purpose
        with pytest.raises(errors.ClientError):
            jsonrpc.parse(text.encode("utf-8", "surrogatepass"))
        return
    assert jsonrpc.parse(text.encode("utf-8", "surrogatepass")) == expected


def _has_infinity(value: object) -> bool:
    if type(value) is float:
        return value in (float("inf"), float("-inf"))
    if type(value) is list:
        return any(_has_infinity(v) for v in value)
    if type(value) is dict:
        return any(_has_infinity(v) for v in value.values())
    return False


_ENCODABLE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),  # (text: lone surrogates too)
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@given(value=_ENCODABLE)
def test_encode_writes_what_the_plain_encoder_writes(value: object) -> None:
    """jsonrpc.encode calls json's C encoder built once; the bytes are those of the plain
    ``json.dumps`` with the same settings (NaN and infinities refused the same way; a lone
    surrogate, not UTF-8, escaped)."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        with pytest.raises(ValueError):
            jsonrpc.encode(value)
        return
    try:
        expected = (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        expected = (json.dumps(value, separators=(",", ":"), allow_nan=False) + "\n").encode("ascii")
    assert jsonrpc.encode(value) == expected
    assert jsonrpc.encode_text(value) == text
