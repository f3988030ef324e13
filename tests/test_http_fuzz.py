"""Never a crash over HTTP: generated requests (well-formed, half-formed and garbage) through the real
HttpShell connection handler on an in-memory stream; every one ends in an HTTP answer or a closed
connection, and nothing escapes the handler (an escape would take the whole server down)."""

from __future__ import annotations

import json

import trio
import trio.testing
from hypothesis import HealthCheck, given, settings, strategies as st

from helpers import bundled
from mockmcp.connection import Connection
from mockmcp.httpshell import HttpShell
from mockmcp.log import StderrLog

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
            nursery.start_soon(shell._connection, server)
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
    conn = Connection(bundled("default"))
    for data in requests:
        out = serve_once(conn, data)
        assert out == b"" or out.startswith(b"HTTP/1."), out[:200]
    # the shared engine still serves a good request afterwards
    good = json.dumps({"jsonrpc": "2.0", "id": "after", "method": "server/discover", "params": {"_meta": META}}).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: x\r\nAccept: application/json, text/event-stream\r\n"
            f"Content-Type: application/json\r\nMCP-Protocol-Version: {V}\r\nMcp-Method: server/discover\r\n"
            f"Content-Length: {len(good)}\r\nConnection: close\r\n\r\n").encode()
    assert serve_once(conn, head + good).startswith(b"HTTP/1.1 200 ")
