"""The authorization core as the HTTP shell sees it: which paths are its own, their answers, and
the gate every MCP request passes before the engine.

``AuthSite`` is made once per process with the scenario's ``auth``, the shell's clock and its
randomness (``mint``: a fresh unguessable string) and ``--time-scale``. ``origin`` is handed in
per request (``http://`` and the request's ``Host``): the URLs the metadata advertises are the
ones the client reached the server by, and the MCP URL, ``origin + "/mcp"``, is the resource.
The answers are plain data; every client mistake becomes one through ``answers.answer_for``.
"""

from __future__ import annotations

import json
from typing import Mapping

from mockmcp.core.auth.answers import AuthMistake, HttpAnswer, OAuthError, answer_for, json_answer
from mockmcp.core.auth.clients import Clients
from mockmcp.core.auth.forms import parse_form, parse_json_object, parse_pairs, query_of
from mockmcp.core.auth.resource import ResourceServer
from mockmcp.core.auth.server import AuthorizationServer
from mockmcp.core.auth.tokens import Clock, Mint, TokenTable
from mockmcp.scenario.model.auth import Auth

CORS: tuple[tuple[bytes, bytes], ...] = ((b"access-control-allow-origin", b"*"),)


def _text(headers: Mapping[bytes, bytes], name: bytes) -> str | None:
    value = headers.get(name)
    return None if value is None else value.decode("latin-1")


class AuthSite:
    def __init__(self, config: Auth, clock: Clock, mint: Mint, time_scale: float = 1.0) -> None:
        self.tokens = TokenTable(clock, mint)
        self.clients = Clients(config.server, mint)
        self.resource = ResourceServer(config, self.tokens)
        self.server = AuthorizationServer(config, self.tokens, self.clients, time_scale)
        routes: dict[str, tuple[str, tuple[bytes, ...]]] = {}
        for path in self.resource.paths:
            routes[path] = ("resourceMetadata", (b"GET", b"HEAD"))
        for path, kind in self.server.metadata_paths.items():
            routes.setdefault(path, (kind, (b"GET", b"HEAD")))
        e = self.server.endpoints
        routes[e["authorize"]] = ("authorize", (b"GET", b"POST"))
        routes[e["token"]] = ("token", (b"POST",))
        if config.server.registration.dynamic:
            routes[e["register"]] = ("register", (b"POST",))
        if any(k != "oauth" for k in config.server.metadataAt):
            routes[e["jwks"]] = ("jwks", (b"GET", b"HEAD"))
        self.routes = routes

    def owns(self, target: bytes) -> bool:
        """Is this request for the authorization core (not the MCP endpoint)?"""
        return target.split(b"?", 1)[0].decode("latin-1") in self.routes

    def refuse_head(self, method: bytes, target: bytes) -> HttpAnswer | None:
        """A request for one of the core's paths refused by its method, before its body is read."""
        _, methods = self.routes[target.split(b"?", 1)[0].decode("latin-1")]
        if method in methods:
            return None
        allow = ", ".join(m.decode() for m in methods).encode()
        return json_answer(405, {"error": "invalid_request", "error_description": f"use {allow.decode()}"},
                           ((b"allow", allow),))

    def answer(self, method: bytes, target: bytes, headers: Mapping[bytes, bytes], body: bytes, origin: str) -> HttpAnswer:
        """The answer to a request for one of the core's paths (its client mistakes answered too)."""
        text = target.decode("latin-1")
        kind, _ = self.routes[text.split("?", 1)[0]]
        try:
            return self._answer(kind, method, text, headers, body, origin)
        except AuthMistake as exc:
            return answer_for(exc)

    def _answer(self, kind: str, method: bytes, target: str, headers: Mapping[bytes, bytes], body: bytes,
                origin: str) -> HttpAnswer:
        server = self.server
        if kind == "resourceMetadata":
            return json_answer(200, self.resource.document(origin, server.issuer(origin)), CORS)
        if kind in ("oauth", "openid", "openidAppended"):
            return json_answer(200, server.metadata(kind, origin), CORS)
        if kind == "jwks":
            return json_answer(200, {"keys": []}, CORS)
        ctype = _text(headers, b"content-type")
        if kind == "authorize":
            params = parse_pairs(query_of(target), "query") if method == b"GET" else parse_form(body, ctype)
            return server.authorize(params, origin)
        if kind == "token":
            return server.token(parse_form(body, ctype), _text(headers, b"authorization"), origin)
        assert kind == "register"
        return server.register(parse_json_object(body, ctype, "invalid_client_metadata"))

    # ------------------------------------------------------------ the MCP endpoint's gate

    def gate(self, target: bytes, headers: Mapping[bytes, bytes], origin: str) -> HttpAnswer | None:
        """A request to the MCP endpoint by its head: ``None`` when its token lets it through."""
        try:
            self.resource.check(target.decode("latin-1"), _text(headers, b"authorization"), origin)
        except AuthMistake as exc:
            return answer_for(exc)
        return None

    def gate_body(self, target: bytes, headers: Mapping[bytes, bytes], body: bytes, origin: str) -> HttpAnswer | None:
        """Once the body is read: ``403 insufficient_scope`` when its method, tool, prompt or resource
        needs scopes the token lacks (``None``: the engine may see it)."""
        extra = self.resource.body_scopes(body)
        if not extra:
            return None
        try:
            grant = self.resource.check(target.decode("latin-1"), _text(headers, b"authorization"), origin)
            self.resource.check_scopes(grant, extra, origin)
        except AuthMistake as exc:
            return answer_for(exc)
        return None


def describe(answer: HttpAnswer) -> str:
    """A short account of an answer for the log (its status and OAuth error, never a token)."""
    try:
        doc = json.loads(answer.body) if answer.body else None
    except ValueError:
        doc = None
    error = doc.get("error") if isinstance(doc, dict) else None
    return f"{answer.status}" + (f" {error}" if isinstance(error, str) else "")


__all__ = ["AuthSite", "HttpAnswer", "OAuthError", "describe"]
