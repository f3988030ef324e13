"""HTTP faults (the ``http`` step) on the wire: the bundled http-faults scenario, a raw client."""

from __future__ import annotations

import socket
import time
from typing import Any, Iterator

import pytest

from support.httpmock import HttpMock, mcp_headers, msg
from mockmcp.scenario import check
from mockmcp.scenario.model.faults import HttpSpec


@pytest.fixture(scope="module")
def mock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpMock]:
    journal = tmp_path_factory.mktemp("faults") / "journal.jsonl"
    with HttpMock("http-faults", "--journal", str(journal)) as m:
        m.journal = journal  # type: ignore[attr-defined]
        yield m
        assert m.stop() == 0, m.stderr()


def call(mock: HttpMock, rid: int, name: str) -> Any:
    return mock.post(msg(rid, "tools/call", {"name": name, "arguments": {}}))


def raw_call(mock: HttpMock, rid: int, name: str) -> bytes:
    """The raw bytes of the answer to a tools/call, up to the server closing (or 5 s)."""
    import json

    message = msg(rid, "tools/call", {"name": name, "arguments": {}})
    body = json.dumps(message).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in mcp_headers(message).items())
    data = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{head}Content-Length: {len(body)}\r\n\r\n").encode()
    return mock.raw(data + body)


def test_status_faults(mock: HttpMock) -> None:
    r = call(mock, 1, "busy")
    assert r.status == 429 and r.headers["retry-after"] == "1" and r.body == b"slow down\n"
    r = call(mock, 2, "busy")  # targeting: only the first call per process
    assert r.status == 200 and r.json()["result"]["content"][0]["text"] == "busy answered"
    r = call(mock, 3, "unavailable")
    assert r.status == 503 and r.headers["retry-after"] == "2"
    r = call(mock, 4, "internal")
    assert r.status == 500 and r.body == b"boom\n" and r.headers["content-type"] == "text/plain"
    r = call(mock, 5, "bad_gateway")
    assert r.status == 502 and r.headers["content-type"] == "text/html"
    r = call(mock, 6, "redirect")
    assert r.status == 307 and r.headers["location"] == "http://127.0.0.1:9/mcp"
    # the ids are free again: the status answer ended each request
    assert call(mock, 1, "internal").status == 500


def test_content_type_faults(mock: HttpMock) -> None:
    r = call(mock, 10, "wrong_content_type")
    assert r.status == 200 and r.headers["content-type"] == "text/plain"
    assert r.json()["result"]["content"][0]["text"] == "labelled text/plain"
    r = call(mock, 11, "no_content_type")
    assert r.status == 200 and "content-type" not in r.headers and r.json()["id"] == 11


def test_slow_headers(mock: HttpMock) -> None:
    t0 = time.monotonic()
    r = call(mock, 12, "slow_headers")
    assert r.status == 200 and time.monotonic() - t0 >= 1.9


def test_dribbled_body(mock: HttpMock) -> None:
    message = msg(13, "tools/call", {"name": "dribbled", "arguments": {}})
    conn, resp = mock.stream(message)
    try:
        assert resp.status == 200 and resp.getheader("content-type") == "application/json"
        chunks = []
        t0 = time.monotonic()
        while True:
            piece = resp.read1(65536)
            if not piece:
                break
            chunks.append(piece)
        assert len(chunks) > 3 and time.monotonic() - t0 > 0.2  # it came in pieces, over time
        assert b"dribbled body" in b"".join(chunks)
    finally:
        conn.close()


def test_resets(mock: HttpMock) -> None:
    got = raw_call(mock, 14, "reset_mid_body")
    head, _, body = got.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
    assert head.startswith(b"HTTP/1.1 200 ") and 0 < len(body) < length  # cut mid-body
    got = raw_call(mock, 15, "reset_mid_stream")
    assert b"text/event-stream" in got and b"never arrives" not in got
    assert not got.endswith(b"0\r\n\r\n")  # no chunked terminator: dropped mid-stream


def test_the_journal_says_what_went_on_the_wire(mock: HttpMock) -> None:
    """The plan runs ahead of the writer: what a reset or endStream cut off was queued, never
    written, and the journal must not show it as sent."""
    from mockmcp.verify.journal import read_journal

    raw_call(mock, 40, "reset_mid_stream")
    raw_call(mock, 41, "stream_ends_early")
    records = [r for r in read_journal(mock.journal) if r.get("id") in (40, 41)  # type: ignore[attr-defined]
               or r.get("message", {}).get("id") in (40, 41)]
    kinds = [(r["dir"], r.get("kind"), "result" in r.get("message", {})) for r in records]
    assert ("event", "httpReset", False) in kinds and ("event", "httpEndStream", False) in kinds
    assert not any(is_result for d, _, is_result in kinds if d == "out"), records


def test_stream_that_ends_before_the_response(mock: HttpMock) -> None:
    got = raw_call(mock, 16, "stream_ends_early")
    assert b"text/event-stream" in got and got.endswith(b"0\r\n\r\n")  # ended cleanly
    assert b"never arrives" not in got


def test_broken_framing_and_body_kinds(mock: HttpMock) -> None:
    r = call(mock, 17, "broken_framing")
    assert r.headers["content-type"] == "text/event-stream"
    assert b"not a field\n" in r.body and b"after broken framing" in r.body
    r = call(mock, 18, "sse_for_json")
    assert r.headers["content-type"] == "text/event-stream" and r.events()[0]["id"] == 18
    r = mock.post(msg(19, "subscriptions/listen", {"notifications": {"toolsListChanged": True}}))
    assert r.headers["content-type"] == "application/json" and r.json()["id"] == 19


def test_mismatching_header_echoed(mock: HttpMock) -> None:
    r = call(mock, 20, "mismatching_header")
    assert r.headers["mcp-protocol-version"] == "1999-01-01" and r.headers["mcp-method"] == "tools/list"


def test_http_steps_are_ignored_on_stdio() -> None:
    from support.process import run_mock
    from support.messages import call as call_msg, line

    proc = run_mock("run", "http-faults", input=line(call_msg(1, "internal")) + line(call_msg(2, "busy")))
    out = proc.stdout.decode()
    assert '"internal (stdio)"' in out and '"busy (stdio has no status codes)"' in out


@pytest.mark.parametrize(("spec", "where"), [
    (HttpSpec(status=99), ("status",)),
    (HttpSpec(status=204, body="x"), ("status",)),
    (HttpSpec(headers={"Bad Name": "x"}), ("headers", "Bad Name")),
    (HttpSpec(headers={"X-A": "a\r\nInjected: yes"}), ("headers", "X-A")),
    (HttpSpec(headers={"Content-Length": "5"}), ("headers", "Content-Length")),
    (HttpSpec(write="snow ☃"), ("write",)),
])
def test_check_refuses_what_the_shell_cannot_send(spec: HttpSpec, where: tuple[str, ...]) -> None:
    assert [w for w, _ in check.http_step_problems(spec)] == [where]
    assert check.http_step_problems(HttpSpec(status=503, headers={"Retry-After": "1"})) == []


def test_server_survives_a_client_that_resets(mock: HttpMock) -> None:
    message = msg(30, "tools/call", {"name": "slow_headers", "arguments": {}})
    s = socket.create_connection((mock.host, mock.port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    import json
    body = json.dumps(message).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in mcp_headers(message).items())
    s.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
    s.close()  # an RST while the answer is held back
    assert call(mock, 31, "sse_for_json").status == 200
