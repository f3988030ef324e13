"""The legacy era's server-side session: requests to the client, log level, subscriptions.

A 2025-11-25 server may send the client requests (``sampling/createMessage``,
``elicitation/create``, ``roots/list``, ``ping``) on the same pipe, with ids of its
own, and uses their answers. A ``request`` step becomes an ``Ask`` action: the shell
writes it, waits for the client's response (the engine routes it by id as an
``Answer``), and hands it back to ``deliver``, which puts it in the request's
template scope (``responses``) before the later steps are expanded; a step's ``expect``
(a cassette's recorded answer) is compared with it, a difference noted with the near miss. A request is
sent only for a capability the client declared in ``initialize`` (else the reply
ends with -32600 naming it, unless ``protocol.checkCapabilities: false``).

This module also keeps what the handshake era remembers per connection: the
client's capabilities, the level ``logging/setLevel`` set and the URIs
``resources/subscribe`` named. Sans-I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.scenario import matching
from mockmcp.wire import protocol as p
from mockmcp.scenario import templates
from mockmcp.core.actions import Ask
from mockmcp.core.context import RequestContext

if TYPE_CHECKING:
    from mockmcp.scenario.model.faults import RequestSpec

# The client capability each server request needs (2025-11-25 lifecycle); ping needs none.
NEEDS = {p.SAMPLE: "sampling", p.ELICIT: "elicitation", p.LIST_ROOTS: "roots"}
MAX_PENDING = 1024  # server requests waiting for answers at once (a client that never answers)


class LegacyState:
    """Per-connection state of a legacy-era session."""

    __slots__ = ("capabilities", "log_level", "subscribed", "pending", "next_id")

    def __init__(self) -> None:
        self.capabilities: dict[str, Any] = {}
        self.log_level: str | None = None  # None: logging/setLevel not called (no notifications/message)
        self.subscribed: set[str] = set()
        self.pending: dict[Any, str] = {}  # server request id -> method, until answered or timed out
        self.next_id = 0

    def new_id(self) -> str:
        self.next_id += 1
        return f"mockmcp-{self.next_id}"


def response_name(spec: RequestSpec) -> str:
    return spec.name if spec.name is not None else spec.method.split("/")[0]


def ask(state: LegacyState, ctx: RequestContext, spec: RequestSpec, *, time_scale: float, check_capabilities: bool,
        unmatched: list[dict[str, Any]] | None = None) -> Ask:
    """The ``Ask`` for a ``request`` step of ``ctx``'s reply (ClientError if it cannot be sent)."""
    if ctx.meta.get(p.META_PROTOCOL_VERSION) != p.LEGACY_VERSION:
        raise errors.InvalidRequest(
            f"Invalid Request: the reply sends the client a {spec.method} request, which only a legacy-era (initialize) session can receive",
            request_id=ctx.id,
        )
    need = NEEDS.get(spec.method)
    if need is not None and check_capabilities and type(state.capabilities.get(need)) is not dict:
        raise errors.InvalidRequest(
            f"Invalid Request: answering needs the client capability {need!r} (for {spec.method}), which initialize did not declare",
            data={"requiredCapabilities": {need: {}}},
            request_id=ctx.id,
        )
    params = templates.render(spec.params, ctx.scope())
    if spec.method == p.ELICIT and check_capabilities and type(params) is dict and params.get("mode") == "url":
        declared = state.capabilities.get("elicitation")
        if type(declared) is not dict or type(declared.get("url")) is not dict:  # {} alone means form mode only
            raise errors.InvalidRequest(
                "Invalid Request: answering needs the client capability elicitation.url (a URL-mode elicitation), which initialize did not declare",
                data={"requiredCapabilities": {"elicitation": {"url": {}}}},
                request_id=ctx.id,
            )
    if len(state.pending) >= MAX_PENDING:
        raise errors.InvalidRequest(f"Invalid Request: {MAX_PENDING} server requests are waiting for answers already", request_id=ctx.id)
    rid = state.new_id()
    message = {"jsonrpc": p.JSONRPC_VERSION, "id": rid, "method": spec.method, "params": params}
    cancel = jsonrpc.encode(jsonrpc.notification(p.CANCELLED, {"requestId": rid, "reason": "timed out"}))
    name = response_name(spec)
    state.pending[rid] = spec.method

    def deliver(response: Any) -> None:
        state.pending.pop(rid, None)
        if type(response) is not dict:
            answer: dict[str, Any] = {"timedOut": True}
        elif "error" in response:
            answer = {"error": response["error"]}
        else:
            answer = {"result": response.get("result")}
        ctx.set_response(name, answer)
        if spec.expect is not None and unmatched is not None:
            reason = matching.value_mismatch(spec.expect, answer)
            if reason is not None:  # the verifier reports it (--strict fails); the reply goes on as scripted
                unmatched.append({"id": ctx.id, "method": ctx.method, "what": f"the answer to {spec.method} {rid!r}",
                                  "answer": True, "nearMiss": {"rule": "request.expect", "reason": reason}})

    return Ask(rid, message, jsonrpc.encode(message), spec.timeout.seconds * time_scale, cancel, deliver)
