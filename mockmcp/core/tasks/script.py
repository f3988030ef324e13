"""Each task's scripted life: its phases, brought up to date from the clock, counters and state.

A ``task:`` step answers ``tools/call`` with a handle; the task then walks its ``phases``
(``working``, ``input_required``) and ends with its ``outcome`` (``completed`` or ``failed``).
What moves a task on is what the scenario says: time (``after``, measured on the clock the
shell hands in, scaled by ``--time-scale``), polls (``tasks/get`` answered in the phase), the
scenario's named state, or every input request answered by ``tasks/update``. Nothing runs on
its own: ``advance`` brings a record up to date whenever someone looks at it, so a task nobody
polls for an hour is exactly where the script says when it is next polled. A task the control
channel drove (``drive``) is no longer moved by its script. Sans-I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.wire import mrtr
from mockmcp.wire import protocol as p
from mockmcp.scenario import templates
from mockmcp.core.context import RequestContext
from mockmcp.core.tasks.records import TERMINAL, TaskRecord

if TYPE_CHECKING:  # (the aliases for annotations only: a spawn does not pay for building them)
    from mockmcp.scenario.model.catalog import Step
    from mockmcp.scenario.model.tasks import TaskPhase, TaskSpec

    Clock = Callable[[], float]  # seconds (wall time in the shell: tasks outlive processes)
    RenderOutcome = Callable[[RequestContext, list[Step]], dict[str, Any]]  # the step expander's outcome


class TaskScript:
    """The scripts of a session's tasks (``specs``, by index) and how each record follows its own.

    ``state`` returns the session's named state; ``render_outcome`` (the engine's step
    expander) builds an outcome like any reply (without one, every task completes empty)."""

    def __init__(
        self,
        specs: list[TaskSpec],
        clock: Clock,
        time_scale: float,
        state: Callable[[], str],
        render_outcome: RenderOutcome | None = None,
    ) -> None:
        self.specs = specs
        self._index = {id(s): i for i, s in enumerate(specs)}
        self.clock = clock
        self.time_scale = time_scale
        self.state = state
        self.render_outcome = render_outcome

    def index(self, spec: TaskSpec) -> int:
        """The index of ``spec``; a tool added while the mock runs (the control channel) adds its own."""
        index = self._index.get(id(spec))
        if index is None:
            index = self._index[id(spec)] = len(self.specs)
            self.specs.append(spec)
        return index

    def spec_of(self, rec: TaskRecord) -> TaskSpec:
        return self.specs[rec.spec]

    def enter(self, rec: TaskRecord, spec: TaskSpec) -> None:
        """Take the status and message of the phase the record is now in."""
        if rec.phase < len(spec.phases):
            phase = spec.phases[rec.phase]
            rec.status = phase.status
            rec.message = phase.statusMessage if phase.statusMessage is not None else spec.statusMessage
            if phase.status == "input_required" and spec.faults is not None and spec.faults.reuseInputKey:
                for key in self.input_keys(rec, phase):  # the fault: a key answered before is asked again
                    rec.answers.pop(key, None)
        rec.version += 1

    def _phase_end(self, rec: TaskRecord, phase: TaskPhase, now: float) -> float | None:
        """When the current phase ended (``None``: it has not)."""
        if phase.status == "input_required":
            keys = self.input_keys(rec, phase)
            return now if all(k in rec.answers for k in keys) else None
        if phase.after is not None:
            end = rec.phase_start + phase.after.seconds * self.time_scale
            return end if now >= end else None
        if phase.polls is not None:
            return now if rec.polls >= phase.polls else None
        if phase.state is not None:
            wanted = [phase.state] if isinstance(phase.state, str) else phase.state
            return now if self.state() in wanted else None
        return None  # works until cancelled

    def advance(self, rec: TaskRecord) -> bool:
        """Bring ``rec`` up to date with the clock, its counters and the named state; changed?"""
        if rec.status in TERMINAL or rec.driven is not None:
            return False
        spec = self.spec_of(rec)
        now = self.clock()
        before = rec.version
        while rec.status not in TERMINAL:
            if rec.phase >= len(spec.phases):
                self._finish(rec, spec, max(rec.phase_start, rec.updated))
                break
            end = self._phase_end(rec, spec.phases[rec.phase], now)
            if end is None:
                break
            rec.phase += 1
            rec.phase_start = rec.updated = end
            rec.polls = 0
            self.enter(rec, spec)
        return rec.version != before

    def _finish(self, rec: TaskRecord, spec: TaskSpec, at: float) -> None:
        outcome = self.rendered_outcome(rec, spec.outcome) if spec.outcome else None
        rec.outcome = outcome if outcome is not None else {"result": {"content": []}}
        rec.status = "failed" if "error" in rec.outcome else "completed"
        rec.updated = at
        rec.message = spec.statusMessage if rec.message is None else rec.message
        if rec.message is None and rec.status == "failed":
            # A failed task SHOULD say what went wrong: the JSON-RPC error's own message, unless the
            # scenario gave one.
            error = rec.outcome["error"]
            rec.message = error.get("message") if type(error) is dict and type(error.get("message")) is str else None
        rec.version += 1

    def rendered_outcome(self, rec: TaskRecord, steps: list[Step]) -> dict[str, Any] | None:
        """The outcome ``steps`` make for ``rec`` (``None``: no expander to render them)."""
        return None if self.render_outcome is None else self.render_outcome(self.context(rec), steps)

    def next_deadline(self, rec: TaskRecord) -> float | None:
        """The clock value at which time alone moves ``rec`` on (``None``: time alone never does).

        Expiry is not such a moment: nothing is announced when a task expires."""
        spec = self.spec_of(rec)
        if rec.status in TERMINAL or rec.driven is not None or rec.phase >= len(spec.phases):
            return None
        after = spec.phases[rec.phase].after
        return None if after is None else rec.phase_start + after.seconds * self.time_scale

    def expires(self, rec: TaskRecord, spec: TaskSpec) -> float:
        assert spec.ttlMs is not None
        return rec.created + spec.ttlMs / 1000 * self.time_scale

    def expired(self, rec: TaskRecord) -> bool:
        """Has the task's ``ttlMs`` passed (it is then unknown to every request)?"""
        spec = self.spec_of(rec)
        return spec.ttlMs is not None and self.clock() >= self.expires(rec, spec)

    def input_keys(self, rec: TaskRecord, phase: TaskPhase) -> list[str]:
        keys = list(phase.inputRequests or {})
        faults = self.spec_of(rec).faults
        if faults is not None and faults.reuseInputKey and keys:
            first = _first_input_key(self.spec_of(rec))
            if first is not None:
                keys = [f"{first}" if i == 0 else k for i, k in enumerate(keys)]
        return keys

    def outstanding(self, rec: TaskRecord) -> dict[str, Any]:
        """The input requests of an ``input_required`` task not answered yet, rendered."""
        if rec.driven is not None:
            asked = rec.driven["inputRequests"] if rec.status == "input_required" else {}
            return {k: v for k, v in asked.items() if k not in rec.answers}
        spec = self.spec_of(rec)
        if rec.status != "input_required" or rec.phase >= len(spec.phases):
            return {}
        phase = spec.phases[rec.phase]
        requests = templates.render(phase.inputRequests or {}, self.context(rec).scope())
        keys = self.input_keys(rec, phase)
        faulty = dict(zip(keys, requests.values()))
        reuse = spec.faults is not None and spec.faults.reuseInputKey
        return {k: v for k, v in faulty.items() if reuse or k not in rec.answers}

    def answer(self, rec: TaskRecord, responses: dict[str, Any], request_id: Any) -> bool:
        """Take the answers among ``responses`` to ``rec``'s outstanding input requests (the rest
        is ignored, as the extension says); any taken? -32602 for an answer of the wrong shape."""
        outstanding = self.outstanding(rec)
        for key, value in responses.items():
            req = outstanding.get(key)
            if req is None:
                continue
            kind = req.get("method") if type(req) is dict else None
            problem = mrtr.check_response(kind, value) if type(kind) is str else None
            if problem is None and type(value) is not dict:
                problem = "it must be an object"
            if problem:
                raise errors.InvalidParams(
                    f"Invalid params: inputResponses[{key!r}] is not a valid answer to {kind}: {problem}",
                    request_id=request_id,
                )
        accepted = {k: v for k, v in responses.items() if k in outstanding}
        if not accepted:
            return False
        rec.answers.update(accepted)
        rec.updated = self.clock()
        rec.version += 1
        if rec.driven is not None and not self.outstanding(rec):
            rec.status = "working"  # a driven task asked for input and has it all: it works on
        return True

    def cancel(self, rec: TaskRecord) -> bool:
        """The client asked to cancel ``rec``: honoured (cancelled now) if the scenario says so and
        the task has not ended; honoured?"""
        rec.cancel_asked = True
        if rec.status in TERMINAL or self.spec_of(rec).cancel != "honour":
            return False
        rec.status = "cancelled"
        rec.message = "cancelled at the client's request"
        rec.updated = self.clock()
        rec.version += 1
        return True

    def context(self, rec: TaskRecord) -> RequestContext:
        """The original request's context again, with the answers so far (templates read both):
        those of the multi round-trip exchange that created the task, then the task's own (a key
        both used is the task's answer, the later one)."""
        req = jsonrpc.Request(None, p.TOOLS_CALL, rec.params, {})
        ctx = RequestContext(req, rec.meta, self.state())
        first = rec.creating_round
        if first is not None:
            ctx.set_rounds(
                first["round"], {**first["inputResponses"], **rec.answers},
                missing=first.get("missingInputs"), request_state=first.get("requestState"),
            )
        elif rec.answers:
            ctx.set_rounds(1, rec.answers)
        return ctx

    def drive(
        self,
        rec: TaskRecord,
        status: str,
        *,
        message: str | None,
        outcome: dict[str, Any] | None,
        input_requests: dict[str, Any] | None,
        poll_interval: int | None,
    ) -> None:
        """Put ``rec`` in ``status`` now; from then on its script no longer moves it."""
        driven = rec.driven if rec.driven is not None else {"inputRequests": {}, "pollIntervalMs": None}
        if input_requests is not None:
            driven["inputRequests"] = input_requests
        if poll_interval is not None:
            driven["pollIntervalMs"] = poll_interval
        rec.driven = driven
        rec.status = status
        rec.message = message
        rec.outcome = outcome if status in ("completed", "failed") else None
        rec.updated = self.clock()
        rec.version += 1


def _first_input_key(spec: TaskSpec) -> str | None:
    for phase in spec.phases:
        for key in phase.inputRequests or {}:
            return key
    return None
