"""The JSON-RPC messages the tests send, built one way: requests with the revision's ``_meta``."""

from __future__ import annotations

import json
from typing import Any

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "0"},
}


def request(rid: Any, method: str, params: dict[str, Any] | None = None, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    p = dict(params or {})
    p["_meta"] = {**META, **(meta or {})}
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": p}


def line(msg: Any) -> bytes:
    return (json.dumps(msg) + "\n").encode()


def call(rid: Any, name: str, *, meta: dict[str, Any] | None = None, **args: Any) -> dict[str, Any]:
    """A ``tools/call`` of tool ``name`` with keyword arguments as its ``arguments``; ``meta``
    adds to (or overrides) the request's ``_meta`` (a ``progressToken``, a log level)."""
    return request(rid, "tools/call", {"name": name, "arguments": args}, meta)


def call_line(rid: Any, tool: str, arguments_json: str) -> bytes:
    """A ``tools/call`` line whose arguments are raw JSON text (values ``json.dumps`` cannot write)."""
    return (
        '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%s,"arguments":%s,"_meta":%s}}\n'
        % (json.dumps(rid), json.dumps(tool), arguments_json, json.dumps(META))
    ).encode()


def discover(rid: Any) -> dict[str, Any]:
    """``server/discover``: every scenario answers it at once, so it is the usual probe."""
    return request(rid, "server/discover")


def cancelled(rid: Any, reason: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"requestId": rid}
    if reason is not None:
        params["reason"] = reason
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}


def listen(rid: Any, **notifications: Any) -> dict[str, Any]:
    return request(rid, "subscriptions/listen", {"notifications": notifications})
