"""The official Python SDK client (mcp==2.3.0) against ``mockmcp run default``.

The SDK's stdio transport spawns the mock as a real subprocess and connects in
its default mode (``server/discover`` first); the client lists and calls every
tool, gets the prompt, reads every resource and a template URI. Once under
asyncio and once under trio. The mock is spawned through ``interop_tee.py``,
which records every line in both directions, so each line the mock wrote is
checked against the official schema, and the order of what the client sent is
checked too.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from support.process import mockmcp_prefix

TEE = Path(__file__).parents[1] / "support" / "interop_tee.py"

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def params(record: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[str(TEE), str(record), "--", *mockmcp_prefix(), "run", "default"],
    )


async def exercise(record: Path) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with Client(params(record)) as client:
        seen["version"] = client.protocol_version
        seen["server"] = client.server_info
        seen["caps"] = client.server_capabilities

        tools = (await client.list_tools()).tools
        seen["tools"] = [t.name for t in tools]
        assert {t.name for t in tools} == {"echo", "add", "get_weather"}
        echo = await client.call_tool("echo", {"text": "hi from the SDK"})
        seen["echo"] = echo
        add = await client.call_tool("add", {"a": 19, "b": 23})
        seen["add"] = add
        weather = await client.call_tool("get_weather", {"city": "Reykjavik"})
        seen["weather"] = weather
        seen["add_bad"] = await client.call_tool("add", {"a": "x", "b": 1})

        prompts = (await client.list_prompts()).prompts
        seen["prompts"] = [p.name for p in prompts]
        seen["prompt"] = await client.get_prompt("code_review", {"code": "x = 1", "language": "python"})

        resources = (await client.list_resources()).resources
        seen["resources"] = {str(r.uri): await client.read_resource(str(r.uri)) for r in resources}
        templates = (await client.list_resource_templates()).resource_templates
        seen["templates"] = [t.uri_template for t in templates]
        seen["template_read"] = await client.read_resource("weather://forecast/Reykjavik")
    return seen


def check_results(seen: dict[str, Any]) -> None:
    assert seen["version"] == "2026-07-28"
    assert seen["server"] is not None and seen["server"].name == "mockmcp-default"
    assert seen["caps"].tools is not None and seen["caps"].prompts is not None and seen["caps"].resources is not None
    assert seen["echo"].content[0].text == "hi from the SDK" and not seen["echo"].is_error
    assert seen["add"].content[0].text == "42"
    assert seen["add"].structured_content == {"sum": 42}
    assert "Reykjavik" in seen["weather"].content[0].text
    assert seen["add_bad"].is_error is True
    assert seen["prompts"] == ["code_review"]
    assert seen["prompt"].messages[0].content.text == "Please review this python:\nx = 1"
    readme = seen["resources"]["file:///project/README.md"].contents[0]
    assert readme.text.startswith("# Demo project")
    logo = seen["resources"]["file:///project/logo.png"].contents[0]
    assert logo.blob.startswith("iVBORw0KGgo") and logo.mime_type == "image/png"
    assert seen["templates"] == ["weather://forecast/{city}"]
    forecast = seen["template_read"].contents[0]
    assert json.loads(forecast.text) == {"city": "Reykjavik", "forecast": "sunny"}


def check_record(schema: Any, record: Path) -> None:
    """Every line the mock wrote is valid; the client began with server/discover and never initialize."""
    entries = [json.loads(ln) for ln in record.read_text().splitlines()]
    inbound = [json.loads(e["line"]) for e in entries if e["dir"] == "in" and e["line"].strip()]
    methods = {m["id"]: m["method"] for m in inbound if "id" in m and "method" in m}
    assert inbound[0]["method"] == "server/discover"
    assert "initialize" not in methods.values()
    assert {"tools/list", "tools/call", "prompts/get", "resources/read", "resources/templates/list"} <= set(methods.values())
    outbound = [e["line"].encode() for e in entries if e["dir"] == "out"]
    assert len(outbound) == len(methods)  # one response per request, nothing else
    for raw in outbound:
        msg = schema.check_line(raw)
        assert "result" in msg, msg
        schema.check(msg, methods[msg["id"]])


def test_sdk_client_under_asyncio(schema, tmp_path):
    record = tmp_path / "asyncio.jsonl"
    seen = anyio.run(exercise, record, backend="asyncio")
    check_results(seen)
    check_record(schema, record)


def test_sdk_client_under_trio(schema, tmp_path):
    record = tmp_path / "trio.jsonl"
    seen = anyio.run(exercise, record, backend="trio")
    check_results(seen)
    check_record(schema, record)
