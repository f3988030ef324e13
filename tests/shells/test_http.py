"""``mockmcp run SCENARIO --http``: the real process, driven by a raw HTTP client (http.client, sockets).

One process serves most tests (module fixture); what stops or breaks a process
spawns its own. Each test asserts a rule of the Streamable HTTP transport
(docs/specification/2026-07-28/basic/transports/streamable-http.mdx) as seen on the wire.
"""

from __future__ import annotations

import base64
import contextlib
import json
import resource
import signal
import socket
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from support.httpmock import HttpMock, mcp_headers, msg, read_events, sse_data
from mockmcp.cli import main as cli
from mockmcp.verify.journal import read_journal

SCENARIO = """\
mockmcp: 1
description: the HTTP shell's test scenario
server: {name: http-test, version: 1.0.0}
tools:
  - name: echo
    inputSchema: {type: object, properties: {text: {type: string}}}
    replies:
      - steps:
          - text: "{{ arguments.text }}"
  - name: "héllo wörld"
    replies:
      - steps:
          - text: unicode name
  - name: steps
    replies:
      - steps:
          - progress: {progress: 1, total: 2}
          - sleep: 50ms
          - progress: {progress: 2, total: 2}
          - text: done
  - name: slow
    replies:
      - steps:
          - loop:
              times: 100
              steps:
                - sleep: 100ms
                - progress: {progress: "{{ index }}", total: 100}
          - text: finished
  - name: sql
    inputSchema:
      type: object
      properties:
        region: {type: string, x-mcp-header: Region}
        limit: {type: integer, x-mcp-header: Limit}
        query: {type: string}
    replies:
      - steps:
          - text: "{{ arguments.region }}"
  - name: touch
    replies:
      - steps:
          - emit: {event: resources/updated, uri: "file:///notes.txt"}
          - text: touched
  - name: dribbled_stream
    replies:
      - steps:
          - http: {respondAs: sse}
          - dribble: {chunkBytes: 10, pause: 50ms}
          - text: "a message written ten bytes at a time, slower than the keep-alive interval"
resources:
  - {uri: "file:///notes.txt", name: notes, text: some notes}
"""


@pytest.fixture(scope="module")
def mock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpMock]:
    tmp = tmp_path_factory.mktemp("http")
    path = tmp / "http-test.yaml"
    path.write_text(SCENARIO)
    with HttpMock(path, "--journal", str(tmp / "journal.jsonl"), "--sse-keepalive", "0.3") as m:
        m.journal = tmp / "journal.jsonl"  # type: ignore[attr-defined]
        yield m
        assert m.stop() == 0, m.stderr()


def call(rid: Any, name: str, **args: Any) -> dict[str, Any]:
    return msg(rid, "tools/call", {"name": name, "arguments": args})


def test_first_line_is_the_url(mock: HttpMock) -> None:
    assert mock.first_line.endswith("\n")
    assert mock.url.startswith("http://127.0.0.1:") and mock.url.endswith("/mcp")
    assert mock.port > 0  # port 0 picked a free one


def test_json_answer(mock: HttpMock) -> None:
    r = mock.post(msg(1, "server/discover"))
    assert r.status == 200 and r.headers["content-type"] == "application/json"
    assert r.json()["id"] == 1 and r.json()["result"]["supportedVersions"] == ["2026-07-28"]
    r = mock.post(call(2, "echo", text="hi"))
    assert r.status == 200 and r.json()["result"]["content"] == [{"type": "text", "text": "hi"}]


def test_a_pretty_printed_body_is_one_message(mock: HttpMock) -> None:
    message = call(3, "echo", text="line1\nline2")
    r = mock.post(json.dumps(message, indent=2).encode() + b"\r\n", mcp_headers(message))  # type: ignore[arg-type]
    assert r.status == 200 and r.json()["result"]["content"][0]["text"] == "line1\nline2"


def test_keep_alive_connection_serves_many_requests(mock: HttpMock) -> None:
    conn = mock.connection()
    try:
        for i in range(20):
            r = mock.post(call(100 + i, "echo", text=str(i)), conn=conn)
            assert r.status == 200 and r.json()["result"]["content"][0]["text"] == str(i)
    finally:
        conn.close()


def test_notification_gets_202_without_body(mock: HttpMock) -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}}
    r = mock.post(note)
    assert r.status == 202 and r.body == b""


@pytest.mark.parametrize(("drop", "change", "text"), [
    ("MCP-Protocol-Version", {}, "MCP-Protocol-Version header is missing"),
    ("Mcp-Method", {}, "Mcp-Method header is missing"),
    ("Mcp-Name", {}, "Mcp-Name header is missing"),
    (None, {"MCP-Protocol-Version": "2025-11-25"}, "does not match body value '2026-07-28'"),
    (None, {"Mcp-Method": "tools/list"}, "Mcp-Method header value 'tools/list'"),
    (None, {"Mcp-Name": "other"}, "Mcp-Name header value 'other'"),
    (None, {"Mcp-Name": "=?base64?***?="}, "base64"),
])
def test_header_mismatch_is_400_with_32020(mock: HttpMock, drop: str | None, change: dict[str, str], text: str) -> None:
    headers: dict[str, str | None] = dict(change)
    if drop:
        headers[drop] = None
    r = mock.post(call(7, "echo", text="x"), headers)
    assert r.status == 400, r
    body = r.json()
    assert body["id"] == 7 and body["error"]["code"] == -32020 and text in body["error"]["message"]


def test_base64_sentinel_name(mock: HttpMock) -> None:
    message = call(8, "héllo wörld")
    encoded = "=?base64?" + base64.b64encode("héllo wörld".encode()).decode() + "?="
    r = mock.post(message, {"Mcp-Name": encoded})
    assert r.status == 200 and r.json()["result"]["content"][0]["text"] == "unicode name"
    # header names are case-insensitive
    r = mock.post(message, {"Mcp-Name": None, "mcp-name": encoded, "Mcp-Method": None, "MCP-METHOD": "tools/call"})
    assert r.status == 200, r


def test_x_mcp_header_parameters(mock: HttpMock) -> None:
    message = call(9, "sql", region="us-west1", limit=5, query="SELECT 1")
    r = mock.post(message, {"Mcp-Param-Region": "us-west1", "Mcp-Param-Limit": "5"})
    assert r.status == 200 and r.json()["result"]["content"][0]["text"] == "us-west1"
    r = mock.post(message, {"Mcp-Param-Region": "eu-west1", "Mcp-Param-Limit": "5"})
    assert r.status == 400 and r.json()["error"]["code"] == -32020 and "Mcp-Param-Region" in r.json()["error"]["message"]
    r = mock.post(message, {"Mcp-Param-Limit": "5"})
    assert r.status == 400 and "Mcp-Param-Region header is missing" in r.json()["error"]["message"]
    # the parameter absent from the arguments: no header expected
    r = mock.post(call(10, "sql", query="SELECT 1"))
    assert r.status == 200, r


def test_unknown_method_is_404_with_32601(mock: HttpMock) -> None:
    r = mock.post(msg(11, "no/such"))
    assert r.status == 404 and r.json()["error"]["code"] == -32601 and r.json()["id"] == 11


def test_unsupported_version_is_400_with_32022(mock: HttpMock) -> None:
    r = mock.post(msg(12, "tools/list", meta={"io.modelcontextprotocol/protocolVersion": "2099-01-01"}))
    assert r.status == 400
    assert r.json()["error"]["code"] == -32022 and r.json()["error"]["data"]["supported"] == ["2026-07-28"]


def test_removed_mechanisms_are_ignored(mock: HttpMock) -> None:
    """Mcp-Session-Id and Last-Event-ID of earlier revisions: ignored, no session minted or echoed."""
    r = mock.post(msg(31, "server/discover"), {"Mcp-Session-Id": "abc", "Last-Event-ID": "7"})
    assert r.status == 200 and "mcp-session-id" not in r.headers


def test_origin(mock: HttpMock) -> None:
    r = mock.post(msg(13, "server/discover"), {"Origin": "http://evil.example"})
    assert r.status == 403 and "id" not in r.json()
    r = mock.post(msg(14, "server/discover"), {"Origin": f"http://localhost:{mock.port}"})
    assert r.status == 200


def test_http_level_refusals(mock: HttpMock) -> None:
    r = mock.post(b"", method="GET")
    assert r.status == 405 and r.headers["allow"] == "POST"
    assert mock.post(b"", method="DELETE").status == 405
    r = mock.post(msg(15, "server/discover"), path="/other")
    assert r.status == 404 and r.headers["content-type"] == "text/plain"
    assert mock.post(msg(16, "server/discover"), {"Accept": "application/json"}).status == 406
    assert mock.post(msg(17, "server/discover"), {"Accept": None}).status == 406
    assert mock.post(msg(18, "server/discover"), {"Content-Type": "text/plain"}).status == 415


def test_bodies_that_are_not_one_message(mock: HttpMock) -> None:
    r = mock.post([msg(19, "server/discover")])
    assert r.status == 400 and r.json()["error"]["code"] == -32600  # a batch
    r = mock.post({"jsonrpc": "2.0", "id": 20, "result": {}})
    assert r.status == 400 and r.json()["error"]["code"] == -32600  # a response
    r = mock.post(b'{"jsonrpc": "2.0", "id": 21, "method": ')
    assert r.status == 400 and r.json()["error"]["code"] == -32700
    r = mock.post(b"")
    assert r.status == 400 and r.json()["error"]["code"] == -32700


def test_limits_and_malformed_http(mock: HttpMock) -> None:
    huge = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n"
    assert mock.raw(huge).startswith(b"HTTP/1.1 431 ")
    big_body = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n" \
               b"Content-Type: application/json\r\nContent-Length: 5000000\r\n\r\n{"
    assert mock.raw(big_body).startswith(b"HTTP/1.1 413 ")
    chunked = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n"
               b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"%x\r\n%s\r\n" % (1 << 20, b" " * (1 << 20))
    assert mock.raw(chunked + chunk * 5, timeout=10).startswith(b"HTTP/1.1 413 ")
    assert mock.raw(b"NOT HTTP AT ALL\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    assert mock.raw(b"\x00\xff\xfe garbage\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    # after all that the server still answers
    assert mock.post(msg(22, "server/discover")).status == 200


def test_expect_100_continue(mock: HttpMock) -> None:
    message = msg(30, "server/discover")
    body = json.dumps(message).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in mcp_headers(message).items())
    with socket.create_connection((mock.host, mock.port), timeout=5) as s:
        s.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}Expect: 100-continue\r\n"
                  f"Content-Length: {len(body)}\r\n\r\n".encode())
        assert s.recv(4096).startswith(b"HTTP/1.1 100 ")
        s.sendall(body)
        assert s.recv(65536).startswith(b"HTTP/1.1 200 ")


def test_sse_stream_for_progress(mock: HttpMock) -> None:
    message = msg(23, "tools/call", {"name": "steps", "arguments": {}}, meta={"progressToken": "t"})
    r = mock.post(message)
    assert r.status == 200
    assert r.headers["content-type"] == "text/event-stream" and r.headers["x-accel-buffering"] == "no"
    events = r.events()
    assert [e.get("method") for e in events] == ["notifications/progress", "notifications/progress", None]
    assert events[-1]["id"] == 23 and events[-1]["result"]["content"][0]["text"] == "done"


def test_a_slow_write_is_never_cut_by_the_keepalive(mock: HttpMock) -> None:
    t0 = time.monotonic()
    r = mock.post(call(29, "dribbled_stream"))
    assert time.monotonic() - t0 > 0.6  # longer than two keep-alive intervals (0.3 s)
    (event,) = r.events()
    assert event["result"]["content"][0]["text"].startswith("a message written ten bytes")


def test_closing_the_stream_cancels_the_request(mock: HttpMock) -> None:
    message = msg(24, "tools/call", {"name": "slow", "arguments": {}}, meta={"progressToken": "p"})
    conn, resp = mock.stream(message)
    got = list(read_events(resp, 2))
    assert len(got) == 2 and b"notifications/progress" in got[0]
    conn.sock.shutdown(socket.SHUT_RDWR)  # type: ignore[union-attr]
    conn.close()
    time.sleep(0.6)  # several of its 100 ms steps
    records = read_journal(mock.journal)  # type: ignore[attr-defined]
    cancelled = [r for r in records if r.get("kind") == "cancelled" and r.get("id") == 24]
    assert cancelled, records[-5:]
    at = records.index(cancelled[0])
    later = [r for r in records[at:] if r.get("dir") == "out" and "p" == r.get("message", {}).get("params", {}).get("progressToken")]
    assert later == [], "nothing more is written for a cancelled request"
    # the id is free again, and the server goes on
    assert mock.post(call(24, "echo", text="again")).status == 200


def test_listen_stream_keepalive_and_events(mock: HttpMock) -> None:
    message = msg(25, "subscriptions/listen", {"notifications": {"resourceSubscriptions": ["file:///notes.txt"]}})
    conn, resp = mock.stream(message)
    try:
        assert resp.status == 200 and resp.getheader("x-accel-buffering") == "no"
        (ack,) = read_events(resp, 1)
        assert b"notifications/subscriptions/acknowledged" in ack
        (comment,) = read_events(resp, 1)  # nothing happens for 0.3 s: a keep-alive comment
        assert comment.startswith(b":") and not sse_data(comment + b"\n\n")
        assert mock.post(call(26, "touch")).status == 200
        block = next(b for b in read_events(resp, 5) if not b.startswith(b":"))
        event = json.loads(sse_data(block + b"\n\n")[0])
        assert event["method"] == "notifications/resources/updated"
        assert event["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 25
    finally:
        conn.close()


def test_stops_on_eof_and_on_sigterm(tmp_path: Path) -> None:
    with HttpMock("default") as m:
        assert m.post(msg(1, "server/discover")).status == 200
        t0 = time.monotonic()
        assert m.stop() == 0
        assert time.monotonic() - t0 < 5
    with HttpMock("default") as m:
        m.proc.send_signal(signal.SIGTERM)
        assert m.proc.wait(10) == 0


def test_another_host_needs_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "default", "--http", "0.0.0.0:0"])
    assert exc.value.code == 2 and "--http-any-host" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["run", "default", "--http", "localhost:99999"])


def test_headers_helper_is_what_clients_send() -> None:
    h = mcp_headers(msg(1, "resources/read", {"uri": "file:///x"}))
    assert h["Mcp-Name"] == "file:///x" and h["Mcp-Method"] == "resources/read"


def test_stdio_runs_do_not_import_h11() -> None:
    """--http is the only way in: the spawn time of stdio runs does not pay for h11."""
    import subprocess
    import sys

    code = ("import sys; from mockmcp.cli import main as cli; status = cli.main(['run', 'default']);"
            " print('h11' in sys.modules, 'mockmcp.shells.http' in sys.modules, 'mockmcp.launch.http' in sys.modules,"
            " status)")
    proc = subprocess.run([sys.executable, "-c", code], input=b"", capture_output=True, timeout=60)
    assert proc.stdout.split() == [b"False", b"False", b"False", b"0"], proc.stderr


@contextlib.contextmanager
def open_files_limit(soft: int) -> Iterator[None]:
    """This process's soft limit on open files set to ``soft`` (within the hard one), then restored."""
    was = resource.getrlimit(resource.RLIMIT_NOFILE)
    hard = was[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, was)


def test_thousands_of_idle_connections(tmp_path: Path) -> None:
    """A mock started with a desktop login's soft limit of 1,024 open files serves thousands of
    idle connections, half of them stuck in a head that never ends, and still answers the next
    request: it raises its own soft limit (within the hard one) to the connections it serves.
    With 1,024 it accepted about a thousand, and the next request waited in the backlog."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    n = 2000 if hard == resource.RLIM_INFINITY else min(2000, hard - 200)  # (the test's own sockets count too)
    path = tmp_path / "http-test.yaml"
    path.write_text(SCENARIO)
    with open_files_limit(1024):  # what the mock inherits (through the warm server, what it hands on)
        m = HttpMock(path)
    with m, open_files_limit(max(soft, n + 200)):
        socks = []
        try:
            for _ in range(n):
                socks.append(socket.create_connection((m.host, m.port)))
            for s in socks[: n // 2]:
                s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # a head that never ends
            r = m.post(msg(40, "server/discover"))
            assert r.status == 200  # the others are still served
        finally:
            for s in socks:
                s.close()
        assert m.post(msg(41, "server/discover")).status == 200
        assert m.stop() == 0
        assert "accept failed" not in m.stderr()


def test_a_listener_that_never_reads(mock: HttpMock) -> None:
    """A listen stream whose client reads nothing: events for it are dropped, the rest goes on."""
    import json as _json

    message = msg(42, "subscriptions/listen", {"notifications": {"resourceSubscriptions": ["file:///notes.txt"]}})
    body = _json.dumps(message).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in mcp_headers(message).items())
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((mock.host, mock.port))
    try:
        s.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        conn = mock.connection()
        for i in range(400):  # each touch emits an event to the stalled stream
            assert mock.post(call(1000 + i, "touch"), conn=conn).status == 200
        conn.close()
    finally:
        s.close()
    assert mock.proc.poll() is None
    records = read_journal(mock.journal)  # type: ignore[attr-defined]
    dropped = [r for r in records if r.get("kind") == "dropped" and r.get("id") == 42]
    assert dropped, "the stalled stream's events were dropped (bounded), and journaled as such"


def test_the_fixture_serves_http(mockmcp: Any) -> None:
    """MockServer.http(): the same mock over Streamable HTTP with the official client, then the report."""
    import anyio
    from mcp import Client

    server = mockmcp("http-custom-headers")

    async def main() -> Any:
        with server.http() as url:
            assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
            async with Client(url) as client:
                await client.list_tools()
                return await client.call_tool("query", {"region": "us-west1", "limit": 5, "dryRun": True,
                                                        "city": "Zürich", "scope": {"tenant": "acme"}, "sql": "SELECT 1"})

    result = anyio.run(main)
    assert result.content[0].text == "ran in us-west1"
    server.assert_expectations()
    assert server.findings(level="error") == []

