"""Multi round-trip requests, on the engine's side: reading a retry, asking for input.

A request that may answer ``input_required`` (``tools/call``, ``prompts/get``,
``resources/read``) is read here first: its ``inputResponses`` and
``requestState`` give the round and the answers (``mrtr.StateCodec`` checks
the state's integrity). When a retry leaves an asked input unanswered, the
spec's SHOULD is to ask again for what is missing, which ``reask`` does.
Asking the client for something it declared no capability for is the
client's problem to know about: ``MissingClientCapability`` (-32021) is raised.
Sans-I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockmcp.wire import errors
from mockmcp.wire import mrtr
from mockmcp.wire import protocol as p
from mockmcp.scenario import templates
from mockmcp.core.actions import Plan, Send, answered
from mockmcp.core.context import Reask, RequestContext
from mockmcp.core.envelope import Envelope

if TYPE_CHECKING:
    from mockmcp.scenario.model.rounds import InputRequiredSpec


class Rounds:
    __slots__ = ("envelope", "codec", "check_capabilities")

    def __init__(self, envelope: Envelope, codec: mrtr.StateCodec, *, check_capabilities: bool) -> None:
        self.envelope = envelope
        self.codec = codec
        self.check_capabilities = check_capabilities

    def read(self, ctx: RequestContext) -> None:
        """Set the context's round and answers from a retry's ``inputResponses`` and ``requestState``."""
        params = ctx.params
        responses = params.get("inputResponses")
        state = params.get("requestState")
        if responses is None and state is None:
            return  # a first round: the context's defaults (round 1, no answers) hold
        if responses is not None and type(responses) is not dict:
            raise errors.InvalidParams("Invalid params: inputResponses must be an object", request_id=ctx.id)
        responses = responses or {}
        if state is None:
            ctx.set_rounds(2 if responses else 1, responses)
            return
        if type(state) is not str:
            raise errors.InvalidParams("Invalid params: requestState must be a string", request_id=ctx.id)
        try:
            decoded = self.codec.verify(state)
        except mrtr.StateError as exc:
            raise errors.InvalidParams(f"Invalid params: requestState rejected: {exc}", request_id=ctx.id) from None
        if decoded.origin != mrtr.origin(ctx.method, ctx.scope()):
            raise errors.InvalidParams(
                "Invalid params: requestState was issued for a different request "
                f"({decoded.describe_origin()}), not this {ctx.method} with these arguments",
                request_id=ctx.id,
            )
        for key, kind in decoded.asked.items():
            if key in responses:
                problem = mrtr.check_response(kind, responses[key])
                if problem:
                    raise errors.InvalidParams(
                        f"Invalid params: inputResponses[{key!r}] is not a valid answer to {kind}: {problem}",
                        request_id=ctx.id,
                    )
        missing = [k for k in decoded.asked if k not in responses]
        # Answers given in earlier retries of this round (when one was missing) count too.
        merged = {**decoded.answers, **{k: responses[k] for k in decoded.asked if k in responses}}
        reask = None
        if missing:
            unanswered = {k: decoded.requests[k] for k in missing if k in decoded.requests}
            reask = Reask(decoded.round, decoded.user, unanswered, merged)
        ctx.set_rounds(
            decoded.round if missing else decoded.round + 1,
            {**responses, **merged},
            missing=missing,
            request_state=decoded.user,
            reask=reask,
        )

    def ask_step(self, ctx: RequestContext, spec: InputRequiredSpec) -> Send:
        """The answer of an ``inputRequired:`` step."""
        scope = ctx.scope()
        requests = templates.render(spec.inputRequests, scope)
        user = templates.render(spec.requestState, scope) if isinstance(spec.requestState, str) else None
        return self.ask(ctx, requests, spec.requestState is not False, user, ctx.round, None)

    def reask(self, ctx: RequestContext, reask: Reask) -> Plan:
        send = self.ask(ctx, reask.requests, True, reask.user_state, reask.round, reask.answers)
        return answered(ctx.id, send, ctx.method, "mockmcp: ask again for missing inputResponses")

    def ask(
        self,
        ctx: RequestContext,
        requests: dict[str, Any],
        with_state: bool,
        user: Any,
        round: int,
        answers: dict[str, Any] | None,
    ) -> Send:
        """An input_required result; -32021 raised if the client cannot answer it."""
        if self.check_capabilities:
            missing = mrtr.missing_capabilities(requests, ctx.meta.get(p.META_CLIENT_CAPABILITIES) or {})
            if missing:
                raise errors.MissingClientCapability(
                    "Missing required client capability: this request needs "
                    + ", ".join(mrtr.describe_capabilities(missing)),
                    data={"requiredCapabilities": missing},
                    request_id=ctx.id,
                )
        body: dict[str, Any] = {}
        if requests:
            body["inputRequests"] = requests
        if with_state:
            asked = {k: v["method"] for k, v in requests.items() if isinstance(v, dict) and isinstance(v.get("method"), str)}
            body["requestState"] = self.codec.issue(mrtr.origin(ctx.method, ctx.scope()), round, asked, user, requests, answers)
        return self.envelope.final(ctx.id, self.envelope.input_required(body))
