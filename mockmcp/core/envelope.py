"""Result envelopes: what every response carries besides its payload, from the server's facts.

A complete result gets ``resultType``, the server's identity in
``_meta["io.modelcontextprotocol/serverInfo"]`` (unless the scenario turns it
off) and, for cacheable methods, ``ttlMs``/``cacheScope`` from the scenario's
``cache:`` block. Every response the core writes is built here (errors through
``errors.error_response``), so handlers, the step expander and compiled
replies agree on one shape. Sans-I/O.
"""

from __future__ import annotations

from typing import Any

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.scenario.model import base as model
from mockmcp.wire import protocol as p
from mockmcp.core.actions import Send
from mockmcp.scenario.definitions import drop_none, icons

CacheHints = tuple[int | None, str | None]
NO_HINTS: CacheHints = (None, None)


class Envelope:
    """Wraps payloads into responses for one scenario."""

    __slots__ = ("server_info", "_server_meta", "_with_info", "_cache")

    def __init__(self, scenario: model.Scenario) -> None:
        server = scenario.server
        self.server_info: dict[str, Any] = drop_none(
            {
                "name": server.name,
                "version": server.version,
                "title": server.title,
                "description": server.description,
                "websiteUrl": server.websiteUrl,
                "icons": icons(server.icons),
            }
        )
        # Shared by every result: results are never mutated after planning.
        self._server_meta = {p.META_SERVER_INFO: self.server_info}
        self._with_info = scenario.protocol.serverInfo
        self._cache = scenario.cache

    # ------------------------------------------------------------ payloads

    def complete(self, method: str, result: Any, hints: CacheHints = NO_HINTS) -> dict[str, Any]:
        """Fill in what every complete result carries (a non-object becomes ``{"value": ...}``)."""
        out: dict[str, Any] = dict(result) if type(result) is dict else {"value": result}
        if "resultType" not in out:
            out["resultType"] = "complete"
        if self._with_info:
            meta = out.get("_meta")
            if type(meta) is not dict:
                out["_meta"] = self._server_meta
            elif p.META_SERVER_INFO not in meta:
                out["_meta"] = {**meta, p.META_SERVER_INFO: self.server_info}
        if method in p.CACHEABLE and out["resultType"] == "complete":
            ttl, scope = self.cache_hints(method, hints)
            out.setdefault("ttlMs", ttl)
            out.setdefault("cacheScope", scope)
        return out

    def input_required(self, body: dict[str, Any]) -> dict[str, Any]:
        """An ``input_required`` result: ``body`` holds inputRequests and/or requestState."""
        result: dict[str, Any] = {"resultType": "input_required", **body}
        if self._with_info:
            result["_meta"] = self._server_meta
        return result

    @staticmethod
    def text_result(method: str, uri: Any, text: str) -> dict[str, Any]:
        """The payload a ``text:`` step stands for, in the shape of ``method``'s result."""
        if method == p.PROMPTS_GET:
            return {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}
        if method == p.RESOURCES_READ:
            return {"contents": [{"uri": uri, "text": text}]}
        return {"content": [{"type": "text", "text": text}]}

    def cache_hints(self, method: str, override: CacheHints = NO_HINTS) -> tuple[int, str]:
        c = self._cache
        block = {
            p.DISCOVER: c.discover,
            p.TOOLS_LIST: c.tools,
            p.PROMPTS_LIST: c.prompts,
            p.RESOURCES_LIST: c.resources,
            p.RESOURCE_TEMPLATES_LIST: c.resourceTemplates,
            p.RESOURCES_READ: c.read,
        }.get(method)
        ttl: int = c.ttlMs
        scope: str = c.cacheScope
        if block is not None:
            ttl = block.ttlMs if block.ttlMs is not None else ttl
            scope = block.cacheScope or scope
        if override[0] is not None:
            ttl = override[0]
        if override[1] is not None:
            scope = override[1]
        return ttl, scope

    # ------------------------------------------------------------ messages

    @staticmethod
    def final(request_id: Any, result: dict[str, Any]) -> Send:
        """The response that ends a request."""
        msg = {"jsonrpc": p.JSONRPC_VERSION, "id": request_id, "result": result}
        return Send(msg, jsonrpc.encode(msg), True)

    def listen_closed(self, sid: Any) -> Send:
        """The answer to a listen request whose stream the server ends itself (an ``endSubscription``
        step, a graceful shutdown): a complete result whose ``_meta`` names the subscription, so the
        client can tell a graceful end from a dropped transport (which carries no response)."""
        return self.final(sid, self.complete(p.SUBSCRIPTIONS_LISTEN, {"_meta": {p.META_SUBSCRIPTION_ID: sid}}))

    @staticmethod
    def error(request_id: Any, code: int, message: str | None, data: Any = errors.ABSENT) -> Send:
        msg = errors.error_response(request_id, code, message, data)
        return Send(msg, jsonrpc.encode(msg), True)

    @staticmethod
    def notification(method: str, params: dict[str, Any], *, final: bool = False) -> Send:
        msg = jsonrpc.notification(method, params)
        return Send(msg, jsonrpc.encode(msg), final)
