"""A listen stream the server ends itself gets the listen request's completion result.

The specification (changed after the 2026-07-28 release): a server that ends a
``subscriptions/listen`` stream on its own initiative SHOULD answer the listen request
with a complete result whose ``_meta`` carries the subscription id, so the client can
tell a graceful end from a dropped transport. mockmcp does so for a timeline's
``endSubscription`` step and for a graceful shutdown the server chooses (the control
channel's ``shutdown``; over HTTP also stdin's EOF, which stops the server while its HTTP
clients are still connected), each through the real process, over stdio and HTTP, every
end validated against the schema's ``SubscriptionsListenResultResponse``. At stdin's EOF
over stdio the client itself closed the transport: no response is owed, none is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from support.controlprocess import Mock
from support.httpmock import HttpMock, read_events, sse_data
from support.messages import line, listen
from support.process import run_mock
from support.schema import SchemaChecker

from mockmcp.controlclient import SyncControl

SUB = "io.modelcontextprotocol/subscriptionId"

OPEN = """\
mockmcp: 1
tools: [{name: t}]
capabilities: {tools: {listChanged: true}}
"""

ENDS = OPEN + """\
subscriptions:
  timeline:
    - sleep: 50ms
    - emit: {event: tools/list_changed}
    - endSubscription: {how: result}
"""


def _check_end(schema: SchemaChecker, msg: dict[str, Any] | None, sid: Any) -> None:
    """``msg`` is the completion result that ends subscription ``sid``, valid for the schema."""
    assert msg is not None and "method" not in msg, msg
    schema.check(msg, "subscriptions/listen")
    schema.validator("SubscriptionsListenResultResponse").validate(msg)
    assert msg["id"] == sid and msg["result"]["resultType"] == "complete", msg
    assert msg["result"]["_meta"][SUB] == sid, msg


def _events(resp: Any) -> Iterator[dict[str, Any]]:
    for block in read_events(resp, 1000, timeout=10):
        for data in sse_data(block + b"\n\n"):
            yield json.loads(data)


def test_an_end_subscription_step_answers_the_listen_request_over_stdio(tmp_path: Path, schema: SchemaChecker) -> None:
    mock = Mock(tmp_path, scenario=ENDS)  # (stdin stays open: at its EOF the stream would be dropped)
    try:
        mock.send(listen("s-1", toolsListChanged=True))
        msgs = [mock.read() for _ in range(3)]
        assert [m and m.get("method") for m in msgs] == ["notifications/subscriptions/acknowledged", "notifications/tools/list_changed", None]
        _check_end(schema, msgs[-1], "s-1")
    finally:
        assert mock.close() == 0


def test_an_end_subscription_step_answers_the_listen_request_over_http(tmp_path: Path, schema: SchemaChecker) -> None:
    file = tmp_path / "s.yaml"
    file.write_text(ENDS)
    with HttpMock(file) as mock:
        r = mock.post(listen(7, toolsListChanged=True))
        msgs = r.events()
        assert [m.get("method") for m in msgs] == ["notifications/subscriptions/acknowledged", "notifications/tools/list_changed", None]
        _check_end(schema, msgs[-1], 7)
        assert mock.stop() == 0


def test_a_control_shutdown_ends_every_open_stream_with_its_result_over_stdio(tmp_path: Path, schema: SchemaChecker) -> None:
    mock = Mock(tmp_path, scenario=OPEN)
    try:
        for sid in ("a", 2):
            mock.send(listen(sid, toolsListChanged=True))
            ack = mock.read()
            assert ack is not None and ack["method"] == "notifications/subscriptions/acknowledged"
        mock.ctl.shutdown()
        # both streams end, in the order they opened, and nothing follows
        _check_end(schema, mock.read(), "a")
        _check_end(schema, mock.read(), 2)
        assert mock.read(timeout=2) is None
        assert mock.proc.wait(10) == 0
    finally:
        if mock.proc.poll() is None:
            mock.proc.kill()
        mock.close()


def test_stdin_eof_over_stdio_owes_no_end(tmp_path: Path) -> None:
    """The client closed the transport: the stream is dropped, as the specification's abrupt end."""
    file = tmp_path / "s.yaml"
    file.write_text(OPEN)
    out = run_mock("run", str(file), input=line(listen("s-1", toolsListChanged=True)))
    assert out.returncode == 0, out.stderr
    assert [json.loads(x).get("method") for x in out.stdout.splitlines()] == ["notifications/subscriptions/acknowledged"]


def _open_stream(mock: HttpMock, sid: Any) -> Iterator[dict[str, Any]]:
    _conn, resp = mock.stream(listen(sid, toolsListChanged=True))
    events = _events(resp)
    assert next(events)["method"] == "notifications/subscriptions/acknowledged"
    return events


def test_a_control_shutdown_ends_every_open_stream_with_its_result_over_http(tmp_path: Path, schema: SchemaChecker) -> None:
    file = tmp_path / "s.yaml"
    file.write_text(OPEN)
    with HttpMock(file, "--control", str(tmp_path / "c.sock"), "--sse-keepalive", "0") as mock:
        first, second = _open_stream(mock, "a"), _open_stream(mock, 2)
        SyncControl(str(tmp_path / "c.sock")).shutdown()
        _check_end(schema, next(first), "a")
        _check_end(schema, next(second), 2)
        assert list(first) == [] and list(second) == []  # each response ended after its result
        assert mock.proc.wait(10) == 0


def test_stdin_eof_over_http_ends_every_open_stream_with_its_result(tmp_path: Path, schema: SchemaChecker) -> None:
    """Over HTTP stdin's EOF stops the server, whose clients are still connected: it ends their streams."""
    file = tmp_path / "s.yaml"
    file.write_text(OPEN)
    with HttpMock(file, "--sse-keepalive", "0") as mock:
        events = _open_stream(mock, "s-1")
        assert mock.stop() == 0
        _check_end(schema, next(events), "s-1")
        assert list(events) == []
