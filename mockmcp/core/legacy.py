"""Legacy-era (2025-11-25) and dual-era emulation: an era of the engine's method pipeline.

``protocol.era: legacy`` makes the mock answer like a server from before the
stateless revision: an ``initialize`` handshake, ``ping``, results without
``resultType`` or caching hints, and ``-32601`` for ``server/discover``.
``era: dual`` accepts both: ``initialize`` switches this session to legacy
semantics for requests without per-request ``_meta``, while requests that
carry ``_meta`` are served statelessly as usual. Dual-era *clients* use this
to exercise their fallback. The handshake state is the session's
(``legacy_initialized``); this module only decides and rewrites. Sans-I/O.
"""

from __future__ import annotations

from typing import Any

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.wire import protocol as p
from mockmcp.core.actions import Action, Emit, Plan, Send
from mockmcp.core.context import RequestContext
from mockmcp.core.pipeline import Era, MethodPipeline
from mockmcp.core.services import Services

_MODERN_ONLY = ("resultType", "ttlMs", "cacheScope")


class LegacyEra:
    """Serves the requests of the legacy era through the engine's method pipeline, rewriting their
    results; what is this era's own (the handshake, ``ping``, the session methods, the rewriting,
    its notifications) is here, the override -> handler stages are the pipeline's."""

    __slots__ = ("svc", "pipeline", "era")

    def __init__(self, svc: Services, pipeline: MethodPipeline) -> None:
        self.svc = svc
        self.pipeline = pipeline
        self.era = Era(
            own=self._own,
            undefined=_UNDEFINED,
            refused=_REFUSED,
            finish=_stripped,
            notes_unknown=False,
            names_capability=False,
        )

    def plan(self, req: jsonrpc.Request) -> Plan | None:
        """A legacy-era answer, or ``None`` to serve the request the modern way."""
        svc = self.svc
        if req.method == p.INITIALIZE:
            return self._initialize(req)
        if svc.protocol.era == "legacy":
            if req.method == p.DISCOVER:
                # What a 2025-11-25 server says to the probe, before or after initialize. Clients
                # fall back on it at once (mcp 2.3.0: any error but a disjoint -32022), while a
                # "not initialized" -32600 or silence costs some of them a timeout.
                raise errors.MethodNotFound(f"Method not found: {req.method}", request_id=req.id)
            if not svc.session.legacy_initialized and req.method != "ping":
                # Real legacy servers answer requests before initialize in various ways; most say this.
                raise errors.InvalidRequest("Server not initialized", request_id=req.id)
            return self.pipeline.serve(self._context(req), self.era)
        # dual era: per-request _meta selects modern; a handshake selects legacy for the rest.
        meta = req.params.get("_meta")
        if isinstance(meta, dict) and p.META_PROTOCOL_VERSION in meta:
            return None
        if svc.session.legacy_initialized or req.method == "ping":
            return self.pipeline.serve(self._context(req), self.era)
        return None

    def _initialize(self, req: jsonrpc.Request) -> Plan:
        svc = self.svc
        svc.session.legacy_initialized = True
        caps = req.params.get("capabilities")
        # what the server may ask of this client (request steps are gated on it)
        svc.session.legacy.capabilities = caps if type(caps) is dict else {}
        caps = {k: v for k, v in svc.capabilities.items() if k != "extensions"}
        result: dict[str, Any] = {
            "protocolVersion": p.LEGACY_VERSION,
            "capabilities": caps,
            "serverInfo": svc.envelope.server_info,
        }
        if svc.scenario.server.instructions is not None:
            result["instructions"] = svc.scenario.server.instructions
        return _result(req, result)

    def _own(self, ctx: RequestContext) -> Plan | None:
        """The methods of the legacy connection itself (after a ``methods:`` rule had its chance):
        ``ping`` and the session methods; ``None`` for every other method."""
        if ctx.method == "ping":
            return _result(ctx.request, {})
        if ctx.method in _SESSION_METHODS:
            return self._session_method(ctx.request)
        return None

    def _context(self, req: jsonrpc.Request) -> RequestContext:
        """The request as the modern handlers see it: the handshake's version, capabilities and level."""
        svc = self.svc
        meta = req.params.get("_meta")
        meta = dict(meta) if isinstance(meta, dict) else {}
        meta.setdefault(p.META_PROTOCOL_VERSION, p.LEGACY_VERSION)
        legacy = svc.session.legacy
        meta.setdefault(p.META_CLIENT_CAPABILITIES, legacy.capabilities)
        meta[p.META_CLIENT_CAPABILITIES] = _without_tasks(meta[p.META_CLIENT_CAPABILITIES])
        if legacy.log_level is not None:
            meta.setdefault(p.META_LOG_LEVEL, legacy.log_level)  # log steps then send at or above it
        return RequestContext(req, meta, svc.session.state, svc.effects)

    def _session_method(self, req: jsonrpc.Request) -> Plan:
        """``logging/setLevel`` and ``resources/subscribe``/``unsubscribe``: state the connection keeps."""
        svc = self.svc
        caps = svc.capabilities
        if req.method == p.LEGACY_SET_LEVEL:
            level = req.params.get("level")
            if "logging" not in caps:
                raise errors.MethodNotFound(f"Method not found: {req.method} (this server does not offer logging)", request_id=req.id)
            if type(level) is not str or level not in p.LOG_LEVEL_RANK:
                raise errors.InvalidParams(f"Invalid params: level must be one of {', '.join(p.LOG_LEVELS)}", request_id=req.id)
            svc.session.legacy.log_level = level
            return _result(req, {})
        if not (caps.get("resources") or {}).get("subscribe"):
            raise errors.MethodNotFound(f"Method not found: {req.method} (this server does not offer resource subscriptions)", request_id=req.id)
        uri = req.params.get("uri")
        if type(uri) is not str:
            raise errors.InvalidParams("Invalid params: 'uri' must be a string", request_id=req.id)
        subscribed = svc.session.legacy.subscribed
        if req.method == p.LEGACY_SUBSCRIBE:
            if len(subscribed) >= MAX_SUBSCRIBED and uri not in subscribed:
                raise errors.InvalidParams(f"Invalid params: at most {MAX_SUBSCRIBED} subscribed resources", request_id=req.id)
            subscribed.add(uri)
        else:
            subscribed.discard(uri)
        return _result(req, {})

    def fan_out(self, emit: Emit, method: str) -> list[Send]:
        """An emitted event as a legacy session hears it: list changes whenever the server
        offers them, a resource update when the client subscribed to that URI."""
        caps = self.svc.capabilities
        if emit.event == "resources/updated":
            if emit.uri not in self.svc.session.legacy.subscribed:
                return []
            return [self.svc.envelope.notification(method, {"uri": emit.uri})]
        cap = emit.event.split("/")[0]
        if not (caps.get(cap) or {}).get("listChanged"):
            return []
        return [self.svc.envelope.notification(method, {})]


MAX_SUBSCRIBED = 10_000  # resources one legacy session may subscribe to
_SESSION_METHODS = frozenset({p.LEGACY_SET_LEVEL, p.LEGACY_SUBSCRIBE, p.LEGACY_UNSUBSCRIBE})
# Methods a handler knows that 2025-11-25 does not define, and those it refuses with a reason.
_UNDEFINED = frozenset({p.DISCOVER, p.SUBSCRIPTIONS_LISTEN})
_REFUSED = {
    m: f"the {p.TASKS_EXTENSION} extension needs protocol version 2026-07-28 or later" for m in p.TASK_METHODS
}


def _result(req: jsonrpc.Request, result: dict[str, Any]) -> Plan:
    msg = jsonrpc.result_response(req.id, result)
    return Plan(req.id, [Send(msg, jsonrpc.encode(msg), True)], req.method, "protocol.era", immediate=True)


def _without_tasks(caps: Any) -> Any:
    """Client capabilities as a legacy-era request has them: the Tasks extension is not defined
    under 2025-11-25, so a declaration of it counts for nothing (no task is returned)."""
    if type(caps) is not dict or type(caps.get("extensions")) is not dict or p.TASKS_EXTENSION not in caps["extensions"]:
        return caps
    extensions = {k: v for k, v in caps["extensions"].items() if k != p.TASKS_EXTENSION}
    return {**caps, "extensions": extensions}


def _stripped(plan: Plan) -> Plan:
    plan.actions = [_strip(a) for a in plan.actions]
    if plan.rest is not None:
        plan.rest = (None if a is None else _strip(a) for a in plan.rest)
    return plan


def _strip(action: Action) -> Action:
    """A modern result rewritten the legacy way: no resultType, cache hints or serverInfo _meta."""
    if type(action) is Send and type(action.message) is dict and type(action.message.get("result")) is dict:
        result = {k: v for k, v in action.message["result"].items() if k not in _MODERN_ONLY}
        meta = result.get("_meta")
        if isinstance(meta, dict):
            meta = {k: v for k, v in meta.items() if k != p.META_SERVER_INFO}
            if meta:
                result["_meta"] = meta
            else:
                result.pop("_meta")
        msg = dict(action.message, result=result)
        return Send(msg, jsonrpc.encode(msg), action.final)
    return action
