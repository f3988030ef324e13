"""The authorization front: the scenario's ``auth`` served on the MCP server's own listener.

Made only for a scenario with ``auth`` (so a plain run imports neither this module nor
``core.auth``), it stands in front of the transport's checks and the exchange: a request for
one of the authorization core's paths (the well-known metadata, ``/authorize``, ``/token``,
``/register``) is answered here; a request to the MCP endpoint passes the core's gate by its
head (``401``/``400`` before its body is read), then, once read, by the scopes its method, tool,
prompt or resource needs (``403``), and only then reaches the checks and the engine, whichever
era the client speaks. The shell owns what the core may not: the clock (trio's, so tests on a
mock clock and ``--time-scale`` apply) and the randomness of codes and tokens (``secrets``).

An authorization request parked for the control channel (``decision: wait``) waits here, in
its connection's task, for the core's decision table to call it back or its deadline to pass.
With two origins a second front serves the second listener: only the authorization server's
paths there (anything else is ``404``).
"""

from __future__ import annotations

import secrets
from typing import Callable

import h11
import trio

from mockmcp.core import httprules
from mockmcp.core.auth.answers import HttpAnswer, json_answer
from mockmcp.core.auth.facts import facts_of
from mockmcp.core.auth.live import Pending
from mockmcp.core.auth.site import AuthSite, Listener, describe
from mockmcp.scenario.model.auth import Auth
from mockmcp.shells.http.responses import reason, write_reject
from mockmcp.shells.http.seams import Answers, HeadCheck
from mockmcp.shells.http.taps import Taps
from mockmcp.shells.log import StderrLog


# Without a Host the server cannot say its own URLs (the resource, the issuer): nothing is served.
NO_HOST = json_answer(400, {"error": "invalid_request", "error_description": "a Host header naming this server is required"})


def mint() -> str:
    """A fresh code or token: 256 bits from the OS, URL-safe."""
    return secrets.token_urlsafe(32)


def new_site(config: Auth, time_scale: float = 1.0) -> AuthSite:
    """The authorization core on this shell's clock and randomness."""
    return AuthSite(config, trio.current_time, mint, time_scale)


NOT_HERE = json_answer(404, {"error": "invalid_request", "error_description": "this origin serves only the"
                                                                                " authorization server"})


MAX_HOSTS = 64
_UNSEEN = "<unseen>"


def as_reject(answer: HttpAnswer) -> httprules.Reject:
    return httprules.Reject(answer.status, reason(answer.status).decode("latin-1"), headers=answer.headers, body=answer.body)


class AuthFront:
    """Both seams the connection loop calls (``HeadCheck`` and ``Answers``), in front of the
    transport's own (``checks`` and ``exchange``)."""

    def __init__(self, site: AuthSite, checks: HeadCheck, exchange: Answers, taps: Taps, log: StderrLog, *,
                 allowed_hosts: frozenset[str] | None, listener: Listener = "mcp",
                 clock: Callable[[], float] = trio.current_time) -> None:
        self.site = site
        self.listener = listener
        self.clock = clock
        self.checks = checks
        self.exchange = exchange
        self.taps = taps
        self.log = log
        self.allowed_hosts = allowed_hosts
        self._origins: dict[bytes, str | None] = {}  # Host -> origin (None: not one this server answers to)

    def _origin(self, headers: dict[bytes, bytes]) -> str | None:
        """``http://`` and the request's ``Host``: the URLs the client reached the server by. None
        without a Host, or with one this server does not answer to (the checks refuse it). Every
        request asks (twice), and a client names one or two Hosts: each is judged once."""
        host = headers.get(b"host")
        if host is None:
            return None
        known = self._origins.get(host, _UNSEEN)
        if known is not _UNSEEN:
            return known
        text = host.decode("latin-1").strip()
        origin: str | None = "http://" + text
        if not text or any(c in text for c in "/?#@ \\") or (
                self.allowed_hosts is not None and not httprules.host_allowed(text, self.allowed_hosts)):
            origin = None
        if len(self._origins) >= MAX_HOSTS:
            self._origins.clear()  # (a client naming ever new Hosts: memory stays bounded)
        self._origins[host] = origin
        return origin

    def head(self, request: h11.Request, headers: dict[bytes, bytes]) -> httprules.Reject | None:
        origin = self._origin(headers)
        if origin is None:  # a foreign Host is the transport's refusal; no usable Host at all is ours
            return self.checks.head(request, headers) or as_reject(NO_HOST)
        # most requests: straight to the gate (/mcp is never one of the core's paths: check refuses it)
        if request.target == httprules.ENDPOINT and self.listener == "mcp":
            return self._gate(request, headers, origin)
        if self.site.owns(request.target, self.listener):
            refused = self.site.refuse_head(request.method, request.target, self.listener)
            return None if refused is None else as_reject(refused)
        if self.listener == "second":
            return as_reject(NOT_HERE)
        if request.target.split(b"?", 1)[0] == httprules.ENDPOINT:
            return self._gate(request, headers, origin)
        return self.checks.head(request, headers)

    def _gate(self, request: h11.Request, headers: dict[bytes, bytes], origin: str) -> httprules.Reject | None:
        """A request to the MCP endpoint: the token's check, then the transport's own."""
        refused = self.site.gate(request.target, headers, origin)
        if refused is not None:
            self._told(request, refused, headers, b"", origin)
            return as_reject(refused)
        return self.checks.head(request, headers)

    async def answer(self, h: h11.Connection, stream: trio.abc.Stream, request: h11.Request,
                     headers: dict[bytes, bytes], body: bytes) -> None:
        if (request.target == httprules.ENDPOINT or not self.site.owns(request.target, self.listener)) \
                and not self.site.resource.body_scopes(body):
            # the common case, cheaply: the gate let it through by its head, and its body needs no
            # more scopes (most bodies are not even parsed: resource.body_scopes)
            await self.exchange.answer(h, stream, request, headers, body)
            return
        origin = self._origin(headers)
        if origin is not None:
            if self.site.owns(request.target, self.listener):
                found = self.site.answer(request.method, request.target, headers, body, origin, self.listener)
                answer = found if isinstance(found, HttpAnswer) else await self._decided(found)
                self._told(request, answer, headers, body, origin)
                await write_answer(h, stream, answer, request.method == b"HEAD")
                return
            refused = self.site.gate_body(request.target, headers, body, origin)
            if refused is not None:
                self._told(request, refused, headers, body, origin)
                await write_answer(h, stream, refused)
                return
        await self.exchange.answer(h, stream, request, headers, body)

    async def _decided(self, pending: Pending) -> HttpAnswer:
        """Wait for the control channel's approve or deny of a parked authorization request (at
        most until its deadline: then it is denied), and the core's answer to it."""
        done = trio.Event()
        pending.on_done = done.set
        self.log("info", f"auth: authorization request {pending.id} waits for the control channel"
                 f" (approveAuthorization or denyAuthorization, {pending.deadline - self.clock():g} s)")
        try:
            with trio.move_on_at(pending.deadline):
                await done.wait()
        finally:
            pending.on_done = None
            self.site.decisions.give_up(pending)  # (gone or timed out: it waits no more)
        return self.site.settle(pending)

    def _told(self, request: h11.Request, answer: HttpAnswer, headers: dict[bytes, bytes], body: bytes,
              origin: str) -> None:
        """The journal hears of each authorization exchange by its path and outcome and, when someone
        listens (the verifier's authorization checks), its facts (``core/auth/facts.py``): never a
        secret, neither the query nor the body as sent."""
        path = request.target.split(b"?", 1)[0].decode("latin-1")
        outcome = describe(answer)
        self.log("debug", f"auth: {request.method.decode('latin-1')} {path} -> {outcome}")
        if self.taps.on_event is None:
            return
        fields = {"method": request.method.decode("latin-1"), "path": path, "status": answer.status, "outcome": outcome}
        fields.update(facts_of(self.site, request.method, request.target, headers, body, origin, answer, self.listener))
        self.taps.event("auth", fields)


async def write_answer(h: h11.Connection, stream: trio.abc.Stream, answer: HttpAnswer, head: bool = False) -> None:
    """An authorization answer, whole; the connection stays open for the client's next request."""
    headers = [*answer.headers, (b"content-length", str(len(answer.body)).encode())]
    data = h.send(h11.Response(status_code=answer.status, reason=reason(answer.status), headers=headers))
    if not head and answer.body:
        data += h.send(h11.Data(data=answer.body))
    await stream.send_all(data + h.send(h11.EndOfMessage()))


__all__ = ["AuthFront", "write_answer", "write_reject"]
