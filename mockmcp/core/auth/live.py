"""What the control channel changes in a running authorization setup, kept apart from the scenario:
the authorization requests parked for its decision, the metadata fields it overrides, where the
second origin is, and whether the resource has moved to the second authorization server.

``Decisions`` is the decision table of ``authorize: {decision: wait}``: the authorization endpoint
parks a request here (a ``Pending``, whose answer is still to come); the control channel approves
or denies it; the shell, which waits for either or for the deadline (``waitTimeout``), then has
the core settle it (a timeout is a denial). The shell sets ``on_done`` before it waits, as for a
``waitFor``. Bounded: at most ``MAX_PENDING`` at once (more are refused as ``temporarily_unavailable``).

``Origins`` maps an origin of one listener to the other's (the same host, the other port), once
the shell bound them: the second origin serves an authorization server for scenarios that need
two (``server: {origin: second}``, a migration). Sans-I/O: times are handed in.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

MAX_PENDING = 1_000
PRM_FIELDS = ("resource", "authorization_servers", "scopes_supported", "bearer_methods_supported",
              "resource_name", "resource_documentation")


class Pending:
    """An authorization request waiting for the control channel (everything needed to answer it)."""

    __slots__ = ("id", "client_id", "scopes", "resource", "redirect_uri", "given_redirect", "state", "iss", "challenge",
                 "created", "deadline", "decision", "grant_scopes", "description", "on_done", "server")

    def __init__(self, client_id: str, scopes: tuple[str, ...], resource: str, redirect_uri: str,
                 given_redirect: str | None, state: str | None, iss: str | None, challenge: str, server: str) -> None:
        self.id = ""
        self.client_id = client_id
        self.scopes = scopes
        self.resource = resource
        self.redirect_uri = redirect_uri  # where the answer goes
        self.given_redirect = given_redirect  # as the request gave it (bound to the code)
        self.state = state
        self.iss = iss
        self.challenge = challenge
        self.server = server  # the tag of the authorization server that parked it
        self.created = 0.0
        self.deadline = 0.0
        self.decision: str | None = None  # "approve" or "deny"
        self.grant_scopes: tuple[str, ...] | None = None  # approve: only these of the scopes asked
        self.description: str | None = None  # deny: the error_description
        self.on_done: Callable[[], None] | None = None

    def describe(self, now: float) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "clientId": self.client_id, "scopes": list(self.scopes),
                               "redirectUri": self.redirect_uri, "waited": round(max(0.0, now - self.created), 3),
                               "remaining": round(max(0.0, self.deadline - now), 3)}
        if self.state is not None:
            out["state"] = self.state
        return out


class Decisions:
    """The parked authorization requests, oldest first."""

    def __init__(self) -> None:
        self.pending: dict[str, Pending] = {}
        self.count = 0

    def park(self, pending: Pending, now: float, timeout: float) -> Pending | None:
        """Park ``pending`` (its id and deadline set); ``None`` when the table is full."""
        if len(self.pending) >= MAX_PENDING:
            return None
        self.count += 1
        pending.id = f"authz-{self.count}"
        pending.created = now
        pending.deadline = now + timeout
        self.pending[pending.id] = pending
        return pending

    def listing(self, now: float) -> list[dict[str, Any]]:
        return [p.describe(now) for p in self.pending.values()]

    def chosen(self, which: str | None) -> list[Pending]:
        """The pending request ``which`` (``None``: every one); ``KeyError`` if it is not pending."""
        if which is None:
            return list(self.pending.values())
        return [self.pending[which]]

    def decide(self, pending: Pending, decision: str, scopes: tuple[str, ...] | None, description: str | None) -> None:
        """The control channel's word: the request leaves the table and its waiter is woken."""
        self.pending.pop(pending.id, None)
        pending.decision = decision
        pending.grant_scopes = scopes
        pending.description = description
        if pending.on_done is not None:
            pending.on_done()

    def give_up(self, pending: Pending) -> None:
        """The deadline passed (or the client went away) before a decision: a denial."""
        if pending.decision is None:
            self.pending.pop(pending.id, None)
            pending.decision = "deny"
            pending.description = "no decision came from the control channel in time (decision: wait timed out)"


class Overrides:
    """Metadata fields the control channel set: a value replaces the field, ``None`` removes it."""

    def __init__(self) -> None:
        self.resource: dict[str, Any] = {}
        self.server: dict[str, Any] = {}

    @staticmethod
    def apply(document: dict[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
        if not fields:
            return document
        out = dict(document)
        for key, value in fields.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = value
        return out


def with_port(origin: str, port: int) -> str:
    """``origin`` (``http://host[:port]``) with another port: the other listener, same host."""
    scheme, _, host = origin.partition("://")
    if host.startswith("["):  # an IPv6 literal: [::1]:8000
        name = host[: host.index("]") + 1]
    else:
        name = host.rsplit(":", 1)[0] if ":" in host else host
    return f"{scheme}://{name}:{port}"


class Origins:
    """The two listeners' ports, once bound (0: not bound yet), and the URLs to show for them."""

    def __init__(self) -> None:
        self.mcp_port = 0
        self.second_port = 0
        self.mcp_base = ""  # http://host:port of each, as the shell bound them (getState shows them)
        self.second_base = ""

    def bound(self, mcp_base: str, mcp_port: int, second_base: str = "", second_port: int = 0) -> None:
        self.mcp_base, self.mcp_port = mcp_base, mcp_port
        self.second_base, self.second_port = second_base, second_port

    def second_of(self, mcp_origin: str) -> str:
        return with_port(mcp_origin, self.second_port) if self.second_port else mcp_origin

    def mcp_of(self, second_origin: str) -> str:
        return with_port(second_origin, self.mcp_port) if self.mcp_port else second_origin


class Migration:
    """Whether the resource moved to the second authorization server, and when it will."""

    def __init__(self, after: int | None) -> None:
        self.after = after  # MCP requests let through before the move (None: only by the control channel)
        self.passed = 0
        self.moved = False

    def request_passed(self) -> bool:
        """One more MCP request had a good token; True when that makes the move happen now."""
        if self.moved or self.after is None:
            return False
        self.passed += 1
        return self.passed >= self.after
