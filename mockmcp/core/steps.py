"""Step expansion: a rule's scripted steps, in a request's context, become a plan of actions.

One ``match`` over the step classes of the model. Loops are expanded lazily:
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

import enum
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.scenario.model import base as model
from mockmcp.wire import protocol as p
from mockmcp.core import tasks as task_rules
from mockmcp.scenario import templates
from mockmcp.core import serverrequests
from mockmcp.core.actions import Action, answered, Ask, CloseStdout, Dribble, Emit, Exit, Forward, HttpFault, Park, Plan, Send, Sleep, Stderr, StopReading, WriteRaw
from mockmcp.core.context import RequestContext
from mockmcp.scenario.definitions import drop_none
from mockmcp.core.envelope import Envelope
from mockmcp.core.replies import ReplyCache
from mockmcp.core.rounds import Rounds
from mockmcp.core.selection import Random
from mockmcp.core.session import Session

if TYPE_CHECKING:
    from mockmcp.scenario.model.notify import LoopSpec
    from mockmcp.scenario.model.catalog import Step
    from mockmcp.scenario.model.tasks import TaskSpec

EAGER_BUDGET = 256  # step evaluations done before a plan continues lazily
MAX_REPEAT = 100_000  # a template-given loop count cannot make a plan without end


class Mode(enum.Enum):
    """What the steps answer: a request, a subscription stream, or a notification (no id)."""

    REQUEST = "request"
    SUBSCRIPTION = "subscription"
    NOTIFICATION = "notification"


class StepExpander:
    __slots__ = ("envelope", "session", "rounds", "replies", "rng", "time_scale", "tasks")

    def __init__(
        self,
        envelope: Envelope,
        session: Session,
        rounds: Rounds,
        replies: ReplyCache | None,
        rng: Random,
        time_scale: float,
        tasks: task_rules.TaskTable | None = None,
    ) -> None:
        self.tasks = tasks
        if tasks is not None:
            tasks.render_outcome = self.outcome
        self.envelope = envelope
        self.session = session
        self.rounds = rounds
        self.replies = replies  # None: compiled replies turned off (the differential tests)
        self.rng = rng
        self.time_scale = time_scale

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
            case model.SleepStep(sleep=r):  # a RandomDelay (model_notify)
                assert not isinstance(r, model.Duration)
                low, high = _seconds(r.min, scope), _seconds(r.max, scope)
                return Sleep(self.rng.uniform(min(low, high), max(low, high)) * self.time_scale)
            case _:
                # A step of a part of the model (``model_*.py``): a scenario that
                # uses no part imports none (see ``_part_action``).
                return self._part_action(ctx, step, mode)

    def _part_action(self, ctx: RequestContext, step: Step, mode: Mode) -> Action | None:
        """The action of a step whose class is in a part of the model, by that part (its
        module's name: comparing it needs no part imported, and each method below imports
        only its own part, which the scenario holding the step has imported already)."""
        part = type(step).__module__.rpartition(".")[2]
        if part == "rounds":
            return self._rounds_action(ctx, step, mode)
        if part == "notify":
            return self._notify_action(ctx, step, mode)
        if part == "tasks":
            return self._tasks_action(ctx, step, mode)
        if part == "faults":
            return self._faults_action(ctx, step, mode)
        raise AssertionError(f"unhandled step {step!r}")  # pragma: no cover - the model's steps are all above

    def _rounds_action(self, ctx: RequestContext, step: Step, mode: Mode) -> Action | None:
        from mockmcp.scenario.model.rounds import InputRequiredStep

        match step:
            case InputRequiredStep():
                return self.rounds.ask_step(ctx, step.inputRequired)
        raise AssertionError(f"unhandled step {step!r}")  # pragma: no cover - the part's steps are all above

    def _notify_action(self, ctx: RequestContext, step: Step, mode: Mode) -> Action | None:
        from mockmcp.scenario.model.notify import EmitStep, LogStep, LoopStep, ProgressStep

        env = self.envelope
        scope = ctx.scope()
        match step:
            case ProgressStep():
                token = ctx.meta.get(p.META_PROGRESS_TOKEN)
                if token is None:
                    return None
                pr = step.progress
                params = drop_none(
                    {
                        "progressToken": token,
                        "progress": _number(ctx, pr.progress),
                        "total": _number(ctx, pr.total),
                        "message": templates.render(pr.message, scope),
                    }
                )
                return env.notification(p.PROGRESS, params)
            case LogStep():
                level = ctx.meta.get(p.META_LOG_LEVEL)
                lg = step.log
                if level is None or p.LOG_LEVEL_RANK[lg.level] < p.LOG_LEVEL_RANK[level]:
                    return None
                params = drop_none({"level": lg.level, "logger": lg.logger})
                params["data"] = templates.render(lg.data, scope)
                return env.notification(p.MESSAGE, params)
            case EmitStep():
                uri = templates.render(step.emit.uri, scope)
                if mode is Mode.SUBSCRIPTION:
                    return Emit(step.emit.event, uri, ctx.id, has_only=True)
                return Emit(step.emit.event, uri)
            case LoopStep():  # pragma: no cover - _unroll never yields a loop
                raise AssertionError("loops are unrolled before this point")
        raise AssertionError(f"unhandled step {step!r}")  # pragma: no cover - the part's steps are all above

    def _tasks_action(self, ctx: RequestContext, step: Step, mode: Mode) -> Action | None:
        from mockmcp.scenario.model.tasks import TaskStep

        match step:
            case TaskStep():
                return self._task(ctx, step.task, mode)
        raise AssertionError(f"unhandled step {step!r}")  # pragma: no cover - the part's steps are all above

    def _faults_action(self, ctx: RequestContext, step: Step, mode: Mode) -> Action | None:
        from mockmcp.scenario.model.faults import (
            CloseStdoutStep, DribbleStep, EndSubscriptionStep, ExitStep, ForwardStep, HangStep, HttpStep, HugeStep, RawBytesStep,
            RawStep, RequestStep, SetStateStep, StderrStep, StopReadingStep,
        )

        env = self.envelope
        scope = ctx.scope()
        match step:
            case SetStateStep():
                self.session.set_state(step.setState)
                ctx.set_state(step.setState)
                return None
            case EndSubscriptionStep():
                if step.endSubscription.how == "cancelled":
                    params = {"requestId": ctx.id, "reason": "subscription ended by the server"}
                    return env.notification(p.CANCELLED, params, final=True)
                return env.final(ctx.id, env.complete(ctx.method, {"_meta": {p.META_SUBSCRIPTION_ID: ctx.id}}))
            case RawStep():
                return WriteRaw(jsonrpc.encode(templates.render(step.raw, scope)))
            case RawBytesStep():
                text = templates.to_text(templates.render(step.rawBytes, scope))
                try:
                    return WriteRaw(text.encode("latin-1"))
                except UnicodeEncodeError:  # only a request value can bring such a character in
                    raise errors.InvalidParams(
                        "Invalid params: a rawBytes step renders one byte per character (latin-1); "
                        "the request gave a character outside it",
                        request_id=ctx.id,
                    ) from None
            case HangStep():
                return Park()
            case ExitStep():
                partial = b""
                if step.exit.partialBytes is not None:
                    result = env.complete(ctx.method, env.text_result(ctx.method, ctx.uri, ""))
                    partial = jsonrpc.encode(jsonrpc.result_response(ctx.id, result))[: step.exit.partialBytes]
                return Exit(step.exit.status, partial)
            case DribbleStep():
                return Dribble(max(1, step.dribble.chunkBytes), step.dribble.pause.seconds * self.time_scale)
            case StderrStep():
                return Stderr(templates.to_text(templates.render(step.stderr, scope)), step.repeat)
            case StopReadingStep(stopReading=model.Duration() as pause):
                return StopReading(pause.seconds * self.time_scale)
            case StopReadingStep():
                return StopReading(None)  # "forever"
            case CloseStdoutStep():
                return CloseStdout()
            case HttpStep():
                f = step.http
                return HttpFault(
                    f.status, f.body.encode("utf-8"), tuple(f.headers.items()), f.contentType,
                    0.0 if f.delay is None else f.delay.seconds * self.time_scale, f.respondAs,
                    None if f.write is None else f.write.encode("latin-1"), f.endStream, f.reset,
                )
            case RequestStep():
                return serverrequests.ask(
                    self.session.legacy, ctx, step.request, time_scale=self.time_scale, check_capabilities=self.rounds.check_capabilities,
                    unmatched=self.session.unmatched,
                )
            case HugeStep():
                h = step.huge
                text = h.char * max(0, h.bytes // max(1, len(h.char.encode())))
                return env.final(ctx.id, env.complete(ctx.method, env.text_result(ctx.method, ctx.uri, text)))
            case ForwardStep():
                return Forward(step.forward)
        raise AssertionError(f"unhandled step {step!r}")  # pragma: no cover - the part's steps are all above

    def _task(self, ctx: RequestContext, spec: TaskSpec, mode: Mode) -> Action | None:
        """A ``task:`` step: the ``CreateTaskResult``, or what a client without the extension gets."""
        faults = spec.faults
        if not task_rules.has_extension(ctx.meta) and not (faults is not None and faults.ignoreCapability):
            if spec.withoutCapability == "answer":
                if not spec.outcome:
                    return self.envelope.final(ctx.id, self.envelope.complete(ctx.method, {"content": []}))
                return self._action(ctx, spec.outcome[-1], mode)
            raise task_rules.missing_extension(ctx.id, f"{ctx.method} of {ctx.name!r} (it answers with a task)")
        assert self.tasks is not None  # the engine always hands a table in
        rec = self.tasks.create(ctx, spec)
        return self.envelope.final(ctx.id, self.tasks.created_result(rec))

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
        times = _number(ctx, loop.times)
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


def _number(ctx: RequestContext, value: Any) -> Any:
    """A number written as such or as a template; a request value that is no number -> -32602."""
    if type(value) is not str:
        return value
    rendered = templates.render(value, ctx.scope())
    if type(rendered) in (int, float):
        return rendered
    try:
        return templates.to_number(rendered)
    except (templates.TemplateError, ValueError):
        raise errors.InvalidParams(f"Invalid params: {rendered!r} is not a number (from {value!r})", request_id=ctx.id) from None


__all__ = ["EAGER_BUDGET", "MAX_REPEAT", "Mode", "StepExpander", "guarded"]
