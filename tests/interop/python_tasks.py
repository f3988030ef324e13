"""Drives the bundled ``tasks`` scenario with mcp 2.3.0 and mockmcp's public Tasks extension.

The extension is ``mockmcp.mcp_tasks.Tasks`` (the one users get); this module
only calls every tool of the scenario through it, one client per tool, and
once more without it (the SDK's own behaviour), so that
tests/interop/test_interop_tasks.py can run it under asyncio and trio in one
interpreter.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types

from mockmcp.mcp_tasks import TaskFailed, Tasks


async def drive(command: list[str], time_scale: float = 1.0) -> dict[str, Any]:
    """Call every tool of the bundled ``tasks`` scenario through the extension; what each gave."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.shared.exceptions import MCPError

    out: dict[str, Any] = {}
    params = StdioServerParameters(command=command[0], args=command[1:])
    calls = [
        ("build", {"target": "py"}, Tasks(time_scale=time_scale)),
        ("approve", {"change": "v9"}, Tasks({"approval": {"action": "accept", "content": {"approved": True}}}, time_scale=time_scale)),
        ("doomed", {}, Tasks(time_scale=time_scale)),
        ("forever", {}, Tasks(cancel_after=2, time_scale=time_scale)),
        ("quick", {}, Tasks(time_scale=time_scale)),
        ("deploy", {}, Tasks(time_scale=time_scale)),
    ]
    for tool, arguments, ext in calls:
        async with Client(params, extensions=[ext]) as client:
            try:
                result = await client.call_tool(tool, arguments)
                out[tool] = {"ok": [c.text for c in result.content if isinstance(c, types.TextContent)], "statuses": ext.statuses}
            except TaskFailed as exc:
                out[tool] = {"task": exc.status, "error": exc.error, "statuses": ext.statuses}
    async with Client(params) as client:  # no extension: the SDK's own behaviour
        out["quick/plain"] = [c.text for c in (await client.call_tool("quick", {})).content if isinstance(c, types.TextContent)]
        try:
            await client.call_tool("build", {})
            out["build/plain"] = "ok"
        except MCPError as exc:  # the SDK raises MCPError(-32021) here
            out["build/plain"] = exc.code
    return out


if __name__ == "__main__":
    import json

    print(json.dumps(anyio.run(drive, [sys.executable, "-m", "mockmcp", "run", "tasks", *sys.argv[1:]])))
