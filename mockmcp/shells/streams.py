"""Timed plans run from one timer heap instead of a task each.

Most plans with time in them are a list of sends, emits and sleeps: a tool that
sleeps and then answers, a progress loop (the ``cancel`` scenario's
``long_running``), a listen stream's timers and timeline. Run as a trio task
each, a plan costs a task and a cancel scope per sleep, and each event its own
trip through the writer's channel: 10,000 listen streams took 2.4 to 5 s to
accept, and a bound on such tasks made the reader wait for a free one, so past
it a client's cancellations, responses and EOF went unread. ``TimedPlans``
keeps every such plan in one heap of deadlines; one task wakes at the
earliest, advances every plan that is due up to its next sleep, and hands the
writer one batch. A sleeping plan costs its plan and a heap entry, no task,
and the reader never waits for it.

A plan's lazy rest (a long loop) is pulled as the plan advances; an action in
it the heap does not perform (a dribble, raw bytes, an exit, a request to the
client...) hands the plan to a task at that action (``handoff``, after the
round's batch is written, so its output keeps its place). Plans of other shapes
start as tasks.

Fairness, as a task per plan has it from trio: a round advances each due plan
by at most ``STEPS_PER_ROUND`` actions and ends once its batch holds
``BATCH_BYTES`` or it advanced ``PLANS_PER_ROUND`` plans; the batch then goes
to the writer (where a client that does not read pushes back) and the task
yields, so the reader runs between rounds. A sleep already due (zero, or
``--time-scale 0``) and a lazy checkpoint (``None``) wait for the next round,
as trio's checkpoint would make them.

After the input ends (``cut_after``), a plan that holds up exit whose next
wake-up is past the grace deadline cannot finish in time: it is dropped at
once instead of at the deadline (it would have written nothing before it).

The task path stays the reference: ``tests/shells/test_streams.py`` (listen streams)
and ``tests/shells/test_inflight.py`` (request plans) run generated scenarios through
both (``Shell(timed_streams=False)``) on trio's mock clock and compare every
line and its time.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Any, Callable, Iterator, Protocol

import trio

from mockmcp.core.actions import Action, Emit, Park, Plan, Send, Sleep

STEPS_PER_ROUND = 64  # actions one plan performs in a round before the others (and the reader) get a turn
PLANS_PER_ROUND = 4096  # plans advanced in one round at most
BATCH_BYTES = 256 * 1024  # a round's output handed to the writer at once at most


class Owner(Protocol):
    """The shell's bookkeeping of a plan (its id; whether it holds up exit at EOF)."""

    rid: Any
    counted: bool


def eligible(plan: Plan, first: int) -> bool:
    """Can this plan's eager actions from ``first`` on run from the heap (sends, emits, sleeps, a last park)?

    Its lazy rest is not known yet: whatever in it the heap does not perform is handed to a task."""
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


class _Timed:
    __slots__ = ("plan", "pos", "owner", "alive")

    def __init__(self, plan: Plan, pos: int, owner: Owner) -> None:
        self.plan = plan
        self.pos = pos  # the next eager action to perform (past the last: the lazy rest)
        self.owner = owner
        self.alive = True


class TimedPlans:
    """The heap of timed plans, and the one task (``run``) that advances them.

    ``fan_out`` turns an ``Emit`` into the messages for the open subscriptions,
    ``emitted`` tells observers about each message written; the shell is told
    of each plan that leaves the heap: ``parked`` (it reached its park; the
    shell keeps it as it keeps any parked request), ``ended`` (its actions ran
    out, or it was dropped after EOF), ``handoff`` (an action the heap does not
    perform: a task goes on from it, with the plan's remaining actions). A plan the client cancels leaves through
    ``cancel``.
    """

    def __init__(
        self,
        send: Callable[[bytes], Any],
        fan_out: Callable[[Emit], list[Send]],
        emitted: Callable[[Send], None],
        parked: Callable[[Plan, Any], None],
        ended: Callable[[Any], None],
        handoff: Callable[[Plan, Iterator[Action | None], Any], None],
    ) -> None:
        self._send = send  # async: queue bytes on the writer
        self._fan_out = fan_out
        self._emitted = emitted
        self._parked = parked
        self._ended = ended
        self._handoff = handoff
        self._heap: list[tuple[float, int, _Timed]] = []
        self._order = itertools.count()  # ties keep the order plans were added in
        self._plans: dict[Any, _Timed] = {}
        self._wake = trio.Event()
        self._cut = math.inf  # after EOF: the grace deadline

    def __contains__(self, request_id: Any) -> bool:
        return request_id in self._plans

    def __len__(self) -> int:
        return len(self._plans)

    def add(self, plan: Plan, first: int, owner: Owner) -> None:
        """Take over ``plan`` from action ``first`` on (its leading sends were written by the reader)."""
        timed = _Timed(plan, first, owner)
        self._plans[plan.request_id] = timed
        self._push(trio.current_time(), timed)

    def cancel(self, request_id: Any) -> Any:
        """Stop a plan (the client cancelled it): its owner, ``None`` if it is not one of ours."""
        timed = self._plans.pop(request_id, None)
        if timed is None:
            return None
        timed.alive = False  # its heap entry is skipped when it comes up
        return timed.owner

    def cut_after(self, deadline: float) -> None:
        """The input ended: plans that hold up exit and sleep past ``deadline`` are dropped now, and later ones
        when a sleep would take them past it."""
        self._cut = deadline
        for at, _, timed in self._heap:
            if at > deadline and timed.alive and timed.owner.counted:
                self._leave(timed)
                self._ended(timed.owner)

    def drain(self) -> list[Any]:
        """Stop every plan (the input ended and the grace is over); their owners."""
        owners = [timed.owner for timed in self._plans.values()]
        for timed in self._plans.values():
            timed.alive = False
        self._plans.clear()
        self._heap.clear()
        return owners

    def _push(self, at: float, timed: _Timed) -> None:
        heap = self._heap
        if not heap or at < heap[0][0]:
            self._wake.set()  # the task sleeps until a later deadline: recompute
        heapq.heappush(heap, (at, next(self._order), timed))

    def _leave(self, timed: _Timed) -> None:
        timed.alive = False
        del self._plans[timed.plan.request_id]

    async def run(self) -> None:
        heap = self._heap
        while True:
            if heap and heap[0][0] <= trio.current_time():
                await self._round()
                continue
            wake = self._wake = trio.Event()
            if heap:
                with trio.move_on_at(heap[0][0]):
                    await wake.wait()
            else:
                await wake.wait()

    async def _round(self) -> None:
        heap = self._heap
        now = trio.current_time()
        out: list[bytes] = []
        later: list[_Timed] = []  # due again at once: after this round
        handed: list[tuple[_Timed, Action]] = []
        size = 0
        advanced = 0
        while heap and heap[0][0] <= now and size < BATCH_BYTES and advanced < PLANS_PER_ROUND:
            timed = heapq.heappop(heap)[2]
            if timed.alive:
                size += self._advance(timed, now, out, later, handed)
                advanced += 1
        for timed in later:  # (nothing could cancel them yet: the reader has not run since)
            self._push(now, timed)
        if out:
            await self._send(b"".join(out))
        else:
            await trio.lowlevel.checkpoint()
        for timed, action in handed:
            if timed.alive:  # (not cancelled while the batch was queued)
                self._leave(timed)
                plan = timed.plan
                remaining = itertools.chain((action,), itertools.islice(plan.actions, timed.pos, None), plan.rest or ())
                self._handoff(plan, remaining, timed.owner)

    def _advance(self, timed: _Timed, now: float, out: list[bytes], later: list[_Timed],
                 handed: list[tuple[_Timed, Action]]) -> int:
        """Perform the plan's actions up to its next sleep (then back on the heap), park, end or handoff.

        Returns the bytes it added to ``out``."""
        plan = timed.plan
        actions: list[Action] = plan.actions
        rest = plan.rest
        pos = timed.pos
        size = 0
        for _ in range(STEPS_PER_ROUND):
            action: Action | None
            if pos < len(actions):
                action = actions[pos]
                pos += 1
            elif rest is not None:
                action = next(rest, _END)
                if action is _END:
                    break
            else:
                break
            match action:
                case None:  # a lazy loop's checkpoint: work was done, nothing to write
                    timed.pos = pos
                    later.append(timed)
                    return size
                case Send():
                    self._emitted(action)
                    out.append(action.data)
                    size += len(action.data)
                case Emit():
                    for send in self._fan_out(action):
                        self._emitted(send)
                        out.append(send.data)
                        size += len(send.data)
                case Sleep():
                    timed.pos = pos
                    at = now + action.seconds
                    if at <= now:
                        later.append(timed)
                    elif at > self._cut and timed.owner.counted:
                        self._leave(timed)
                        self._ended(timed.owner)
                    else:
                        self._push(at, timed)
                    return size
                case Park():
                    self._leave(timed)
                    self._parked(plan, timed.owner)
                    return size
                case _:
                    timed.pos = pos
                    handed.append((timed, action))  # (it stays ours, cancellable, until then)
                    return size
        else:
            timed.pos = pos  # its turn is over; the others' (and the reader's) now
            later.append(timed)
            return size
        self._leave(timed)
        self._ended(timed.owner)
        return size


_END: Any = object()  # the lazy rest ran out


__all__ = ["BATCH_BYTES", "Owner", "PLANS_PER_ROUND", "STEPS_PER_ROUND", "TimedPlans", "eligible"]
