"""The HTTP shell's edges, each through a real ``mockmcp run --http 0`` process, with a probe after
every hostile input that must still be answered.

- a refusal of a ``HEAD`` (of any method h11 accepts, any target form) is a head without a body, and
  the server lives on;
- a request with both ``Transfer-Encoding`` and ``Content-Length`` is refused and its connection closed;
- a request's time runs from its first byte: a head dribbled a byte at a time is cut with ``408``;
- an ``initialize`` of the stateless revision (its header or ``_meta``) is ``404`` / ``-32601``, while
  a handshake-era ``initialize`` keeps its legacy answers;
- two clients may hold one request id at once (ids are unique per sender only);
- a request answered by an HTTP fault (a status, a reset, a stream ended early) is finished: its id
  may be used again without a finding;
- on loopback, a ``Host`` that names neither the server nor ``localhost`` is refused (DNS rebinding),
  unless ``--allow-host`` names it.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import http.client

from support.httpmock import HttpMock, mcp_headers, msg, read_events, sse_data

V = "2026-07-28"
MODERN_HEADERS = {"MCP-Protocol-Version": V, "Mcp-Method": "initialize"}


def _probe(mock: HttpMock, rid: Any = "probe") -> None:
    """The server still answers a good request (and is still running)."""
    r = mock.post(msg(rid, "server/discover"))
    assert r.status == 200 and r.json()["result"]["supportedVersions"], r
    assert mock.proc.poll() is None


def _stopped_cleanly(mock: HttpMock) -> str:
    status = mock.stop()
    err = mock.stderr()
    assert status == 0, err
    assert "Traceback" not in err and "internal error" not in err, err
    return err


def _split(answer: bytes) -> tuple[int, dict[str, str], bytes]:
    head, sep, body = answer.partition(b"\r\n\r\n")
    assert sep, answer
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return status, headers, body


# ---------------------------------------------------------------- HEAD and every method h11 accepts


def test_refusals_of_head_and_other_methods_leave_the_server_running() -> None:
    with HttpMock("default") as mock:
        here = f"127.0.0.1:{mock.port}"
        absolute = f"http://{here}/mcp"
        heads = [  # (request line and extra headers, the status a HEAD of it gets)
            (f"HEAD /mcp HTTP/1.1\r\nHost: {here}\r\n", 405),
            (f"HEAD / HTTP/1.1\r\nHost: {here}\r\n", 404),
            (f"HEAD /mcp HTTP/1.1\r\nHost: {here}\r\nOrigin: http://evil.example\r\n", 403),
            (f"HEAD /mcp HTTP/1.1\r\nHost: evil.example\r\n", 403),
            (f"HEAD /mcp HTTP/1.1\r\nHost: {here}\r\nX-Big: {'a' * 20_000}\r\n", 431),
            (f"HEAD {absolute} HTTP/1.1\r\nHost: {here}\r\n", 404),
            (f"HEAD * HTTP/1.1\r\nHost: {here}\r\n", 404),
            (f"HEAD /mcp HTTP/1.0\r\n", 405),
            (f"HEAD /mcp HTTP/1.1\r\nHost: {here}\r\nContent-Length: 5\r\n\r\nhello", 405),
        ]
        for head, status in heads:
            data = (head if head.endswith("hello") else head + "\r\n").encode()
            got = mock.raw(data)
            code, headers, body = _split(got)
            assert code == status, (head[:60], got[:300])
            assert body == b"", (head[:60], got[:300])  # a HEAD's answer has headers, never a body
            assert int(headers["content-length"]) > 0  # (the length a GET's answer would have)
            _probe(mock)
        others = [  # every other method h11 accepts, and the target forms it accepts
            (f"OPTIONS /mcp HTTP/1.1\r\nHost: {here}\r\n", 405),
            (f"OPTIONS * HTTP/1.1\r\nHost: {here}\r\n", 404),
            (f"DELETE /mcp HTTP/1.1\r\nHost: {here}\r\n", 405),
            (f"GET /mcp HTTP/1.1\r\nHost: {here}\r\nAccept: text/event-stream\r\n", 405),
            (f"PUT /mcp HTTP/1.1\r\nHost: {here}\r\nContent-Length: 2\r\n\r\n{{}}", 405),
            (f"PATCH /mcp HTTP/1.1\r\nHost: {here}\r\nContent-Length: 0\r\n", 405),
            (f"CONNECT {here} HTTP/1.1\r\nHost: {here}\r\n", 404),
            (f"CONNECT /mcp HTTP/1.1\r\nHost: {here}\r\n", 405),
            (f"TRACE /mcp HTTP/1.1\r\nHost: {here}\r\n", 405),
            (f"BREW /mcp HTTP/1.1\r\nHost: {here}\r\n", 405),
            (f"GET {absolute} HTTP/1.1\r\nHost: {here}\r\n", 404),
            (f"POST {absolute} HTTP/1.1\r\nHost: {here}\r\nContent-Length: 0\r\n", 404),
        ]
        for head, status in others:
            data = (head if head.endswith("{}") else head + "\r\n").encode()
            got = mock.raw(data)
            code, headers, body = _split(got)
            assert code == status, (head[:60], got[:300])
            assert len(body) == int(headers["content-length"]) > 0, got[:300]
            _probe(mock)
        _stopped_cleanly(mock)


def test_a_request_with_two_framings_is_refused_and_its_connection_closed() -> None:
    """``Transfer-Encoding`` and ``Content-Length`` both: whoever frames the body by the other one
    (a proxy in front) sees another request in it, so the request is refused with ``400``, and the
    connection closes after it: a request pipelined behind it is not served."""
    with HttpMock("default") as mock:
        body = json.dumps(msg(1, "server/discover")).encode()
        head = "".join(f"{k}: {v}\r\n" for k, v in mcp_headers(msg(1, "server/discover")).items())
        head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{mock.port}\r\n{head}"
        chunked = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
        smuggled = f"{head}Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n".encode() + chunked
        behind = f"{head}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body
        got = mock.raw(smuggled + behind)
        code, headers, rest = _split(got)
        assert code == 400 and headers["connection"] == "close", got
        assert b"Transfer-Encoding and Content-Length" in rest and b"HTTP/1.1" not in rest, got  # (one answer, then the close)
        _probe(mock)
        _stopped_cleanly(mock)


# ---------------------------------------------------------------- the request deadline


def test_a_dribbled_head_is_cut_from_its_first_byte() -> None:
    """Connections that send one byte of their head at a time get 408 once the request's time,
    counted from its first byte, is over (not only once the head is complete)."""
    limit = 1.5
    with HttpMock("default", "--http-request-timeout", str(limit)) as mock:
        head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{mock.port}\r\nX-Slow: {'a' * 200}".encode()
        socks = [socket.create_connection((mock.host, mock.port), timeout=0.05) for _ in range(5)]
        late = socket.create_connection((mock.host, mock.port), timeout=0.05)  # quiet first: idle is not a request
        answers: dict[socket.socket, bytes] = {s: b"" for s in [*socks, late]}
        cut_at: dict[socket.socket, float] = {}
        start = time.monotonic()
        late_start: float | None = None
        try:
            for i in range(len(head)):
                now = time.monotonic()
                if now - start > 12 or len(cut_at) == len(answers):
                    break
                active = [*socks, late] if now - start > 2 * limit else socks
                if late in active and late_start is None:
                    late_start = now
                for s in active:
                    if s in cut_at:
                        continue
                    try:
                        s.sendall(head[i:i + 1])
                    except OSError:
                        pass
                    try:
                        got = s.recv(4096)
                    except socket.timeout:
                        continue
                    except OSError:
                        got = b""
                    answers[s] += got
                    if not got or b"\r\n\r\n" in answers[s]:
                        cut_at[s] = time.monotonic()
                time.sleep(0.15)
            assert len(cut_at) == len(answers), f"{len(answers) - len(cut_at)} dribbling connections still open"
            for s in socks:
                assert answers[s].startswith(b"HTTP/1.1 408 "), answers[s][:200]
                assert cut_at[s] - start < limit + 4  # (generous: a slow, shared machine)
            assert answers[late].startswith(b"HTTP/1.1 408 "), answers[late][:200]
            assert late_start is not None and cut_at[late] - late_start > limit * 0.6  # its own first byte started it
        finally:
            for s in answers:
                s.close()
        _probe(mock)
        _stopped_cleanly(mock)


# ---------------------------------------------------------------- initialize


def _initialize(rid: Any, meta: bool) -> dict[str, Any]:
    params: dict[str, Any] = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    if meta:
        return msg(rid, "initialize", params)
    return {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": params}


def _dual(tmp_path: Path) -> Path:
    path = tmp_path / "dual.yaml"
    path.write_text("mockmcp: 1\nprotocol: {era: dual}\ntools:\n  - name: echo\n    replies:\n      - steps:\n          - text: hi\n")
    return path


def test_initialize_of_the_stateless_revision_is_method_not_found(tmp_path: Path) -> None:
    for scenario in ("default", _dual(tmp_path)):
        with HttpMock(scenario) as mock:
            for rid, meta, headers in [
                (1, True, MODERN_HEADERS),  # both: what the conformance suite sends
                (2, True, {}),  # _meta only
                (3, False, MODERN_HEADERS),  # the header only
            ]:
                r = mock.post(json.dumps(_initialize(rid, meta)).encode(), headers)  # (bytes: only these headers)
                assert r.status == 404, (scenario, rid, r)
                error = r.json()["error"]
                assert r.json()["id"] == rid and error["code"] == -32601, r
                assert "initialize" in error["message"] and "server/discover" in error["message"]
                _probe(mock, f"p{rid}")
            # a handshake-era initialize (no 2026-07-28 anywhere) keeps its legacy answer: the legacy probe
            legacy = mock.post(json.dumps(_initialize(9, meta=False)).encode(), {"MCP-Protocol-Version": "2025-11-25"})
            if scenario == "default":
                assert legacy.status == 400
                error = legacy.json()["error"]
                assert error["code"] == -32022 and error["data"] == {"supported": [V], "requested": "2025-11-25"}
            else:
                assert legacy.status == 200 and legacy.json()["result"]["protocolVersion"] == "2025-11-25"
            _probe(mock)
            _stopped_cleanly(mock)


# ---------------------------------------------------------------- ids are the sender's


SLOW = """mockmcp: 1
tools:
  - name: slow
    replies:
      - steps:
          - sleep: 1500ms
          - text: "slow {{ arguments.who }}"
"""


def test_two_clients_may_hold_the_same_id_at_once(tmp_path: Path) -> None:
    scenario = tmp_path / "slow.yaml"
    scenario.write_text(SLOW)
    report = tmp_path / "report.json"
    with HttpMock(scenario, "--report", str(report)) as mock:
        answers: dict[str, Any] = {}
        spans: dict[str, tuple[float, float]] = {}

        def call(who: str) -> None:
            began = time.monotonic()
            answers[who] = mock.post(msg(7, "tools/call", {"name": "slow", "arguments": {"who": who}}))
            spans[who] = (began, time.monotonic())

        threads = [threading.Thread(target=call, args=(who,)) for who in ("a", "b")]
        threads[0].start()
        time.sleep(0.3)
        threads[1].start()
        for t in threads:
            t.join(30)
        assert spans["b"][0] < spans["a"][1]  # both were in flight at once
        for who in ("a", "b"):
            r = answers[who]
            assert r.status == 200, r
            response = r.events()[-1] if r.headers["content-type"].startswith("text/event-stream") else r.json()
            assert response["id"] == 7 and response["result"]["content"][0]["text"] == f"slow {who}", response
        _probe(mock)
        _stopped_cleanly(mock)
    findings = json.loads(report.read_text())["findings"]
    assert not [f for f in findings if f["check"] == "id.reused"], findings


LISTEN = """mockmcp: 1
tools:
  - name: touch
    replies:
      - steps:
          - emit: {event: resources/updated, uri: "file:///notes.txt"}
          - text: touched
resources:
  - {uri: "file:///notes.txt", name: notes, text: some notes}
"""


def test_two_listen_streams_may_share_an_id(tmp_path: Path) -> None:
    """Two clients' listen streams with the same id both get the events they subscribed to, and one
    ending leaves the other subscribed."""
    scenario = tmp_path / "listen.yaml"
    scenario.write_text(LISTEN)
    listen = msg(1, "subscriptions/listen", {"notifications": {"resourceSubscriptions": ["file:///notes.txt"]}})

    def updated(resp: Any) -> dict[str, Any]:
        block = next(b for b in read_events(resp, 5) if not b.startswith(b":"))
        return dict(json.loads(sse_data(block + b"\n\n")[0]))

    with HttpMock(scenario, "--sse-keepalive", "0") as mock:
        streams = [mock.stream(listen) for _ in range(2)]
        try:
            for _, resp in streams:
                assert resp.status == 200
                (ack,) = read_events(resp, 1)
                assert b"notifications/subscriptions/acknowledged" in ack
            assert mock.post(msg(1, "tools/call", {"name": "touch", "arguments": {}})).status == 200  # (id 1 too)
            for _, resp in streams:
                event = updated(resp)
                assert event["method"] == "notifications/resources/updated"
                assert event["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 1
            streams[0][0].close()  # one client leaves
            time.sleep(0.3)
            assert mock.post(msg(2, "tools/call", {"name": "touch", "arguments": {}})).status == 200
            assert updated(streams[1][1])["method"] == "notifications/resources/updated"
        finally:
            for conn, _ in streams:
                conn.close()
        _probe(mock)
        _stopped_cleanly(mock)


# ---------------------------------------------------------------- a fault finishes a request


def test_a_request_answered_by_a_fault_is_finished(tmp_path: Path) -> None:
    """After a status, a reset or a stream ended early, the request is over: a retry with its id or
    its progressToken is no finding (a request left "in flight" made both false errors)."""
    report, journal = tmp_path / "report.json", tmp_path / "journal.jsonl"
    with HttpMock("http-faults", "--report", str(report), "--journal", str(journal)) as mock:
        def call(rid: int, tool: str) -> dict[str, Any]:
            return msg(rid, "tools/call", {"name": tool, "arguments": {}}, {"progressToken": "tok"})

        assert mock.post(call(1, "busy")).status == 429
        for rid, tool in enumerate(("reset_mid_body", "reset_mid_stream", "stream_ends_early", "internal"), 2):
            try:
                mock.post(call(rid, tool))  # no response to this request, ever
            except (OSError, http.client.HTTPException):
                pass
        time.sleep(1.1)  # (busy's Retry-After)
        r = mock.post(call(1, "busy"))
        assert r.status == 200 and r.json()["id"] == 1, r
        _probe(mock)
        _stopped_cleanly(mock)
    checks = [f["check"] for f in json.loads(report.read_text())["findings"]]
    assert "id.reused" not in checks and "progressToken.reused" not in checks, checks
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    assert {r["kind"] for r in records if r.get("dir") == "event"} >= {"httpStatus", "httpReset", "httpEndStream"}
    assert not [r for r in records if r.get("dir") == "finding" and r["finding"]["level"] == "error"]


# ---------------------------------------------------------------- Host (DNS rebinding)


def _host(mock: HttpMock, host: str | None) -> bytes:
    body = json.dumps(msg("h", "server/discover")).encode()
    head = f"POST /mcp HTTP/1.1\r\n" + (f"Host: {host}\r\n" if host is not None else "")
    head += "".join(f"{k}: {v}\r\n" for k, v in mcp_headers(msg("h", "server/discover")).items())
    return mock.raw(f"{head}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)


def test_a_foreign_host_is_refused_on_loopback() -> None:
    with HttpMock("default", "--allow-host", "mcp.test") as mock:
        port = mock.port
        for host in ["evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", f"localhost.evil:{port}",
                     "10.0.0.1", f"[::2]:{port}", "mcp.test.evil"]:
            status, headers, body = _split(_host(mock, host))
            assert status == 403, host
            text = json.loads(body)["error"]["message"]
            assert host in text and "Host" in text and "--allow-host" in text, text
            _probe(mock)
        for host in [f"127.0.0.1:{port}", "127.0.0.1", f"localhost:{port}", "LocalHost", f"[::1]:{port}",
                     "mcp.test", f"MCP.test:{port + 1}"]:
            status, _, body = _split(_host(mock, host))
            assert status == 200 and json.loads(body)["id"] == "h", (host, body[:200])
        _stopped_cleanly(mock)


def test_allow_host_star_accepts_any_host() -> None:
    with HttpMock("default", "--allow-host", "*") as mock:
        status, _, _ = _split(_host(mock, "evil.example"))
        assert status == 200
        _stopped_cleanly(mock)


def test_no_host_header_over_http_1_0_is_served() -> None:
    """A client without Host (HTTP/1.0) is no browser: DNS rebinding needs a page's Host."""
    with HttpMock("default") as mock:
        body = json.dumps(msg("h", "server/discover")).encode()
        head = "".join(f"{k}: {v}\r\n" for k, v in mcp_headers(msg("h", "server/discover")).items())
        got = mock.raw(f"POST /mcp HTTP/1.0\r\n{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        assert _split(got)[0] == 200
        _stopped_cleanly(mock)

