"""Subscription streams run from one timer heap instead of a task each.

A ``subscriptions/listen`` stream with timers is a short, scenario-bounded list
of sends, emits and sleeps that ends parked (or with the stream's end). Run as
a trio task per stream, each costs a task and a cancel scope per sleep, and
each event its own trip through the writer's channel: 10,000 streams took 2.4
to 5 s to accept. ``TimedStreams`` keeps every such stream in one heap of
deadlines; one task wakes at the earliest, advances every stream that is due up
to its next sleep, and hands the writer one batch. Streams of any other shape
(dribbles, faults, exits, stopReading) keep their task.

The task path stays the reference: ``tests/test_streams.py`` runs generated
scenarios through both (``Shell(timed_streams=False)``) on trio's mock clock
and compares every line and its time.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Any, Callable

import trio

from .actions import Action, Emit, Park, Plan, Send, Sleep


def eligible(plan: Plan, first: int) -> bool:
    """Can this plan's actions from ``first`` on run from the heap (only sends, emits, sleeps, a last park)?"""
    if plan.rest is not None or plan.method != "subscriptions/listen":
        return False
    actions = plan.actions
    last = len(actions) - 1
    for n in range(first, len(actions)):
        kind = type(actions[n])
        if kind is Park:
            if n != last:
                return False
        elif kind is not Sleep and kind is not Emit and kind is not Send:
            return False
    return True


class _Stream:
    __slots__ = ("plan", "pos", "alive")

    def __init__(self, plan: Plan, pos: int) -> None:
        self.plan = plan
        self.pos = pos  # the next action to perform
        self.alive = True


class TimedStreams:
    """The heap of eligible streams, and the one task (``run``) that advances them.

    ``fan_out`` turns an ``Emit`` into the messages for the open subscriptions,
    ``emitted`` tells observers about each message written, ``parked`` is called
    with the plan of a stream that reached its park (the shell keeps it as it
    keeps any parked request), ``ended`` with the id of a stream whose actions
    ran out (the stream's end was sent).
    """

    def __init__(
        self,
        send: Callable[[bytes], Any],
        fan_out: Callable[[Emit], list[Send]],
        emitted: Callable[[Send], None],
        parked: Callable[[Plan], None],
        ended: Callable[[Any], None],
    ) -> None:
        self._send = send  # async: queue bytes on the writer
        self._fan_out = fan_out
        self._emitted = emitted
        self._parked = parked
        self._ended = ended
        self._heap: list[tuple[float, int, _Stream]] = []
        self._order = itertools.count()  # ties keep the order streams were added in
        self._streams: dict[Any, _Stream] = {}
        self._wake = trio.Event()

    def __contains__(self, request_id: Any) -> bool:
        return request_id in self._streams

    def add(self, plan: Plan, first: int) -> None:
        """Take over ``plan`` from action ``first`` on (its leading sends were written by the reader)."""
        stream = _Stream(plan, first)
        self._streams[plan.request_id] = stream
        self._push(trio.current_time(), stream)

    def cancel(self, request_id: Any) -> bool:
        """Stop a stream (the client cancelled it); ``False`` if it is not one of ours."""
        stream = self._streams.pop(request_id, None)
        if stream is None:
            return False
        stream.alive = False  # its heap entry is skipped when it comes up
        return True

    def drain(self) -> list[Any]:
        """Stop every stream (the input ended); their ids, for the engine to forget."""
        ids = list(self._streams)
        for stream in self._streams.values():
            stream.alive = False
        self._streams.clear()
        self._heap.clear()
        return ids

    def _push(self, at: float, stream: _Stream) -> None:
        heap = self._heap
        if not heap or at < heap[0][0]:
            self._wake.set()  # the task sleeps until a later deadline: recompute
        heapq.heappush(heap, (at, next(self._order), stream))

    async def run(self) -> None:
        heap = self._heap
        while True:
            if heap and heap[0][0] <= trio.current_time():
                await self._advance_due()
                continue
            wake = self._wake = trio.Event()
            if heap:
                with trio.move_on_at(heap[0][0]):
                    await wake.wait()
            else:
                await wake.wait()

    async def _advance_due(self) -> None:
        heap = self._heap
        now = trio.current_time()
        out: list[bytes] = []
        while heap and heap[0][0] <= now:
            stream = heapq.heappop(heap)[2]
            if stream.alive:
                self._advance(stream, now, out)
        if out:
            await self._send(b"".join(out))
        else:
            await trio.lowlevel.checkpoint()

    def _advance(self, stream: _Stream, now: float, out: list[bytes]) -> None:
        """Perform the stream's actions up to its next sleep (then back on the heap), park or end."""
        plan = stream.plan
        actions: list[Action] = plan.actions
        for n in range(stream.pos, len(actions)):
            action = actions[n]
            match action:
                case Send():
                    self._emitted(action)
                    out.append(action.data)
                case Emit():
                    for send in self._fan_out(action):
                        self._emitted(send)
                        out.append(send.data)
                case Sleep():
                    stream.pos = n + 1
                    self._push(now + action.seconds, stream)
                    return
                case Park():
                    del self._streams[plan.request_id]
                    self._parked(plan)
                    return
        del self._streams[plan.request_id]
        self._ended(plan.request_id)


__all__ = ["TimedStreams", "eligible"]
