"""The authorization core as the HTTP shell sees it: which paths are its own, their answers, and
the gate every MCP request passes before the engine.

``AuthSite`` is made once per process with the scenario's ``auth``, the shell's clock and its
randomness (``mint``: a fresh unguessable string) and ``--time-scale``. ``origin`` is handed in
per request (``http://`` and the request's ``Host``): the URLs the metadata advertises are the
ones the client reached the server by, and the MCP URL, ``origin + "/mcp"``, is the resource.
The answers are plain data; every client mistake becomes one through ``answers.answer_for``.

Two listeners when the scenario needs two origins: ``"mcp"`` (the MCP endpoint and its metadata,
and the authorization server unless it is elsewhere) and ``"second"`` (the authorization server
of ``server: {origin: second}``, or the one a ``migration`` moves to). A request names the
listener it came by. What the control channel changes lives in ``live`` (``AuthLive``).
"""

from __future__ import annotations

import json
from typing import Literal, Mapping

from mockmcp.core.auth.answers import AuthMistake, HttpAnswer, OAuthError, RedirectError, answer_for, json_answer
from mockmcp.core.auth.clients import Clients
from mockmcp.core.auth.forms import parse_form, parse_json_object, parse_pairs, query_of
from mockmcp.core.auth.live import Decisions, Migration, Origins, Overrides, Pending
from mockmcp.core.auth.resource import ResourceServer
from mockmcp.core.auth.server import AuthorizationServer
from mockmcp.core.auth.tokens import Clock, Mint, TokenTable
from mockmcp.scenario.model.auth import Auth

CORS: tuple[tuple[bytes, bytes], ...] = ((b"access-control-allow-origin", b"*"),)
GET: tuple[bytes, ...] = (b"GET", b"HEAD")
Listener = Literal["mcp", "second"]
Route = tuple[str, tuple[bytes, ...], AuthorizationServer]
SECOND = "second"  # the tag of what the second authorization server of a migration issues


def _same(origin: str) -> str:
    return origin


def _text(headers: Mapping[bytes, bytes], name: bytes) -> str | None:
    value = headers.get(name)
    return None if value is None else value.decode("latin-1")


class AuthSite:
    def __init__(self, config: Auth, clock: Clock, mint: Mint, time_scale: float = 1.0) -> None:
        s = config.server
        self.config = config
        self.clock = clock
        self.tokens = TokenTable(clock, mint)
        self.origins = Origins()
        self.decisions = Decisions()
        self.overrides = Overrides()
        self.wait_timeout = s.authorize.waitTimeout.seconds
        self.clients = Clients(s, mint)
        self.resource = ResourceServer(config, self.tokens)
        elsewhere = s.origin == "second"
        self.server = AuthorizationServer(config, self.tokens, self.clients, time_scale,
                                          mcp_origin=self.origins.mcp_of if elsewhere else _same)
        # A migration's second server: its own clients (none of the first's) and its own tag.
        self.migration = Migration(s.migration.afterRequests) if s.migration is not None else None
        self.next_server = None if self.migration is None else AuthorizationServer(
            config, self.tokens, Clients(s, mint), time_scale, tag=SECOND, mcp_origin=self.origins.mcp_of)
        self.two_origins = elsewhere or self.next_server is not None
        mcp: dict[str, Route] = {path: ("resourceMetadata", GET, self.server) for path in self.resource.paths}
        second: dict[str, Route] = {}
        self._server_routes(second if elsewhere else mcp, self.server)
        if self.next_server is not None:
            self._server_routes(second, self.next_server)
        self.routes = mcp  # the MCP listener's paths: (kind, methods, the server that answers)
        self.second_routes = second  # the second origin's

    def route(self, path: str, listener: Listener = "mcp") -> Route | None:
        return (self.second_routes if listener == "second" else self.routes).get(path)

    def _server_routes(self, routes: dict[str, Route], server: AuthorizationServer) -> None:
        for path, kind in server.metadata_paths.items():
            routes.setdefault(path, (kind, GET, server))
        e = server.endpoints
        routes[e["authorize"]] = ("authorize", (b"GET", b"HEAD", b"POST"), server)  # HEAD: GET's head (RFC 9110 9.3.2)
        routes[e["token"]] = ("token", (b"POST",), server)
        if self.config.server.registration.dynamic:
            routes[e["register"]] = ("register", (b"POST",), server)
        if any(k != "oauth" for k in self.config.server.metadataAt):
            routes[e["jwks"]] = ("jwks", GET, server)

    def current(self) -> tuple[AuthorizationServer, Listener]:
        """The authorization server the resource's metadata names now, and the listener it is on."""
        if self.next_server is not None and self.migration is not None and self.migration.moved:
            return self.next_server, "second"
        return self.server, "second" if self.config.server.origin == "second" else "mcp"

    def migrate(self) -> bool:
        """Move the resource to the second authorization server now (False: there is none, or it
        moved already): its metadata names the second server, the first one's tokens are refused."""
        if self.migration is None or self.migration.moved:
            return False
        self.migration.moved = True
        self.tokens.retire(self.server.tag)
        return True

    def owns(self, target: bytes, listener: Listener = "mcp") -> bool:
        """Is this request for the authorization core (not the MCP endpoint)?"""
        return self.route(target.split(b"?", 1)[0].decode("latin-1"), listener) is not None

    def refuse_head(self, method: bytes, target: bytes, listener: Listener = "mcp") -> HttpAnswer | None:
        """A request for one of the core's paths refused by its method, before its body is read."""
        found = self.route(target.split(b"?", 1)[0].decode("latin-1"), listener)
        assert found is not None, "refuse_head of a path the core does not own"
        _, methods, _ = found
        if method in methods:
            return None
        allow = ", ".join(m.decode() for m in methods).encode()
        return json_answer(405, {"error": "invalid_request", "error_description": f"use {allow.decode()}"},
                           ((b"allow", allow),))

    def answer(self, method: bytes, target: bytes, headers: Mapping[bytes, bytes], body: bytes, origin: str,
               listener: Listener = "mcp") -> HttpAnswer | Pending:
        """The answer to a request for one of the core's paths (its client mistakes answered too),
        or an authorization request parked for the control channel (``decision: wait``: the shell
        waits for its decision, then ``settle``)."""
        text = target.decode("latin-1")
        found = self.route(text.split("?", 1)[0], listener)
        assert found is not None, "answer for a path the core does not own"
        kind, _, server = found
        try:
            return self._answer(kind, server, method, text, headers, body, origin)
        except AuthMistake as exc:
            return answer_for(exc)

    def settle(self, pending: Pending) -> HttpAnswer:
        """A parked request's answer: the control channel's decision, or (none in time) a denial."""
        self.decisions.give_up(pending)
        server = self.next_server if pending.server == SECOND and self.next_server is not None else self.server
        return server.settle(pending)

    def _answer(self, kind: str, server: AuthorizationServer, method: bytes, target: str, headers: Mapping[bytes, bytes],
                body: bytes, origin: str) -> HttpAnswer | Pending:
        if kind == "resourceMetadata":
            current, where = self.current()
            issuer = current.issuer(self.origins.second_of(origin) if where == "second" else origin)
            return json_answer(200, self.overrides.apply(self.resource.document(origin, issuer), self.overrides.resource), CORS)
        if kind in ("oauth", "openid", "openidAppended"):
            return json_answer(200, self.overrides.apply(server.metadata(kind, origin), self.overrides.server), CORS)
        if kind == "jwks":
            return json_answer(200, {"keys": []}, CORS)
        ctype = _text(headers, b"content-type")
        if kind == "authorize":
            params = parse_form(body, ctype) if method == b"POST" else parse_pairs(query_of(target), "query")
            answer = server.authorize(params, origin)
            if isinstance(answer, Pending) and self.decisions.park(answer, self.clock(), self.wait_timeout) is None:
                raise RedirectError("temporarily_unavailable", "too many authorization requests wait for a decision",
                                    answer.redirect_uri, answer.state, answer.iss)
            return answer
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
        if self.migration is not None and self.migration.request_passed():
            self.migrate()  # (this request still passes: the next one with the first server's token does not)
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
