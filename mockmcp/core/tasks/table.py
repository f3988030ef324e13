"""The task table: the Tasks extension on the engine's side, one session's tasks and their rules.

A ``task:`` step creates a task (``create``); ``tasks/get``, ``tasks/update`` and
``tasks/cancel`` find it brought up to date with its script (``find``), count polls, accept
input and honour a cancel as the scenario says; the control channel drives it (``drive``). The
parts are the table's own: each task's scripted life (``script``), the records held and what the
session store writes (``held``), the wire shapes (``shapes``) and the streams that watch tasks
(``watching``). Ids are unguessable (an HMAC of a serial under the shell's random key). A
request may use the extension only if its client declared it (``has_extension``).

Nothing here runs on its own: a task is brought up to date whenever someone looks at it, from
the clock value and its counters, in this process or (with a session directory) in the next.
Sans-I/O.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING, Any, Callable, Iterator

from mockmcp.wire import errors
from mockmcp.wire import protocol as p
from mockmcp.core.actions import Action, Send
from mockmcp.core.context import RequestContext
from mockmcp.core.envelope import Envelope
from mockmcp.core.tasks.records import TaskRecord, TaskRecords
from mockmcp.core.tasks.script import TaskScript
from mockmcp.core.tasks.shapes import TaskShapes
from mockmcp.core.tasks.watchers import TaskWatchers

if TYPE_CHECKING:
    from mockmcp.scenario.model.tasks import TaskSpec
    from mockmcp.core.tasks.records import Lookup
    from mockmcp.core.tasks.script import Clock, RenderOutcome
    from mockmcp.core.tasks.watchers import Live


REQUIRED_CAPABILITY: dict[str, Any] = {"extensions": {p.TASKS_EXTENSION: {}}}


def has_extension(meta: dict[str, Any]) -> bool:
    """Did this request declare the Tasks extension in its client capabilities?"""
    caps = meta.get(p.META_CLIENT_CAPABILITIES)
    if type(caps) is not dict:
        return False
    ext = caps.get("extensions")
    return type(ext) is dict and type(ext.get(p.TASKS_EXTENSION)) is dict


def missing_extension(request_id: Any, what: str) -> errors.MissingClientCapability:
    return errors.MissingClientCapability(
        f"Missing required client capability: {what} needs the {p.TASKS_EXTENSION} extension",
        data={"requiredCapabilities": REQUIRED_CAPABILITY},
        request_id=request_id,
    )


def _start() -> str:
    return "start"


def _creating_round(ctx: RequestContext) -> dict[str, Any] | None:
    """What the task keeps of the multi round-trip exchange that created it (its outcome and input
    requests render with it): None when a first round created it."""
    if ctx.round == 1 and not ctx.input_responses and ctx.missing_inputs is None:
        return None
    first: dict[str, Any] = {"round": ctx.round, "inputResponses": dict(ctx.input_responses)}
    if ctx.missing_inputs is not None:  # (the exchange carried requestState)
        first["missingInputs"] = list(ctx.missing_inputs)
        first["requestState"] = ctx.request_state
    return first


class TaskTable:
    """The tasks of one session, and the rules of the extension that need their state.

    ``state`` returns the session's named state (phases may wait for one); ``lookup`` and
    ``archived_ids`` are a session store's archive of ended tasks (none: the table lives as
    long as the process); ``render_outcome`` is the engine's step expander, which builds an
    outcome like any reply. ``changed`` is set on every change: the shell then wakes the
    streams that watch tasks.
    """

    def __init__(
        self,
        specs: list[TaskSpec],
        envelope: Envelope,
        clock: Clock,
        time_scale: float,
        key: bytes,
        *,
        state: Callable[[], str] = _start,
        lookup: Lookup | None = None,
        archived_ids: Callable[[], list[str]] | None = None,
        render_outcome: RenderOutcome | None = None,
    ) -> None:
        self.clock = clock
        self._key = hashlib.sha256(b"mockmcp task ids\0" + key).digest()
        self.serial = 0
        self.changed = False
        self.script = TaskScript(specs, clock, time_scale, state, render_outcome)
        self.shapes = TaskShapes(self.script, envelope)
        self.held = TaskRecords(lambda: len(self.script.specs), self.shapes.forget_text, lookup, archived_ids)
        self.watching = TaskWatchers(self.script, self.shapes, self.held.peek, self.current)

    # ------------------------------------------------------------ the parts' state, by its old names
    # (what the engine, the step expander and the session store read or set; assignable)

    @property
    def state(self) -> Callable[[], str]:
        return self.script.state

    @state.setter
    def state(self, state: Callable[[], str]) -> None:
        self.script.state = state

    @property
    def render_outcome(self) -> RenderOutcome | None:
        return self.script.render_outcome

    @render_outcome.setter
    def render_outcome(self, render: RenderOutcome | None) -> None:
        self.script.render_outcome = render

    @property
    def lookup(self) -> Lookup | None:
        return self.held.lookup

    @lookup.setter
    def lookup(self, lookup: Lookup | None) -> None:
        self.held.lookup = lookup

    @property
    def archived_ids(self) -> Callable[[], list[str]] | None:
        return self.held.archived_ids

    @archived_ids.setter
    def archived_ids(self, archived_ids: Callable[[], list[str]] | None) -> None:
        self.held.archived_ids = archived_ids

    @property
    def specs(self) -> list[TaskSpec]:
        return self.script.specs

    @property
    def records(self) -> dict[str, TaskRecord]:
        return self.held.records

    @property
    def raw(self) -> dict[str, str]:
        return self.held.raw

    @property
    def dirty(self) -> dict[str, None]:
        return self.held.dirty

    @property
    def forgotten(self) -> dict[str, None]:
        return self.held.forgotten

    @property
    def watchers(self) -> dict[str, dict[Any, tuple[Any, ...] | None]]:
        return self.watching.watchers

    # ------------------------------------------------------------ creating and finding

    def new_id(self) -> str:
        """An unguessable id (HMAC of a serial under the shell's random key), UUID-shaped."""
        self.serial += 1
        h = hmac.new(self._key, str(self.serial).encode(), hashlib.sha256).hexdigest()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"

    def create(self, ctx: RequestContext, spec: TaskSpec) -> TaskRecord:
        params = {k: v for k, v in ctx.params.items() if k in ("name", "arguments")}
        rec = TaskRecord(self.new_id(), self.script.index(spec), params, ctx.meta, self.clock(), _creating_round(ctx))
        self.script.enter(rec, spec)
        self.changed = True
        self.advance(rec)
        self.held.add(rec)
        return rec

    def get(self, task_id: str) -> TaskRecord | None:
        """The record of ``task_id``; ``CorruptRecord`` if the stored one does not fit."""
        return self.held.get(task_id)

    def peek(self, task_id: str) -> TaskRecord | None:
        """The record of ``task_id``, a corrupt one taken as absent."""
        return self.held.peek(task_id)

    def current(self, task_id: str) -> TaskRecord | None:
        """``peek``, brought up to date with its script (and saved if that moved it)."""
        rec = self.held.peek(task_id)
        if rec is not None and self.advance(rec):
            self.held.saved(rec)
        return rec

    def load(self, task_id: str, text: str) -> None:
        self.held.load(task_id, text)

    def take_dirty(self) -> list[TaskRecord]:
        return self.held.take_dirty()

    # ------------------------------------------------------------ the three methods

    def find(self, task_id: Any, request_id: Any) -> TaskRecord:
        """The task ``task_id`` brought up to date; -32602 when missing, unknown or expired."""
        if task_id is None:
            raise errors.InvalidParams("Invalid params: 'taskId' missing", request_id=request_id)
        if type(task_id) is not str:
            raise errors.InvalidParams("Invalid params: 'taskId' must be a string", request_id=request_id)
        rec = self.held.stored(task_id, request_id)
        if rec is None:
            raise errors.InvalidParams("Failed to retrieve task: Task not found", data={"taskId": task_id}, request_id=request_id)
        if self.script.expired(rec):
            raise errors.InvalidParams("Failed to retrieve task: Task has expired", data={"taskId": task_id}, request_id=request_id)
        if self.advance(rec):
            self.held.saved(rec)
        return rec

    def count_poll(self, rec: TaskRecord) -> None:
        """A ``tasks/get`` answered: the poll counts for the phase the task is in."""
        rec.polls += 1
        rec.total_polls += 1
        self.held.saved(rec)

    def after_poll(self, rec: TaskRecord) -> None:
        """A poll may end a ``polls:`` phase: the next look at the task sees the next phase."""
        if self.advance(rec):
            self.held.saved(rec)

    def update(self, task_id: Any, responses: Any, request_id: Any) -> TaskRecord:
        """``tasks/update``: accept answers to outstanding input requests, ignore the rest."""
        rec = self.find(task_id, request_id)
        if type(responses) is not dict:
            what = "missing" if responses is None else "must be an object"
            raise errors.InvalidParams(f"Invalid params: 'inputResponses' {what}", request_id=request_id)
        if rec.status != "input_required":
            raise errors.InvalidParams(
                f"Invalid params: task {task_id} is not waiting for input (status {rec.status})",
                data={"taskId": task_id, "status": rec.status},
                request_id=request_id,
            )
        if self.script.answer(rec, responses, request_id):
            self.changed = True
            self.advance(rec)
        self.held.saved(rec)
        return rec

    def cancel(self, task_id: Any, request_id: Any) -> TaskRecord:
        """``tasks/cancel``: acknowledged always; honoured if the scenario says so and not ended."""
        rec = self.find(task_id, request_id)
        if self.script.cancel(rec):
            self.changed = True
        self.held.saved(rec)
        return rec

    # ------------------------------------------------------------ moving a task on

    def advance(self, rec: TaskRecord) -> bool:
        """Bring ``rec`` up to date with the clock, its counters and the named state; changed?"""
        moved = self.script.advance(rec)
        if moved:
            self.changed = True
        return moved

    def drive(
        self,
        rec: TaskRecord,
        status: str,
        *,
        message: str | None,
        outcome: dict[str, Any] | None = None,
        input_requests: dict[str, Any] | None = None,
        poll_interval: int | None = None,
    ) -> None:
        """Put ``rec`` in ``status`` now (the control channel's ``setTask``; its caller checked the
        extension's rules: payload by status, no way out of a terminal status unless forced).

        From then on the script no longer moves the task (``advance`` leaves it alone); the
        client's ``tasks/update`` answers the given ``input_requests`` (all answered: ``working``
        again) and ``tasks/cancel`` is honoured or not as the scenario says."""
        self.script.drive(rec, status, message=message, outcome=outcome, input_requests=input_requests, poll_interval=poll_interval)
        self.changed = True
        self.held.saved(rec)

    # ------------------------------------------------------------ the parts' operations, by their old names

    def spec_of(self, rec: TaskRecord) -> TaskSpec:
        return self.script.spec_of(rec)

    def created_result(self, rec: TaskRecord) -> dict[str, Any]:
        return self.shapes.created_result(rec)

    def get_result_text(self, rec: TaskRecord) -> str:
        return self.shapes.result_text(rec)

    def detailed(self, rec: TaskRecord) -> dict[str, Any]:
        return self.shapes.detailed(rec)

    def watch(self, subscription_id: Any, task_ids: list[str]) -> None:
        self.watching.watch(subscription_id, task_ids)

    def unwatch(self, subscription_id: Any) -> None:
        self.watching.unwatch(subscription_id)

    def notifications(self, rec: TaskRecord, live: Live) -> list[Send]:
        return self.watching.notifications(rec, live)

    def notify_watchers(self, live: Live, subscription_id: Any = None) -> list[Send]:
        return self.watching.notify(live, subscription_id)

    def stream(self, subscription_id: Any, task_ids: list[str], live: Live) -> Iterator[Action | None]:
        return self.watching.stream(subscription_id, task_ids, live)
