"""The bundled dynamics scenarios against the official Python SDK client (mcp==2.3.0).

The mock runs as a real subprocess (``sys.executable -m mockmcp run <scenario>``)
spawned by the SDK's stdio transport; the client runs under trio (pytest-trio).
Everything the mock wrote is read back from its ``--journal`` and validated
against the official schema.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from support.process import mockmcp_cmd

from mockmcp.verify.journal import read_journal

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class Mock:
    """Spawn parameters for one bundled scenario, plus its journal."""

    def __init__(self, tmp_path: Path, scenario: str, *extra: str) -> None:
        self.journal = tmp_path / f"{scenario}.jsonl"
        command, *rest = mockmcp_cmd("run", scenario, "--no-cache", "--journal", str(self.journal), *extra)
        self.params = StdioServerParameters(command=command, args=rest)

    def outbound(self, schema: Any) -> list[dict[str, Any]]:
        """Every message the mock wrote, each validated against the official schema."""
        records = read_journal(self.journal)
        methods = {r["message"].get("id"): r["message"]["method"] for r in records
                   if r["dir"] == "in" and isinstance(r.get("message"), dict) and "method" in r["message"]
                   and "id" in r["message"]}
        out = [r["message"] for r in records if r["dir"] == "out" and "message" in r]
        assert not [r for r in records if r["dir"] == "out" and "raw" in r], "unexpected raw writes"
        for m in out:
            schema.check(m, methods.get(m.get("id")))
        return out

    def inbound(self) -> list[dict[str, Any]]:
        return [r["message"] for r in read_journal(self.journal) if r["dir"] == "in" and "message" in r]


def calls(mock: Mock, name: str) -> list[dict[str, Any]]:
    return [m for m in mock.inbound() if m.get("method") == "tools/call" and m["params"]["name"] == name]


def text_of(result: types.CallToolResult) -> str:
    return result.content[0].text  # type: ignore[union-attr]


# ------------------------------------------------------------------ automatic input_required loop


async def test_automatic_loop_with_elicitation_sampling_and_roots(schema, tmp_path):
    seen: list[Any] = []

    async def elicit(ctx: Any, params: Any) -> types.ElicitResult:
        seen.append(("elicit", params.message))
        if "name" in params.message or "greeted" in params.message:
            return types.ElicitResult(action="accept", content={"name": "Ada"})
        if "color" in params.message:
            return types.ElicitResult(action="accept", content={"color": "teal"})
        return types.ElicitResult(action="accept", content={"confirm": True})

    async def sample(ctx: Any, params: Any) -> types.CreateMessageResult:
        seen.append(("sample", params.messages[0].content.text))
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="forty-two"),
                                         model="fake-model")

    async def roots(ctx: Any) -> types.ListRootsResult:
        seen.append(("roots", None))
        return types.ListRootsResult(roots=[types.Root(uri="file:///a"), types.Root(uri="file:///b"),
                                            types.Root(uri="file:///c")])

    mock = Mock(tmp_path, "mrtr")
    async with Client(mock.params, elicitation_callback=elicit, sampling_callback=sample,
                      list_roots_callback=roots) as client:
        assert text_of(await client.call_tool("confirm_action", {"action": "launch"})) == "done: launch"
        assert text_of(await client.call_tool("two_rounds")) == "Ada likes teal"
        assert text_of(await client.call_tool("ask_model", {"question": "The answer?"})) == "the model said: forty-two"
        assert text_of(await client.call_tool("list_my_roots")) == "you have 3 roots"
        assert text_of(await client.call_tool("busy_then_done")) == "done"
        prompt = await client.get_prompt("personal_greeting")
        assert prompt.messages[0].content.text == "Write a warm greeting for Ada."  # type: ignore[union-attr]
    assert ("sample", "The answer?") in seen and ("roots", None) in seen
    out = mock.outbound(schema)
    assert sum(1 for m in out if m.get("result", {}).get("resultType") == "input_required") == 7
    # Each retry is a new request with a new id, echoing the requestState.
    two = calls(mock, "two_rounds")
    assert len(two) == 3 and len({m["id"] for m in two}) == 3
    assert "requestState" not in two[0]["params"] and all("requestState" in m["params"] for m in two[1:])


async def test_resource_template_read_with_input_required(schema, tmp_path):
    async def elicit(ctx: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"ok": True})

    mock = Mock(tmp_path, "mrtr")
    async with Client(mock.params, elicitation_callback=elicit) as client:
        result = await client.read_resource("vault://secrets/door")
        assert result.contents[0].text == "the secret door is 42"  # type: ignore[union-attr]
    mock.outbound(schema)


async def test_declined_confirmation_is_an_error_result(schema, tmp_path):
    async def decline(ctx: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    mock = Mock(tmp_path, "mrtr")
    async with Client(mock.params, elicitation_callback=decline) as client:
        result = await client.call_tool("confirm_action", {"action": "launch"})
        assert result.is_error and "not confirmed (decline)" in text_of(result)
    mock.outbound(schema)


# ------------------------------------------------------------------ the manual loop


async def test_manual_loop_tampered_state_and_missing_answer(schema, tmp_path):
    async def never(ctx: Any, params: Any) -> types.ElicitResult:  # declares the capability; the test answers
        raise AssertionError("the manual loop answers itself")

    mock = Mock(tmp_path, "mrtr")
    async with Client(mock.params, elicitation_callback=never) as client:
        session = client.session
        first = await session.call_tool("confirm_action", {"action": "ship"}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        assert set(first.input_requests or {}) == {"confirm"}
        state = first.request_state
        assert state

        # A tampered requestState is refused with -32602.
        with pytest.raises(MCPError) as info:
            await session.call_tool("confirm_action", {"action": "ship"}, allow_input_required=True,
                                    input_responses={"confirm": types.ElicitResult(action="accept", content={"confirm": True})},
                                    request_state=state[:-3] + ("AAA" if not state.endswith("AAA") else "BBB"))
        assert info.value.code == -32602 and "requestState" in str(info.value)

        # A retry without the asked answer is asked again.
        again = await session.call_tool("confirm_action", {"action": "ship"}, allow_input_required=True,
                                        input_responses={}, request_state=state)
        assert isinstance(again, types.InputRequiredResult)
        assert set(again.input_requests or {}) == {"confirm"}

        done = await session.call_tool("confirm_action", {"action": "ship"}, allow_input_required=True,
                                       input_responses={"confirm": types.ElicitResult(action="accept", content={"confirm": True})},
                                       request_state=again.request_state)
        assert isinstance(done, types.CallToolResult) and text_of(done) == "done: ship"
    mock.outbound(schema)


async def test_missing_elicitation_capability_is_32021(schema, tmp_path):
    mock = Mock(tmp_path, "mrtr")
    async with Client(mock.params) as client:  # no callbacks: no elicitation declared
        with pytest.raises(MCPError) as info:
            await client.call_tool("confirm_action", {"action": "x"})
        assert info.value.code == -32021
        assert info.value.error.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}
    mock.outbound(schema)


# ------------------------------------------------------------------ progress, logging, cancellation


async def test_progress_callbacks_in_order_and_logs(schema, tmp_path):
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[Any] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def on_log(params: Any) -> None:
        logs.append((params.level, params.data))

    mock = Mock(tmp_path, "progress", "--time-scale", "0.2")
    async with Client(mock.params, logging_callback=on_log, log_level="info") as client:
        result = await client.call_tool("slow_task", {"steps": 5}, progress_callback=on_progress)
        assert text_of(result) == "completed 5 steps"
    assert progress == [(n, 5, f"step {n} of 5") for n in range(1, 6)]
    assert [level for level, _ in logs] == ["info", "warning", "error"]  # debug is below the requested level
    mock.outbound(schema)


async def test_cancellation_after_a_read_timeout(schema, tmp_path):
    mock = Mock(tmp_path, "cancel", "--log-level", "info")
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with Client(mock.params) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("long_running", read_timeout_seconds=0.5, progress_callback=on_progress)
        assert info.value.code == types.REQUEST_TIMEOUT  # the client gave up (and sent notifications/cancelled)
        # Some time later the server is still quiet about it and still serves.
        await trio.sleep(0.5)
        assert text_of(await client.call_tool("quick")) == "quick answer"
    assert progress  # it was running
    records = read_journal(mock.journal)
    cancel = [r for r in records if r["dir"] == "in" and r.get("message", {}).get("method") == "notifications/cancelled"]
    assert len(cancel) == 1
    cancelled_id = cancel[0]["message"]["params"]["requestId"]
    after = records[records.index(cancel[0]) + 1:]
    out_after = [r["message"] for r in after if r["dir"] == "out"]
    assert all(m.get("id") != cancelled_id for m in out_after)
    assert not [m for m in out_after if m.get("method") == "notifications/progress"]
    mock.outbound(schema)


# ------------------------------------------------------------------ subscriptions


async def test_listen_receives_exactly_the_subscribed_events(schema, tmp_path):
    from mcp.client.subscriptions import ResourceUpdated, ToolsListChanged

    mock = Mock(tmp_path, "subscriptions", "--time-scale", "0.1")
    async with Client(mock.params) as client:
        async with client.listen(resource_subscriptions=["file:///notes.txt"]) as notes_sub, \
                client.listen(tools_list_changed=True) as tools_sub, \
                client.listen(resource_subscriptions=["clock://now"]) as clock_sub:
            await client.call_tool("touch", {"uri": "file:///notes.txt"})
            await client.call_tool("touch", {"uri": "file:///elsewhere"})
            await client.call_tool("refresh_tools")
            with trio.fail_after(10):
                first = await notes_sub.__anext__()
                tool_event = await tools_sub.__anext__()
                ticks = [await clock_sub.__anext__() for _ in range(3)]
            assert isinstance(first, ResourceUpdated) and first.uri == "file:///notes.txt"
            assert isinstance(tool_event, ToolsListChanged)
            assert all(isinstance(t, ResourceUpdated) and t.uri == "clock://now" for t in ticks)
    out = mock.outbound(schema)
    subs = {m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]: m["params"]["notifications"]
            for m in out if m.get("method") == "notifications/subscriptions/acknowledged"}
    assert sorted(map(str, subs.values())) == sorted(map(str, [{"resourceSubscriptions": ["file:///notes.txt"]},
                                                                {"toolsListChanged": True},
                                                                {"resourceSubscriptions": ["clock://now"]}]))
    by_sub: dict[Any, list[tuple[str, Any]]] = {}
    for m in out:
        if m.get("method", "").startswith("notifications/") and m["method"] != "notifications/subscriptions/acknowledged":
            sid = m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]
            by_sub.setdefault(sid, []).append((m["method"], m["params"].get("uri")))
    notes_id = next(k for k, v in subs.items() if v == {"resourceSubscriptions": ["file:///notes.txt"]})
    tools_id = next(k for k, v in subs.items() if v == {"toolsListChanged": True})
    assert by_sub[notes_id] == [("notifications/resources/updated", "file:///notes.txt")]
    assert by_sub[tools_id] == [("notifications/tools/list_changed", None)]


async def test_leaving_listen_cancels_the_stream(schema, tmp_path):
    mock = Mock(tmp_path, "subscriptions", "--time-scale", "0.1")
    async with Client(mock.params) as client:
        async with client.listen(resource_subscriptions=["clock://now"]) as sub:
            with trio.fail_after(10):
                await sub.__anext__()  # the first tick, 50 ms after the ack
        await trio.sleep(0.4)  # eight more ticks would be due by now
    records = read_journal(mock.journal)
    cancel = next(i for i, r in enumerate(records)
                  if r["dir"] == "in" and r.get("message", {}).get("method") == "notifications/cancelled")
    listen_id = records[cancel]["message"]["params"]["requestId"]
    later = [r["message"] for r in records[cancel + 1:] if r["dir"] == "out"]
    assert not [m for m in later if m.get("params", {}).get("_meta", {}).get("io.modelcontextprotocol/subscriptionId") == listen_id]
    mock.outbound(schema)
