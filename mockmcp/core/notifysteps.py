"""The steps of the model's ``notify`` part (``progress``, ``log``, ``emit``) as actions.

Imported by the step expander when a scenario's step of this part is first
expanded, so a scenario that uses none never imports it. Loops are unrolled
before a step gets here (``steps``). Sans-I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mockmcp.wire import protocol as p
from mockmcp.scenario import templates
from mockmcp.scenario.definitions import drop_none
from mockmcp.scenario.model.notify import EmitStep, LogStep, LoopStep, ProgressStep
from mockmcp.core.actions import Action, Emit
from mockmcp.core.context import Mode, RequestContext
from mockmcp.core.envelope import Envelope

if TYPE_CHECKING:
    from mockmcp.scenario.model.catalog import Step


class NotifySteps:
    """Progress and log notifications (sent only when the request asked for them) and emitted events."""

    __slots__ = ("envelope",)

    def __init__(self, envelope: Envelope) -> None:
        self.envelope = envelope

    def action(self, ctx: RequestContext, step: Step, mode: Mode) -> Action | None:
        env = self.envelope
        match step:
            case ProgressStep():
                token = ctx.meta.get(p.META_PROGRESS_TOKEN)
                if token is None:
                    return None
                pr = step.progress
                params = drop_none(
                    {
                        "progressToken": token,
                        "progress": ctx.number(pr.progress),
                        "total": ctx.number(pr.total),
                        "message": templates.render_text(pr.message, ctx.scope()),
                    }
                )
                return env.notification(p.PROGRESS, params)
            case LogStep():
                level = ctx.meta.get(p.META_LOG_LEVEL)
                lg = step.log
                if level is None or p.LOG_LEVEL_RANK[lg.level] < p.LOG_LEVEL_RANK[level]:
                    return None
                params = drop_none({"level": lg.level, "logger": templates.render_text(lg.logger, ctx.scope())})
                params["data"] = templates.render(lg.data, ctx.scope())
                return env.notification(p.MESSAGE, params)
            case EmitStep():
                uri = templates.render_text(step.emit.uri, ctx.scope())
                if mode is Mode.SUBSCRIPTION:
                    return Emit(step.emit.event, uri, ctx.id, has_only=True)
                return Emit(step.emit.event, uri)
            case LoopStep():  # pragma: no cover - the expander unrolls loops before this point
                raise AssertionError("loops are unrolled before this point")
        raise AssertionError(f"unhandled step {step!r}")  # pragma: no cover - the part's steps are all above
