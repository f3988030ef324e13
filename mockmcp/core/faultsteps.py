"""The steps of the model's ``faults`` part as actions: state changes, the end of a
subscription, raw bytes, hangs, exits, dribbles, stderr, stopped reading, a closed
stdout, HTTP faults, the legacy server's own requests, huge results and forwards.

Imported by the step expander when a scenario's step of this part is first
expanded, so a scenario that uses none never imports it. Sans-I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.wire import protocol as p
from mockmcp.scenario import templates
from mockmcp.scenario.model import base as model
from mockmcp.scenario.model.faults import (
    CloseStdoutStep, DribbleStep, EndSubscriptionStep, ExitStep, ForwardStep, HangStep, HttpStep, HugeStep, RawBytesStep,
    RawStep, RequestStep, SetStateStep, StderrStep, StopReadingStep,
)
from mockmcp.core import serverrequests
from mockmcp.core.actions import Action, CloseStdout, Dribble, Exit, Forward, HttpFault, Park, StopReading, Stderr, WriteRaw
from mockmcp.core.context import Mode, RequestContext
from mockmcp.core.envelope import Envelope
from mockmcp.core.session import Session

if TYPE_CHECKING:
    from mockmcp.scenario.model.catalog import Step


class FaultSteps:
    """One ``match`` over the faults part's step classes; times scaled by ``time_scale``."""

    __slots__ = ("envelope", "session", "time_scale", "check_capabilities")

    def __init__(self, envelope: Envelope, session: Session, time_scale: float, check_capabilities: bool) -> None:
        self.envelope = envelope
        self.session = session
        self.time_scale = time_scale
        self.check_capabilities = check_capabilities  # request steps are gated on the client's capabilities

    def action(self, ctx: RequestContext, step: Step, mode: Mode) -> Action | None:
        env = self.envelope
        match step:
            case SetStateStep():
                self.session.set_state(step.setState)
                ctx.set_state(step.setState)
                return None
            case EndSubscriptionStep():
                if step.endSubscription.how == "cancelled":
                    params = {"requestId": ctx.id, "reason": "subscription ended by the server"}
                    return env.notification(p.CANCELLED, params, final=True)
                return env.listen_closed(ctx.id)
            case RawStep():
                return WriteRaw(jsonrpc.encode(templates.render(step.raw, ctx.scope())))
            case RawBytesStep():
                text = templates.to_text(templates.render(step.rawBytes, ctx.scope()))
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
                return Stderr(templates.to_text(templates.render(step.stderr, ctx.scope())), step.repeat)
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
                    None if f.retry is None else f.retry.seconds * self.time_scale,
                )
            case RequestStep():
                return serverrequests.ask(
                    self.session.legacy, ctx, step.request, time_scale=self.time_scale, check_capabilities=self.check_capabilities,
                    unmatched=self.session.unmatched,
                )
            case HugeStep():
                h = step.huge
                text = h.char * max(0, h.bytes // max(1, len(h.char.encode())))
                return env.final(ctx.id, env.complete(ctx.method, env.text_result(ctx.method, ctx.uri, text)))
            case ForwardStep():
                return Forward(step.forward)
        raise AssertionError(f"unhandled step {step!r}")  # pragma: no cover - the part's steps are all above
