"""Never a crash over HTTP: generated requests (well-formed, half-formed and garbage) through the real
HttpShell connection handler on an in-memory stream; every one ends in an HTTP answer or a closed
connection, and nothing escapes the handler (an escape would take the whole server down)."""

from __future__ import annotations

import json
import time

import trio
import trio.testing
from hypothesis import HealthCheck, given, settings, strategies as st

from support.engines import bundled
from mockmcp.core.connection import Connection
from mockmcp.shells.http.shell import HttpShell
from mockmcp.shells.log import StderrLog

V = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {}}

methods = st.sampled_from(["POST", "GET", "DELETE", "PUT", "OPTIONS", "P\x00ST", ""])
targets = st.sampled_from(["/mcp", "/mcp?x=1", "/", "/other", "*", "/mcp/../mcp", "mcp"])
header_names = st.sampled_from(["Accept", "Content-Type", "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name",
                                "Mcp-Param-Region", "Origin", "Content-Length", "Transfer-Encoding", "Expect",
                                "Connection", "X-Other"])
header_values = st.one_of(
    st.sampled_from(["application/json, text/event-stream", "application/json", V, "tools/call", "echo",
                     "=?base64?ZWNobw==?=", "=?base64?***?=", "chunked", "100-continue", "close", "0", "-1",
                     "99999999999", "http://evil.example", "http://localhost", ""]),
    st.text(st.characters(min_codepoint=32, max_codepoint=255), max_size=30),
)
bodies = st.one_of(
    st.builds(lambda rid, method, name: json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                                                    "params": {"name": name, "arguments": {"text": "x"}, "_meta": META}}),
              st.one_of(st.integers(), st.text(max_size=5), st.none()),
              st.sampled_from(["tools/call", "server/discover", "tools/list", "subscriptions/listen", "nope", "initialize"]),
              st.sampled_from(["echo", "add", "get_weather", "missing"])),
    st.sampled_from(['[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]', '{"jsonrpc":"2.0","id":1,"result":{}}',
                     '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}', "{", "", "null"]),
    st.text(max_size=60),
)


@st.composite
def raw_requests(draw: st.DrawFn) -> bytes:
    if draw(st.booleans()) and draw(st.booleans()):
        return draw(st.binary(max_size=200))  # garbage
    body = draw(bodies).encode("utf-8", "surrogatepass")
    lines = [f"{draw(methods)} {draw(targets)} HTTP/1.{draw(st.sampled_from([0, 1]))}", "Host: x"]
    for name, value in draw(st.lists(st.tuples(header_names, header_values), max_size=8)):
        lines.append(f"{name}: {value}")
    if draw(st.booleans()):
        lines.append(f"Content-Length: {len(body)}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
    data = head + body
    cut = draw(st.integers(0, len(data)))
    return data[:cut] if draw(st.integers(0, 4)) == 0 else data


def serve_once(engine_conn: Connection, data: bytes) -> bytes:
    out = bytearray()

    async def main() -> None:
        shell = HttpShell(engine_conn, log=StderrLog("quiet"), keepalive=0, request_timeout=0.5, idle_timeout=0.5)
        client, server = trio.testing.memory_stream_pair()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(shell.loop.connection, server)
            await client.send_all(data)
            with trio.move_on_after(2):
                while True:
                    got = await client.receive_some(65536)
                    if not got:
                        break
                    out.extend(got)
            await client.aclose()  # a stream still open (a listen, a hang) is closed by the client: cancelled
            nursery.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    return bytes(out)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(raw_requests(), min_size=1, max_size=3))
def test_any_bytes_get_an_http_answer_or_a_close(requests: list[bytes]) -> None:
    conn = Connection(bundled("default", shared_ids=True))
    for data in requests:
        out = serve_once(conn, data)
        assert out == b"" or out.startswith(b"HTTP/1."), out[:200]
    # the shared engine still serves a good request afterwards
    good = json.dumps({"jsonrpc": "2.0", "id": "after", "method": "server/discover", "params": {"_meta": META}}).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: x\r\nAccept: application/json, text/event-stream\r\n"
            f"Content-Type: application/json\r\nMCP-Protocol-Version: {V}\r\nMcp-Method: server/discover\r\n"
            f"Content-Length: {len(good)}\r\nConnection: close\r\n\r\n").encode()
    assert serve_once(conn, head + good).startswith(b"HTTP/1.1 200 ")


# ---------------------------------------------------------------- the request head, through the real process

head_methods = st.sampled_from(["POST", "HEAD", "GET", "OPTIONS", "DELETE", "PUT", "PATCH", "TRACE", "CONNECT", "post",
                                "BREW", "P\tST", "POST POST", "", "\x00", "G\xe9T"])
head_targets = st.sampled_from(["/mcp", "/mcp?a=1&b", "*", "/", "//mcp", "/mcp#frag", "/%6dcp", "mcp", "/mcp/",
                                "http://127.0.0.1:{port}/mcp", "http://evil.example/mcp", "127.0.0.1:{port}",
                                "/" + "a" * 300, "/mcp\x00", "/m cp"])
hosts = st.sampled_from(["127.0.0.1:{port}", "127.0.0.1", "localhost:{port}", "[::1]:{port}", "evil.example",
                         "evil.example:{port}", "", "127.0.0.1:{port}, evil.example", "127.0.0.1:99999", "[::1",
                         "localhost:{port}:{port}", None])
versions = st.sampled_from(["HTTP/1.1", "HTTP/1.0", "HTTP/1.2", "HTTP/2.0", "HTTP/1", "http/1.1", "", "HTTP/1.1 extra"])
odd_headers = st.sampled_from([
    "Content-Length: -1", "Content-Length: 1e3", "Content-Length:  7", "Content-Length: 5, 5", "Content-Length: 0x10",
    "Content-Length: 99999999999999999999", "Transfer-Encoding: chunked", "Transfer-Encoding: gzip, chunked",
    "Transfer-Encoding: CHUNKED", "Transfer-Encoding: identity", "Expect: 100-continue", "Connection: keep-alive, close",
    "Connection: upgrade", "Upgrade: h2c", " folded: continuation", "NoColonHere", ": empty name", "X\x00Y: z",
    "X-Long: " + "v" * 9000, "a" * 200 + ": name", "Content-Type: application/json; charset=latin-1",
    "Accept: */*", "Accept: application/json;q=0, text/event-stream", "Origin: null", "Origin: http://evil.example",
])


@st.composite
def request_heads(draw: st.DrawFn, port: int) -> tuple[bytes, list[int]]:
    """A hostile request head (and maybe a body), and where to cut it into dribbled chunks."""
    method, target, version = draw(head_methods), draw(head_targets).format(port=port), draw(versions)
    lines = [" ".join(part for part in (method, target, version) if part or draw(st.booleans()))]
    host = draw(hosts)
    if host is not None:
        lines.append(f"Host: {host.format(port=port)}")
    for _ in range(draw(st.integers(0, 5))):
        if draw(st.booleans()):
            lines.append(draw(odd_headers))
        else:
            lines.append(f"{draw(header_names)}: {draw(header_values)}")
    body = draw(bodies).encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        lines.append(f"Content-Length: {len(body) + draw(st.sampled_from([0, 0, 0, -1, 1, 100]))}")
    if draw(st.booleans()):
        body = f"{len(body):x}\r\n".encode() + body + draw(st.sampled_from([b"\r\n0\r\n\r\n", b"\r\n", b"0\r\n", b""]))
    end = draw(st.sampled_from(["\r\n", "\n", "\r\n", "\r"]))
    data = (end.join(lines) + end + end).encode("latin-1", "replace") + body
    if draw(st.integers(0, 5)) == 0:
        data = data[:draw(st.integers(0, len(data)))]  # cut anywhere
    cuts = sorted(draw(st.lists(st.integers(1, max(1, len(data) - 1)), max_size=4)))
    return data, cuts


def test_hostile_request_heads_never_take_the_real_server_down() -> None:
    """Generated request heads (methods, targets, Host, header names and values, Content-Length and
    Transfer-Encoding oddities, HEAD requests, line endings, cut or dribbled bytes) sent to a real
    process: each gets an HTTP answer or a closed connection, a HEAD's answer has no body, and a
    good request is answered after each."""
    import socket
    import sys
    from pathlib import Path

    from support.httpmock import HttpMock, msg

    with HttpMock("default", "--http-request-timeout", "2", "--sse-keepalive", "0") as mock:
        @settings(max_examples=250, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
        @given(request_heads(mock.port))
        def one(case: tuple[bytes, list[int]]) -> None:
            data, cuts = case
            with socket.create_connection((mock.host, mock.port), timeout=5) as s:
                start = 0
                try:
                    for cut in [*cuts, len(data)]:
                        if cut > start:
                            s.sendall(data[start:cut])
                            time.sleep(0.005)  # dribbled: each piece its own read
                            start = cut
                    s.shutdown(socket.SHUT_WR)
                except OSError:
                    pass  # the server answered and closed before the rest was written
                got = b""
                try:
                    while chunk := s.recv(65536):
                        got += chunk
                except (ConnectionResetError, socket.timeout):
                    pass
            assert got == b"" or got.startswith(b"HTTP/1.1 "), (data[:200], got[:200])
            if data.startswith(b"HEAD ") and got[9:12] in (b"403", b"404", b"405", b"413", b"431"):  # (a HEAD h11 read)
                head, _, rest = got.partition(b"\r\n\r\n")
                assert rest == b"" or rest.startswith(b"HTTP/1.1 "), (data[:200], got[:300])  # no body after it
            r = mock.post(msg("probe", "server/discover"))
            assert r.status == 200 and r.json()["id"] == "probe", r
            assert mock.proc.poll() is None, mock.stderr()

        one()
        assert mock.stop() == 0
        err = mock.stderr()
        assert "Traceback" not in err and "internal error" not in err, err[-3000:]
