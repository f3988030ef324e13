"""A Tasks extension for the official Python client: a reference to compare a Tasks client with.

**Needs the official Python SDK, ``mcp`` (written against 2.3.0), which is not a
dependency of mockmcp**: install it beside mockmcp (``pip install mcp``).
Importing ``mockmcp`` never imports this module or ``mcp``; importing this
module does.

``mcp`` 2.3.0 ships no Tasks extension for revision 2026-07-28 (its task types
are the 2025-11-25 ones), so a ``tools/call`` that answers with a task
(``resultType: "task"``) fails in a plain ``Client``. Its extension API lets a
client author add one, and ``Tasks`` is that extension, small enough to read
against the extension's text (``io.modelcontextprotocol/tasks``)::

    async with Client(server, extensions=[Tasks(answers={"approval": {"action": "accept"}})]) as client:
        result = await client.call_tool("deploy", {})   # a task, followed to its end

- it declares the extension, so a server may answer ``tools/call`` with a task;
- it polls ``tasks/get`` no sooner than the task's latest ``pollIntervalMs``
  (times ``time_scale``: give it the mock's ``--time-scale``);
- it answers an ``input_required`` task's input requests with ``tasks/update``,
  from ``answers`` (by key) or ``on_input``, each key once (the extension's keys
  are unique over a task's life);
- it sends ``tasks/cancel`` after ``cancel_after`` polls, if asked, and keeps
  polling until the task says it is cancelled;
- ``completed`` becomes the call's ``CallToolResult``; ``failed`` and
  ``cancelled`` raise ``TaskFailed``.

Over Streamable HTTP its ``tasks/*`` requests carry the task in the ``Mcp-Name``
header, as the extension asks. What mockmcp's own suite checks with it is in
tests/interop/test_interop_tasks.py; docs/api.md shows it in a test.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from pydantic import ConfigDict, Field

__all__ = ["EXTENSION", "InputAnswerer", "TaskFailed", "Tasks"]

EXTENSION = "io.modelcontextprotocol/tasks"
DEFAULT_POLL_MS = 1000  # a task that names no interval is polled once a second

InputAnswerer = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any] | None]]
"""``on_input(key, request)``: the response to one input request (``{"method": ..., "params": ...}``),
or ``None`` to leave it unanswered for now."""


class TaskHandle(types.Result):
    """A ``CreateTaskResult``: what a ``tools/call`` answers when the server makes a task."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str
    poll_interval_ms: int | None = Field(default=None, alias="pollIntervalMs")


class TaskState(types.Result):
    """A ``tasks/get`` result: the task's status and what goes with it (result, error, inputRequests)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    status: str
    poll_interval_ms: int | None = Field(default=None, alias="pollIntervalMs")


class Ack(types.Result):
    """The empty acknowledgement of ``tasks/update`` and ``tasks/cancel``."""

    model_config = ConfigDict(extra="allow")


class TaskIdParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


class UpdateParams(TaskIdParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses")


class GetTask(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param = "taskId"


class UpdateTask(types.Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateParams
    name_param = "taskId"


class CancelTask(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param = "taskId"


class TaskFailed(RuntimeError):
    """A task ended ``failed`` (``error`` is its JSON-RPC error) or ``cancelled`` (``error`` is ``None``)."""

    def __init__(self, task_id: str, status: str, error: dict[str, Any] | None) -> None:
        detail = f": {error.get('code')} {error.get('message')}" if error else ""
        super().__init__(f"task {task_id} {status}{detail}")
        self.task_id = task_id
        self.status = status
        self.error = error

    @property
    def code(self) -> int | None:
        """The JSON-RPC error code of a failed task (``None`` for a cancelled one)."""
        code = self.error.get("code") if self.error else None
        return code if isinstance(code, int) else None


class Tasks(ClientExtension):
    """The client side of the Tasks extension, for ``Client(extensions=[Tasks(...)])``.

    ``answers``: input responses by ``inputRequests`` key; ``on_input``: asked for a key
    ``answers`` lacks. ``cancel_after``: send ``tasks/cancel`` after that many polls.
    ``time_scale``: multiplies every wait (the mock's ``--time-scale``). ``max_polls``: give
    up (``TimeoutError``) after that many polls of one task; ``None`` polls until it ends.
    ``statuses`` and ``task_ids`` record every status polled and every task followed.
    """

    identifier = EXTENSION

    def __init__(
        self,
        answers: Mapping[str, dict[str, Any]] | None = None,
        *,
        on_input: InputAnswerer | None = None,
        cancel_after: int | None = None,
        time_scale: float = 1.0,
        max_polls: int | None = None,
    ) -> None:
        self.answers = dict(answers or {})
        self.on_input = on_input
        self.cancel_after = cancel_after
        self.time_scale = time_scale
        self.max_polls = max_polls
        self.statuses: list[str] = []
        self.task_ids: list[str] = []

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self.follow)]

    async def follow(self, handle: TaskHandle, ctx: ClaimContext) -> types.CallToolResult:
        """Poll the task ``handle`` names until it ends; its result, or ``TaskFailed``."""
        task_id = handle.task_id
        self.task_ids.append(task_id)
        timeout = ctx.read_timeout_seconds
        interval = handle.poll_interval_ms if handle.poll_interval_ms is not None else DEFAULT_POLL_MS
        answered: set[str] = set()
        polls = 0
        while True:
            await anyio.sleep(interval / 1000 * self.time_scale)
            state = await ctx.session.send_request(GetTask(params=TaskIdParams(taskId=task_id)), TaskState, timeout)
            polls += 1
            self.statuses.append(state.status)
            extra = state.model_extra or {}
            if state.poll_interval_ms is not None:
                interval = state.poll_interval_ms
            if state.status == "completed":
                return types.CallToolResult.model_validate(extra.get("result") or {})
            if state.status in ("failed", "cancelled"):
                error = extra.get("error")
                raise TaskFailed(task_id, state.status, error if isinstance(error, dict) else None)
            if state.status == "input_required":
                responses = await self._responses(extra.get("inputRequests"), answered)
                if responses:
                    update = UpdateTask(params=UpdateParams(taskId=task_id, inputResponses=responses))
                    await ctx.session.send_request(update, Ack, timeout)
                    answered.update(responses)
            if self.cancel_after is not None and polls == self.cancel_after:
                await ctx.session.send_request(CancelTask(params=TaskIdParams(taskId=task_id)), Ack, timeout)
            if self.max_polls is not None and polls >= self.max_polls:
                raise TimeoutError(f"task {task_id} still {state.status} after {polls} polls")

    async def _responses(self, requests: Any, answered: set[str]) -> dict[str, Any]:
        """The responses to the input requests not answered yet (those it has an answer for)."""
        responses: dict[str, Any] = {}
        if not isinstance(requests, dict):
            return responses
        for key, request in requests.items():
            if key in answered:
                continue
            if key in self.answers:
                responses[key] = self.answers[key]
            elif self.on_input is not None:
                answer = await self.on_input(key, request if isinstance(request, dict) else {})
                if answer is not None:
                    responses[key] = answer
        return responses
