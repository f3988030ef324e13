"""The steps of the model's ``tasks`` part (``task``) as actions.

Imported by the step expander when a scenario's step of this part is first
expanded, so a scenario that uses none never imports it. Sans-I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from mockmcp.scenario.model.tasks import TaskSpec, TaskStep
from mockmcp.core import tasks as task_rules
from mockmcp.core.actions import Action
from mockmcp.core.context import Mode, RequestContext
from mockmcp.core.envelope import Envelope

if TYPE_CHECKING:
    from mockmcp.scenario.model.catalog import Step

StepAction = Callable[[RequestContext, "Step", Mode], "Action | None"]


class TaskSteps:
    """``task``: the ``CreateTaskResult`` of a new task, or what a client without the extension gets.

    ``answer`` is the expander's own step -> action (a client without the
    extension may be answered with the task's last outcome step at once).
    """

    __slots__ = ("envelope", "tasks", "answer")

    def __init__(self, envelope: Envelope, tasks: task_rules.TaskTable | None, answer: StepAction) -> None:
        self.envelope = envelope
        self.tasks = tasks
        self.answer = answer

    def action(self, ctx: RequestContext, step: Step, mode: Mode) -> Action | None:
        match step:
            case TaskStep():
                return self._task(ctx, step.task, mode)
        raise AssertionError(f"unhandled step {step!r}")  # pragma: no cover - the part's steps are all above

    def _task(self, ctx: RequestContext, spec: TaskSpec, mode: Mode) -> Action | None:
        faults = spec.faults
        if not task_rules.has_extension(ctx.meta) and not (faults is not None and faults.ignoreCapability):
            if spec.withoutCapability == "answer":
                if not spec.outcome:
                    return self.envelope.final(ctx.id, self.envelope.complete(ctx.method, {"content": []}))
                return self.answer(ctx, spec.outcome[-1], mode)
            raise task_rules.missing_extension(ctx.id, f"{ctx.method} of {ctx.name!r} (it answers with a task)")
        assert self.tasks is not None  # the engine always hands a table in
        rec = self.tasks.create(ctx, spec)
        return self.envelope.final(ctx.id, self.tasks.created_result(rec))
