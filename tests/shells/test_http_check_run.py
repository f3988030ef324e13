"""'mockmcp check ok' means the HTTP shell can send it: generated http steps that check accepts,
served through the real connection handler, never raise (h11 refuses bad heads with an exception,
which would end the server); those check refuses are the ones h11 could not send."""

from __future__ import annotations

import json

import trio
import trio.testing
from hypothesis import HealthCheck, given, settings, strategies as st

from mockmcp.scenario import check
from mockmcp.scenario.model import base as model
from mockmcp.core.connection import Connection
from mockmcp.shells.http.shell import HttpShell
from mockmcp.shells.log import StderrLog
from mockmcp.launch.boot import new_engine
from mockmcp.scenario.model.faults import HttpSpec, HttpStep

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
latin = st.text(st.characters(min_codepoint=0, max_codepoint=255), max_size=12)
specs = st.builds(
    HttpSpec,
    status=st.one_of(st.none(), st.sampled_from([200, 201, 205, 299, 307, 400, 429, 500, 503, 599]), st.integers(0, 700)),
    body=st.text(max_size=20),
    headers=st.dictionaries(
        st.one_of(st.sampled_from(["Retry-After", "Location", "Content-Type", "X-A", "MCP-Protocol-Version",
                                   "Content-Encoding", "Content-Length", "Transfer-Encoding"]), latin),
        st.one_of(st.sampled_from(["1", "x y", "http://127.0.0.1:9/mcp", "é", "gzip", ""]), latin), max_size=3),
    contentType=st.one_of(st.none(), st.sampled_from(["", "text/plain", "application/json; charset=é"]), latin),
    delay=st.one_of(st.none(), st.just(model.Duration(0.01))),
    respondAs=st.sampled_from([None, "json", "sse"]),
    write=st.one_of(st.none(), latin, st.text(max_size=5)),
    endStream=st.booleans(),
    reset=st.booleans(),
)


def scenario(steps: list[HttpStep]) -> model.Scenario:
    tool = model.Tool(name="t", replies=[model.Rule(steps=[*steps, model.TextStep(text="answer")])])
    return model.Scenario(mockmcp=1, tools=[tool])


def serve(sc: model.Scenario) -> bytes:
    conn = Connection(new_engine(sc, shared_ids=True))
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "t", "arguments": {}, "_meta": META}}).encode()
    head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n"
            b"Content-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
            b"Mcp-Name: t\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(body))
    out = bytearray()

    async def main() -> None:
        shell = HttpShell(conn, log=StderrLog("quiet"), keepalive=0)
        client, server = trio.testing.memory_stream_pair()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(shell.loop.connection, server)
            await client.send_all(head + body)
            with trio.move_on_after(5):
                while got := await client.receive_some(65536):
                    out.extend(got)
            nursery.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    return bytes(out)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(specs, min_size=1, max_size=3))
def test_checked_http_steps_are_served(spec_list: list[HttpSpec]) -> None:
    if any(check.http_step_problems(s) for s in spec_list):
        return  # refused at check time (the loader reports it at its place)
    out = serve(scenario([HttpStep(http=s) for s in spec_list]))
    assert out.startswith(b"HTTP/1.1 ") or out == b"", out[:200]
