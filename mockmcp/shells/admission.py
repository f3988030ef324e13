"""The bound on timed plans in flight, and the work the end of stdin waits for.

The reader never waits for a timed plan (see ``stdio``): what bounds memory is an
admission bound instead. Timed plans in flight (on the timer heap or in a task;
parked ones do not count) hold at most ``max_tasks`` places and ``max_bytes`` of
estimated memory (``cost``: what the plan holds, a task if it needs one); a request
whose plan would pass either is answered at once with -32603 "too many requests in
flight" (``Admission.refusal``) and does nothing of its script.

A plan that holds a place is also work the EOF grace waits for (``Busy``), as are,
in ``mockmcp proxy``, the answers the real server still owes; the grace ends early
once none is left.
"""

from __future__ import annotations

from typing import Any

import trio

from mockmcp.core.actions import Dribble, Plan, Send, WriteRaw
from mockmcp.shells.log import StderrLog
from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.wire import protocol as p

MAX_TASKS = 65_536  # timed plans in flight at once (on the timer heap or in a task; parked ones do not count)
MAX_BYTES = 48 * 1024 * 1024  # and their estimated memory (cost) at most; past either, a request is refused
# The estimate of what a timed plan holds while it runs (cost), set a little above what tracemalloc
# counts for plans of the bundled and benchmark scenarios (a sleep and an answer: 0.6 KB and the
# shell's entry; cancel's long_running: 10 KB, 67 KB with a progress token):
PLAN_BYTES = 1536  # the plan, its request context, the session's and the shell's entries
ACTION_BYTES = 96  # each eager action
SEND_BYTES = 256  # and a send or raw write more, plus its bytes twice (a message is often kept decoded too)
REST_BYTES = 4096  # a lazy rest (a loop's generators and the context it renders in)
TASK_BYTES = 4096  # a trio task and its cancel scope


class PlanRun:
    """The state of one timed plan: its id, its place in the bound, park and dribble settings."""

    __slots__ = ("rid", "counted", "held", "cost", "parked", "dribble")

    def __init__(self, rid: Any, *, counted: bool) -> None:
        self.rid = rid
        self.counted = counted  # holds a place (and up exit at EOF) while it has scripted work
        self.held = False  # it holds its place now (given back when it parks or ends)
        self.cost = 0  # its estimated memory while it holds its place
        self.parked = False
        self.dribble: Dribble | None = None


def counted(plan: Plan) -> bool:
    """Does this plan count as scripted work (a place in the bound on plans in flight, and EOF grace)?

    Subscription streams do not: they live until the client or the input's end
    closes them (like hangs), and what they send is bounded by the scenario, so
    they neither hold up exit at EOF nor take a place in the bound.
    """
    return plan.method != "subscriptions/listen"


def cost(plan: Plan, *, task: bool) -> int:
    """The estimated memory a timed plan holds while it runs (bytes; see ``PLAN_BYTES`` and the rest)."""
    actions = plan.actions
    total = PLAN_BYTES + ACTION_BYTES * len(actions)
    for action in actions:
        if isinstance(action, (Send, WriteRaw)):
            total += SEND_BYTES + 2 * len(action.data)
    if plan.rest is not None:
        total += REST_BYTES
    if task:
        total += TASK_BYTES
    return total


class Busy:
    """Work the end of stdin waits for (at most the grace): plans with scripted work left (not
    parked), and the proxy's forwarded requests the real server has not answered."""

    def __init__(self) -> None:
        self.count = 0
        self._idle = trio.Event()

    def add(self) -> None:
        self.count += 1

    def done(self) -> None:
        self.count -= 1
        if self.count == 0:
            self._idle.set()
            self._idle = trio.Event()

    async def wait_idle(self) -> None:
        """Return once no work is left (cancel it to give up waiting)."""
        while self.count:
            await self._idle.wait()


class Admission:
    """Places of timed plans in flight and their estimated memory: admitting, giving back, refusing."""

    def __init__(self, busy: Busy, log: StderrLog, *, max_tasks: int = MAX_TASKS, max_bytes: int = MAX_BYTES) -> None:
        self.busy = busy
        self.log = log
        self.max_tasks = max_tasks
        self.max_bytes = max_bytes
        self.in_flight = 0
        self.load = 0
        self._refusing = False  # refusals since the last admitted plan were logged

    def admit(self, run: PlanRun, cost: int) -> bool:
        """Give ``run`` a place holding ``cost`` bytes if the bound allows it (the first plan always)."""
        if self.in_flight and (self.in_flight >= self.max_tasks or self.load + cost > self.max_bytes):
            return False
        run.held = True
        run.cost = cost
        self.in_flight += 1
        self.load += cost
        self.busy.add()
        self._refusing = False
        return True

    def add_task(self, run: PlanRun) -> None:
        """The plan goes on in a task of its own (the timer heap handed it over): it holds one more."""
        if run.held:
            run.cost += TASK_BYTES
            self.load += TASK_BYTES

    def release(self, run: PlanRun) -> None:
        """The plan parked, ended or was cancelled: its place is free (once)."""
        if run.held:
            run.held = False
            self.in_flight -= 1
            self.load -= run.cost
            self.busy.done()

    def refusal(self, plan: Plan) -> Send | None:
        """The answer to a request whose plan would pass the bound (``None`` for a notification's rule:
        nothing to answer); the first refusal since a plan was admitted is logged."""
        why = (f"too many requests in flight ({self.in_flight:,} scripted replies running, about "
               f"{self.load / 2**20:.0f} MiB)")
        if not self._refusing:
            self._refusing = True
            self.log("warning", f"{why}: refusing new ones until some end")
        if not plan.has_id:
            return None
        msg = errors.error_response(plan.request_id, p.INTERNAL_ERROR,
                                    f"mockmcp: {why}; try again when some are answered")
        return Send(msg, jsonrpc.encode(msg), True)


__all__ = ["ACTION_BYTES", "Admission", "Busy", "MAX_BYTES", "MAX_TASKS", "PLAN_BYTES", "PlanRun", "REST_BYTES",
           "SEND_BYTES", "TASK_BYTES", "cost", "counted"]
