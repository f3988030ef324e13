"""A client-side Tasks extension written on the Python SDK's extension API (mcp 2.3.0).

mcp 2.3.0 ships no Tasks extension for 2026-07-28 (its task types are the
2025-11-25 ones), but ``Client(extensions=[...])`` takes a ``ClientExtension``
whose ``ResultClaim`` resolves a ``resultType: "task"`` answer of
``tools/call``. This is the smallest such extension a client author would
write: it polls ``tasks/get`` at the task's interval, answers input requests
from a table with ``tasks/update``, cancels after a number of polls if asked,
and turns the terminal status into the call's result (or an error). The
interop tests drive the bundled ``tasks`` scenario with it; docs/interop.md
records what the SDK itself does without it.
"""

from __future__ import annotations

import sys
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from pydantic import ConfigDict, Field

EXTENSION = "io.modelcontextprotocol/tasks"


class TaskHandle(types.Result):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str
    poll_interval_ms: int | None = Field(default=None, alias="pollIntervalMs")


class TaskIdParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


class UpdateParams(TaskIdParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses")


class GetTask(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams


class UpdateTask(types.Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateParams


class CancelTask(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams


class TaskState(types.Result):
    model_config = ConfigDict(extra="allow")
    status: str


class Ack(types.Result):
    model_config = ConfigDict(extra="allow")


class TaskFailed(RuntimeError):
    def __init__(self, status: str, error: Any) -> None:
        super().__init__(f"task {status}: {error}")
        self.status = status
        self.error = error


class Tasks(ClientExtension):
    identifier = EXTENSION

    def __init__(self, answers: dict[str, Any] | None = None, cancel_after: int | None = None) -> None:
        self.answers = answers or {}
        self.cancel_after = cancel_after
        self.statuses: list[str] = []  # every status polled, over all calls

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self.resolve)]

    async def resolve(self, handle: TaskHandle, ctx: ClaimContext) -> types.CallToolResult:
        answered: set[str] = set()
        polls = 0
        interval = (handle.poll_interval_ms or 100) / 1000
        while True:
            state = await ctx.session.send_request(GetTask(params=TaskIdParams(taskId=handle.task_id)), TaskState)
            polls += 1
            self.statuses.append(state.status)
            extra = state.model_extra or {}
            interval = extra.get("pollIntervalMs", interval * 1000) / 1000
            if state.status == "completed":
                return types.CallToolResult.model_validate(extra["result"])
            if state.status in ("failed", "cancelled"):
                raise TaskFailed(state.status, extra.get("error"))
            if state.status == "input_required":
                fresh = {k: self.answers[k] for k in extra.get("inputRequests", {}) if k in self.answers and k not in answered}
                if fresh:
                    await ctx.session.send_request(
                        UpdateTask(params=UpdateParams(taskId=handle.task_id, inputResponses=fresh)), Ack
                    )
                    answered |= set(fresh)
            if self.cancel_after is not None and polls >= self.cancel_after:
                await ctx.session.send_request(CancelTask(params=TaskIdParams(taskId=handle.task_id)), Ack)
            await anyio.sleep(interval)


async def drive(command: list[str], backend_note: str = "") -> dict[str, Any]:
    """Call every tool of the bundled ``tasks`` scenario through the extension; what each gave."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    out: dict[str, Any] = {}
    params = StdioServerParameters(command=command[0], args=command[1:])
    calls = [
        ("build", {"target": "py"}, Tasks()),
        ("approve", {"change": "v9"}, Tasks(answers={"approval": {"action": "accept", "content": {"approved": True}}})),
        ("doomed", {}, Tasks()),
        ("forever", {}, Tasks(cancel_after=2)),
        ("quick", {}, Tasks()),
        ("deploy", {}, Tasks()),
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
        except Exception as exc:  # the SDK raises MCPError(-32021) here
            out["build/plain"] = getattr(exc, "code", type(exc).__name__)
    return out


if __name__ == "__main__":
    import json

    print(json.dumps(anyio.run(drive, [sys.executable, "-m", "mockmcp", "run", "tasks", *sys.argv[1:]])))
