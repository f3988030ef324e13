"""What a running plan waits on outside itself, kept once for both shells (stdio and HTTP).

Two plan actions wait for something another request brings: an ``Ask`` (a
legacy-era request to the client) for the client's response, which arrives
as its own message (a stdin line, or a POST of its own over HTTP) and is
routed here by id; and ``WaitTasks`` (a listen stream that watches tasks) for
any request that changed tasks. The shells differ in how bytes reach the
client, so they hand in a ``write``; what is waited on, for how long, what is
written when nobody answers and what the core is told are the same here.
"""

from __future__ import annotations

import json
import math
from typing import Any, Awaitable, Callable

import trio

from mockmcp.core.actions import Answer, Ask, WaitTasks
from mockmcp.shells.log import StderrLog

Write = Callable[[Any, bytes], Awaitable[None]]  # (message, its bytes) -> on the plan's way to the client


class _Waiting:
    """A request to the client waiting for its answer."""

    __slots__ = ("event", "message")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.message: Any = None


class Asks:
    """The server's requests to the client, by id, until answered or timed out."""

    def __init__(self, log: StderrLog) -> None:
        self.log = log
        self.waiting: dict[Any, _Waiting] = {}

    def answer(self, answer: Answer) -> bool:
        """Route the client's response to the request waiting for it (``False``: none is, or it was answered)."""
        waiting = self.waiting.get(answer.id)
        if waiting is None or waiting.message is not None:
            return False
        waiting.message = answer.message
        waiting.event.set()
        return True

    async def ask(self, ask: Ask, write: Write, write_cancel: Write | None = None) -> None:
        """Send the request, wait for its answer (or the timeout, then cancel it), hand it to the core.

        The core is told exactly once, even when the plan is cancelled while waiting
        (then with ``None``: it forgets its request)."""
        waiting = self.waiting[ask.id] = _Waiting()
        delivered = False
        try:
            await write(ask.message, ask.data)
            with trio.move_on_after(ask.timeout):
                await waiting.event.wait()
            self.waiting.pop(ask.id, None)
            if waiting.message is None:
                self.log("info", f"the client did not answer request {ask.id!r} within {ask.timeout:g} s; cancelling it")
                await (write_cancel or write)(json.loads(ask.cancel), ask.cancel)
            delivered = True
            ask.deliver(waiting.message)
        finally:
            self.waiting.pop(ask.id, None)
            if not delivered:
                ask.deliver(None)


class TaskWake:
    """Wakes the listen streams that watch tasks after a request changed tasks."""

    def __init__(self) -> None:
        self._changed = trio.Event()

    def after_input(self, engine: Any) -> None:
        """Called by a shell after it handed the core input: wake the waits if tasks changed."""
        if engine.take_task_changes():
            self._changed.set()
            self._changed = trio.Event()

    async def wait(self, action: WaitTasks) -> None:
        changed = self._changed
        with trio.move_on_after(math.inf if action.seconds is None else action.seconds):
            await changed.wait()


__all__ = ["Asks", "TaskWake"]
