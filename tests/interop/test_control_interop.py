"""The control channel with the official Python client (mcp==2.3.0) on the MCP side.

The SDK spawns ``mockmcp run --control PATH`` itself (``MockServer.stdio_parameters``);
the test drives the running mock through ``MockServer``'s async methods, under
trio (pytest-trio) and under asyncio (``asyncio.run``), and through the fixture.
The three behaviours the control channel exists for: a list-changed event emitted from the test
reaches the client's listen stream; an armed fault hits the next call only;
``wait_for`` sees the real client's request.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mockmcp.api import MockServer, prepare

pytestmark = [pytest.mark.interop, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

SCENARIO: dict[str, Any] = {
    "mockmcp": 1,
    "tools": [{"name": "greet", "replies": [{"steps": [{"text": "hello {{ arguments.who }}"}]}]}],
}


def params(mock: MockServer) -> StdioServerParameters:
    return StdioServerParameters(**mock.stdio_parameters())


def text(result: Any) -> str:
    return str(result.content[0].text)


async def test_emitted_list_changed_reaches_the_listen_stream_under_trio(tmp_path: Path) -> None:
    from mcp.client.subscriptions import ToolsListChanged

    mock = prepare(SCENARIO, tmp_path, control=True)
    async with Client(params(mock)) as client:
        async with client.listen(tools_list_changed=True) as sub:
            await mock.add_tool({"name": "wave", "replies": [{"steps": [{"text": "o/"}]}]}, notify=False)
            assert await mock.emit_tools_changed() == 1
            with trio.fail_after(10):
                event = await sub.__anext__()
            assert isinstance(event, ToolsListChanged)
            tools = await client.list_tools()
            assert sorted(t.name for t in tools.tools) == ["greet", "wave"]
            assert text(await client.call_tool("wave")) == "o/"


async def test_wait_for_sees_the_clients_request_under_trio(tmp_path: Path) -> None:
    mock = prepare(SCENARIO, tmp_path, control=True)
    async with Client(params(mock)) as client:
        seen: list[Any] = []

        since = await mock.position()  # requests from here count, however late the wait arrives

        async def waiting() -> None:
            seen.append(await mock.wait_for("tools/call", name="greet", arguments={"who": "ada"}, timeout=10, since=since))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiting)
            await client.call_tool("greet", {"who": "bob"})  # a near miss: not this one
            assert text(await client.call_tool("greet", {"who": "ada"})) == "hello ada"
        assert seen[0]["method"] == "tools/call" and seen[0]["params"]["arguments"] == {"who": "ada"}


def test_armed_fault_hits_the_next_call_only_under_asyncio(tmp_path: Path) -> None:
    mock = prepare(SCENARIO, tmp_path, control=True)

    async def main() -> tuple[str, int, str, Any]:
        async with Client(params(mock)) as client:
            await client.call_tool("greet", {"who": "first"})  # a client may list tools first; the mock is up now
            await mock.arm({"method": "tools/call", "name": "greet"}, [{"error": {"code": -32000, "message": "armed failure"}}])
            since = await mock.position()
            try:
                await client.call_tool("greet", {"who": "a"})
                raise AssertionError("the armed fault did not hit")
            except MCPError as exc:
                failed = (exc.error.message, exc.error.code)
            after = text(await client.call_tool("greet", {"who": "b"}))
            waited = await mock.wait_for("tools/call", since=since, arguments={"who": "b"}, timeout=5)
            counters = await mock.counters()
        return failed[0], failed[1], after, (waited, counters)

    message, code, after, (waited, counters) = asyncio.run(main())
    assert (message, code) == ("armed failure", -32000)
    assert after == "hello b"
    assert waited["params"]["arguments"] == {"who": "b"}
    assert counters["armed"] == [] and any(r["rule"].startswith("armed#") and r["matched"] == 1 for r in counters["rules"])


def test_the_fixture_with_a_sync_twin(mockmcp: Any) -> None:
    server = mockmcp(SCENARIO, control=True)

    async def main() -> str:
        async with Client(params(server)) as client:
            # the sync twin, from a thread (it blocks); the async methods from the loop
            await asyncio.to_thread(server.sync.replace_tool, {"name": "greet", "replies": [{"steps": [{"text": "replaced"}]}]})
            return text(await client.call_tool("greet", {"who": "x"}))

    assert asyncio.run(main()) == "replaced"
    assert [m["params"]["name"] for m in server.received("tools/call")] == ["greet"]


async def test_the_control_channel_with_the_python_client_over_http_under_trio(tmp_path: Path) -> None:
    """``--http`` and ``--control`` together, the official client on the HTTP side: an emitted
    event reaches its SSE listen stream, an armed fault hits its next call only, ``wait_for``
    sees its request."""
    from mcp.client.subscriptions import ToolsListChanged

    mock = prepare(SCENARIO, tmp_path, control=True)
    with mock.http() as url:
        async with Client(url) as client:
            async with client.listen(tools_list_changed=True) as sub:
                await mock.add_tool({"name": "wave", "replies": [{"steps": [{"text": "o/"}]}]}, notify=False)
                assert await mock.emit_tools_changed() == 1
                with trio.fail_after(10):
                    event = await sub.__anext__()
                assert isinstance(event, ToolsListChanged)
            assert sorted(t.name for t in (await client.list_tools()).tools) == ["greet", "wave"]
            await mock.arm({"method": "tools/call", "name": "greet"}, [{"error": {"code": -32000, "message": "armed failure"}}])
            with pytest.raises(MCPError) as failed:
                await client.call_tool("greet", {"who": "a"})
            assert failed.value.error.message == "armed failure"
            since = await mock.position()
            assert text(await client.call_tool("greet", {"who": "ada"})) == "hello ada"
            seen = await mock.wait_for("tools/call", name="greet", arguments={"who": "ada"}, timeout=10, since=since)
            assert seen["params"]["arguments"] == {"who": "ada"}
