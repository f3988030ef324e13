"""Step expansion: a rule's scripted steps, in a request's context, become a plan of actions.

One ``match`` over the step classes every scenario may use; a step of a part
of the model goes to that part's expander (``roundsteps``, ``notifysteps``,
``tasksteps``, ``faultsteps``), picked by the step's key and imported when
first needed. Loops are expanded lazily:
the first ``EAGER_BUDGET`` step evaluations are done at once (so a plan that
only sends is written without a task, and a template error in it is answered
as the request's error), the rest is handed to the shell as an iterator it
pulls while it runs the plan. That keeps one request's cost bounded: a
``loop`` of a billion never builds a billion actions, and the iterator yields
``None`` every ``EAGER_BUDGET`` evaluations that produced nothing, so the
shell stays responsive (signals, other requests). A client mistake met in the
lazy part ends the plan with its error response (see ``guarded``).
Sans-I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator, Protocol

from mockmcp.wire import errors
from mockmcp.scenario.model import base as model
from mockmcp.wire import protocol as p
from mockmcp.scenario import templates
from mockmcp.core.actions import Action, answered, Ask, Park, Plan, Send, Sleep
from mockmcp.core.context import Mode, RequestContext
from mockmcp.core.envelope import Envelope
from mockmcp.core.replies import ReplyCache
from mockmcp.core.rounds import Rounds
from mockmcp.core.selection import Random
from mockmcp.core.session import Session

if TYPE_CHECKING:
    from mockmcp.core.tasks import TaskTable
    from mockmcp.scenario.model.notify import LoopSpec
    from mockmcp.scenario.model.catalog import Step

EAGER_BUDGET = 256  # step evaluations done before a plan continues lazily
MAX_REPEAT = 100_000  # a template-given loop count cannot make a plan without end


# The part expander of each step a part of the model defines, by the step's key (``KEY``);
# ``tests/core/test_core_units.py`` holds it to the model's steps. (Loops never get there.)
PART_OF_KEY = {
    "inputRequired": "rounds",
    "progress": "notify", "log": "notify", "emit": "notify",
    "task": "tasks",
    **dict.fromkeys(
        (
            "setState", "endSubscription", "raw", "rawBytes", "hang", "exit", "dribble", "stderr", "stopReading",
            "closeStdout", "request", "huge", "http", "forward",
        ),
        "faults",
    ),
}


class PartSteps(Protocol):
    """What expands the steps of one part of the model."""

    def action(self, ctx: RequestContext, step: Step, mode: Mode) -> Action | None: ...


class StepExpander:
    __slots__ = ("envelope", "session", "rounds", "replies", "rng", "time_scale", "tasks", "_parts")

    def __init__(
        self,
        envelope: Envelope,
        session: Session,
        rounds: Rounds,
        replies: ReplyCache | None,
        rng: Random,
        time_scale: float,
        tasks: TaskTable | None = None,
    ) -> None:
        self.tasks = tasks  # where task steps create their tasks (the table renders outcomes with ``outcome``)
        self.envelope = envelope
        self.session = session
        self.rounds = rounds
        self.replies = replies  # None: compiled replies turned off (the differential tests)
        self.rng = rng
        self.time_scale = time_scale
        self._parts: dict[str, PartSteps] = {}  # part name -> its expander, made on first use

    def expand(self, ctx: RequestContext, steps: list[Step], rule: str | None, mode: Mode = Mode.REQUEST) -> Plan:
        """The plan for ``steps``; ``rule`` names the answering rule for the journal."""
        replies = self.replies
        if replies is not None and len(steps) == 1 and mode is Mode.REQUEST:
            send = replies.send(steps[0], ctx)
            if send is not None:
                return answered(ctx.id, send, ctx.method, rule)
        produced = self._actions(ctx, steps, mode)
        actions: list[Action] = []
        rest: Iterator[Action | None] | None = None
        for n, action in enumerate(produced):
            if action is not None:
                actions.append(action)
            if n >= EAGER_BUDGET or type(action) is Ask:
                # after a request to the client, the steps wait for its answer (they may use it)
                rest = guarded(produced, ctx.id, mode)
                break
        immediate = rest is None and all(type(a) is Send for a in actions)
        return Plan(ctx.id, actions, ctx.method, rule, immediate=immediate, rest=rest)

    # ------------------------------------------------------------ steps -> actions

    def _actions(self, ctx: RequestContext, steps: Iterable[Step], mode: Mode) -> Iterator[Action | None]:
        """Every action of the steps, ``None`` for a step evaluation that produced none."""
        for step in _unroll(ctx, steps):
            if step is None:
                yield None
                continue
            action = self._action(ctx, step, mode)
            yield action
            if action is not None and _ends(step):
                return
        match mode:
            case Mode.SUBSCRIPTION:
                yield Park()
            case Mode.NOTIFICATION:
                pass  # a notification's rule need not answer (raw steps may have lied already)
            case Mode.REQUEST:
                # The checker rejects replies without a final step; be loud if one slips through.
                yield self.envelope.error(ctx.id, p.INTERNAL_ERROR, "mockmcp: the scripted reply ended without an answer")

    def _action(self, ctx: RequestContext, step: Step, mode: Mode) -> Action | None:
        env = self.envelope
        scope = ctx.scope()
        match step:
            case model.ResultStep():
                if self.replies is not None and mode is Mode.REQUEST:
                    send = self.replies.send(step, ctx)
                    if send is not None:
                        return send
                return env.final(ctx.id, env.complete(ctx.method, templates.render(step.result, scope)))
            case model.TextStep():
                if self.replies is not None and mode is Mode.REQUEST:
                    send = self.replies.send(step, ctx)
                    if send is not None:
                        return send
                text = templates.to_text(templates.render(step.text, scope))
                return env.final(ctx.id, env.complete(ctx.method, env.text_result(ctx.method, ctx.uri, text)))
            case model.ErrorStep():
                e = step.error
                message = None if e.message is None else templates.to_text(templates.render(e.message, scope))
                data = errors.ABSENT if e.data is None else templates.render(e.data, scope)
                return env.error(ctx.id, e.code, message, data)
            case model.SleepStep(sleep=model.Duration() as d):
                return Sleep((d.seconds if d.template is None else _seconds(d, scope)) * self.time_scale)
            case model.SleepStep(sleep=r):  # a RandomDelay (model.notify)
                assert not isinstance(r, model.Duration)
                low, high = _seconds(r.min, scope), _seconds(r.max, scope)
                return Sleep(self.rng.uniform(min(low, high), max(low, high)) * self.time_scale)
            case _:
                # A step of a part of the model (``scenario/model/*.py``): a scenario
                # that uses no part imports none (see ``_part``).
                return self._part(step.KEY).action(ctx, step, mode)

    def _part(self, key: str) -> PartSteps:
        """The expander of the part of the model that defines the step ``key``, made when a
        step of that part is first met (its module imports the part, which the scenario
        holding the step has imported already)."""
        name = PART_OF_KEY[key]
        part = self._parts.get(name)
        if part is None:
            part = self._parts[name] = self._new_part(name)
        return part

    def _new_part(self, name: str) -> PartSteps:
        if name == "rounds":
            from mockmcp.core.roundsteps import RoundSteps

            return RoundSteps(self.rounds)
        if name == "notify":
            from mockmcp.core.notifysteps import NotifySteps

            return NotifySteps(self.envelope)
        if name == "tasks":
            from mockmcp.core.tasksteps import TaskSteps

            return TaskSteps(self.envelope, self.tasks, self._action)
        from mockmcp.core.faultsteps import FaultSteps

        return FaultSteps(self.envelope, self.session, self.time_scale, self.rounds.check_capabilities)

    def outcome(self, ctx: RequestContext, steps: list[Step]) -> dict[str, Any]:
        """How a task ended, from its ``outcome`` steps: ``{"result": ...}`` or ``{"error": ...}``.

        Built like the synchronous answer, so a task's result is exactly what
        the request would have returned; a template the stored request cannot
        render fails the task with -32602 (its request's mistake, found late).
        """
        try:
            send = self._action(ctx, steps[-1], Mode.REQUEST)
        except templates.TemplateError as exc:
            return {"error": {"code": p.INVALID_PARAMS, "message": f"Invalid params: cannot render the scripted outcome: {exc}"}}
        except errors.ClientError as exc:
            return {"error": errors.error_response(None, exc.code, exc.message, exc.data)["error"]}
        message = send.message if isinstance(send, Send) else {}
        if "error" in message:
            return {"error": message["error"]}
        return {"result": message.get("result", {"content": []})}


def _ends(step: Step) -> bool:
    """Steps after which nothing more of the list is run: the model's terminal steps and
    the end of a subscription stream (a class attribute: a tuple of those classes would
    need every part of the model imported by every process)."""
    return step.FINAL


def _unroll(ctx: RequestContext, steps: Iterable[Step]) -> Iterator[Step | None]:
    """The steps with every ``loop`` unrolled lazily; ``None`` marks a repetition of an empty body."""
    for step in steps:
        if step.KEY != "loop":  # (not ``type(step) is LoopStep``: that would import the loop's part)
            yield step
            continue
        loop: LoopSpec = step.loop  # type: ignore[union-attr]  # (a loop step: its KEY says so)
        times = ctx.number(loop.times)
        if type(times) is not int and not (type(times) is float and times.is_integer()):
            raise errors.InvalidParams(f"Invalid params: loop count {times!r} is not a whole number", request_id=ctx.id)
        outer = ctx.index
        for i in range(min(int(times), MAX_REPEAT)):
            ctx.set_index(i + 1)
            yield None  # one evaluation, so even an empty body counts against the budget
            yield from _unroll(ctx, loop.steps)
        ctx.set_index(outer)


def guarded(actions: Iterator[Action | None], request_id: Any, mode: Mode) -> Iterator[Action | None]:
    """The lazy rest of a plan: a client mistake met here ends the plan with its error response.

    The request has started answering (progress, logs), so the error cannot
    replace the plan any more: it becomes the plan's final message instead,
    built by the same builder as at the connection's boundary. A notification
    gets nothing, as there.
    """
    try:
        yield from actions
    except templates.TemplateError as exc:
        if mode is not Mode.NOTIFICATION:
            yield Envelope.error(request_id, p.INVALID_PARAMS, f"Invalid params: cannot render the scripted reply: {exc}")
    except errors.ClientError as exc:
        if mode is not Mode.NOTIFICATION:
            yield Envelope.error(request_id, exc.code, exc.message, exc.data)


# The longest sleep a template may render (a request's value decides it).
MAX_TEMPLATED_SECONDS = 3600.0


def _seconds(d: model.Duration, scope: dict[str, Any]) -> float:
    """A duration's seconds; a templated one rendered (``"{{ arguments.ms }}ms"`` -> 0.25), its
    text a duration with a unit, at most ``MAX_TEMPLATED_SECONDS`` (else TemplateError: -32602)."""
    if d.template is None:
        return d.seconds
    from mockmcp.scenario.scalars import parse_duration  # only scenarios with templated sleeps need it

    text = templates.to_text(templates.render(d.template, scope))
    try:
        seconds = parse_duration(text).seconds if "{{" not in text else -1.0
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= MAX_TEMPLATED_SECONDS:
        raise templates.TemplateError(
            f"the sleep {text[:40]!r} (from {d.template!r}) is not a duration like '250ms' or '1.5s' of at most {MAX_TEMPLATED_SECONDS:g} s"
        )
    return seconds


__all__ = ["EAGER_BUDGET", "MAX_REPEAT", "PART_OF_KEY", "Mode", "PartSteps", "StepExpander", "guarded"]
