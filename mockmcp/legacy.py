"""Legacy-era (2025-11-25) and dual-era emulation.

``protocol.era: legacy`` makes the mock answer like a server from before the
stateless revision: an ``initialize`` handshake, ``ping``, results without
``resultType`` or caching hints, and ``-32601`` for ``server/discover``.
``era: dual`` accepts both: ``initialize`` switches this process to legacy
semantics for requests without per-request ``_meta``, while requests that
carry ``_meta`` are served statelessly as usual. Dual-era *clients* use this
to exercise their fallback.
"""

from __future__ import annotations

from typing import Any

from . import errors, jsonrpc, protocol as p
from .actions import Plan, Send

_MODERN_ONLY = ("resultType", "ttlMs", "cacheScope")


def _legacy_result(engine: Any, req: jsonrpc.Request, result: dict[str, Any]) -> Plan:
    msg = jsonrpc.result_response(req.id, result)
    return Plan(req.id, [Send(msg, jsonrpc.encode(msg), True)], req.method, "protocol.era", True)


def _initialize(engine: Any, req: jsonrpc.Request) -> Plan:
    engine.legacy_initialized = True
    caps = {k: v for k, v in engine.capabilities.items() if k != "extensions"}
    result: dict[str, Any] = {
        "protocolVersion": p.LEGACY_VERSION,
        "capabilities": caps,
        "serverInfo": engine.server_info,
    }
    if engine.scenario.server.instructions is not None:
        result["instructions"] = engine.scenario.server.instructions
    return _legacy_result(engine, req, result)


def _strip(action: Any) -> Any:
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


def _serve_legacy(engine: Any, req: jsonrpc.Request) -> Plan:
    from .methods import CAPABILITY_FOR, HANDLERS

    if req.method == "ping":
        return _legacy_result(engine, req, {})
    handler = HANDLERS.get(req.method)
    if handler is None or req.method in (p.DISCOVER, p.SUBSCRIPTIONS_LISTEN):
        raise errors.MethodNotFound(f"Method not found: {req.method}", request_id=req.id)
    cap = CAPABILITY_FOR.get(req.method)
    if cap is not None and cap not in engine.capabilities:
        raise errors.MethodNotFound(f"Method not found: {req.method}", request_id=req.id)
    meta = req.params.get("_meta")
    meta = dict(meta) if isinstance(meta, dict) else {}
    meta.setdefault(p.META_PROTOCOL_VERSION, p.LEGACY_VERSION)
    meta.setdefault(p.META_CLIENT_CAPABILITIES, {})
    plan = handler(engine, req, engine._context(req, meta))
    plan.actions = [_strip(a) for a in plan.actions]
    return plan


def plan(engine: Any, req: jsonrpc.Request) -> Plan | None:
    """A legacy-era answer, or ``None`` to serve the request the modern way."""
    if req.method == p.INITIALIZE:
        return _initialize(engine, req)
    era = engine.protocol.era
    if era == "legacy":
        if req.method == p.DISCOVER:
            # What a 2025-11-25 server says to the probe, before or after initialize. Clients
            # fall back on it at once (mcp 2.3.0: any error but a disjoint -32022), while a
            # "not initialized" -32600 or silence costs some of them a timeout.
            raise errors.MethodNotFound(f"Method not found: {req.method}", request_id=req.id)
        if not engine.legacy_initialized and req.method != "ping":
            # Real legacy servers answer requests before initialize in various ways; most say this.
            raise errors.InvalidRequest("Server not initialized", request_id=req.id)
        return _serve_legacy(engine, req)
    # dual era: per-request _meta selects modern; a handshake selects legacy for the rest.
    meta = req.params.get("_meta")
    if isinstance(meta, dict) and p.META_PROTOCOL_VERSION in meta:
        return None
    if engine.legacy_initialized or req.method == "ping":
        return _serve_legacy(engine, req)
    return None
