"""Client checks of the authorization flow (MCP authorization, OAuth 2.1 and the RFCs it names),
judged from the facts of each exchange the HTTP shell journals as an ``auth`` event.

Sans-I/O like ``checks``: ``AuthChecker.exchange`` takes the facts of one exchange (see
``core/auth/facts.py``: no secret, codes and tokens as fingerprints) and returns ``Finding``s;
``passed`` hears of each MCP request the gate let through. It keeps what the rules need: the last
challenge and protected resource metadata the client saw, the issuers whose metadata lied about
their ``issuer``, the codes handed out with a bad ``iss``, which authorization server registered
which client, the scopes asked and granted so far, the access tokens issued, and the ``403``s
per operation. One process is one client: a second client of the same mock counts as the first
(a session's processes are judged each on its own, as the other client checks are).

The judging rules, each with its check id (``checks.CHECKS`` has the levels and spec sections):

- an authorization request without ``code_challenge`` (``auth.pkce.missing``), with a method
  other than ``S256`` (``auth.pkce.method``), without ``state`` (``auth.state.missing``);
- an authorization or token request (a refresh included) without ``resource``
  (``auth.resource.missing``) or with another than the MCP URL (``auth.resource.mismatch``);
  authorizing or registering after protected resource metadata whose ``resource`` was not the MCP
  URL (``auth.resource.unvalidated``);
- the scope of a first authorization: the last ``401``'s challenge, else every scope of the
  metadata's ``scopes_supported`` (``auth.scope.order`` when one is missing), nothing else
  (``auth.scope.invented``: a scope no challenge, ``scopes_supported``, earlier request or grant
  offered; ``offline_access`` only when the authorization server lists it,
  ``auth.offlineAccess.unsupported``); a step-up after a ``403`` asks the challenged scopes
  (``auth.scope.order``) and keeps those granted before (``auth.scope.dropped``); more than
  ``RETRY_LIMIT`` ``403``s for one operation, or an authorization after the ``RETRY_LIMIT``-th,
  is ``auth.scope.retryLimit``;
- a code redeemed after an authorization response whose ``iss`` was not the metadata's
  ``issuer`` as a string, or was missing though advertised (``auth.iss.unchecked``);
- authorize, register or token requests at an authorization server after its metadata named
  another ``issuer`` (``auth.issuer.mismatch``); a client id registered at one authorization
  server used at another (``auth.registration.stale``); a registration without
  ``application_type`` (``auth.registration.applicationType``); with ``auth.expect.registration``,
  dynamic registration instead of the client's metadata document (``auth.registration.cimdUnused``)
  or instead of its pre-registered credentials (``auth.registration.unexpected``); a token request
  authenticated otherwise than the registration response's ``token_endpoint_auth_method``, which
  the server may have replaced (``auth.registration.ignored``);
- at the MCP endpoint: a token in the query (``auth.token.query``), a token this server never
  issued (``auth.token.foreign``), no token once the client had one (``auth.token.dropped``).
"""

from __future__ import annotations

from typing import Any

from mockmcp.verify.checks import Finding
from mockmcp.wire.redaction import fingerprint, split_credential

RETRY_LIMIT = 3  # 403 insufficient_scope answers for one operation before the client must give up
MAX_REMEMBERED = 10_000  # codes, tokens and clients remembered (the oldest forgotten past it)
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def _scopes(value: Any) -> list[str]:
    return [s for s in value if isinstance(s, str)] if isinstance(value, list) else []


def _words(scopes: list[str]) -> str:
    return " ".join(scopes) if scopes else "(none)"


def _remember(table: dict[str, Any], key: str, value: Any) -> None:
    table[key] = value
    if len(table) > MAX_REMEMBERED:
        del table[next(iter(table))]


def _method_ignored(known: tuple[str, str] | None, used: Any) -> Finding | None:
    """A dynamic client authenticates the way its registration response says (RFC 7591 3.2.1: the
    server may replace the method asked, and the response names the one registered)."""
    if known is None or not isinstance(used, str) or used == known[1]:
        return None
    asked, registered = known
    why = f"asked {asked} and was registered with {registered}" if asked != registered else f"registered {registered}"
    return Finding("auth.registration.ignored", f"a token request authenticated with {used}, though the client {why}"
                   " (the registration response's token_endpoint_auth_method): use the registered values")


class AuthChecker:
    def __init__(self, expect_registration: str = "any") -> None:
        self.expect = expect_registration  # auth.expect.registration: any, document, preRegistered
        self.prm_bad: str | None = None  # the resource of the last protected resource metadata, when not the MCP URL
        self.prm_scopes: list[str] | None = None  # the last protected resource metadata's scopes_supported
        self.bad_issuers: set[str] = set()  # authorization servers whose last metadata named another issuer
        self.challenge: list[str] | None = None  # the scopes the last 401 or 403 named
        self.step_up: tuple[str | None, list[str]] | None = None  # the 403 (operation, scopes) not yet authorized for
        self.held: list[str] = []  # the scopes of the last token issued
        self.asked: list[str] = []  # every scope asked in an authorization so far
        self.bad_codes: dict[str, str] = {}  # code fingerprint -> what was wrong with its response's iss
        self.registered: dict[str, str] = {}  # dynamic client fingerprint -> the issuer that registered it
        self.methods: dict[str, tuple[str, str]] = {}  # dynamic client fingerprint -> (method asked, registered)
        self.issued: dict[str, int] = {}  # access token fingerprint -> its number, in the order issued
        # A request without a token once one was issued: how many tokens were issued then. It is a
        # drop when an older token comes back after it (the client held it); a newer one may be another
        # client's, or the same one's after authorizing anew: no finding then (a process is one client, but
        # a second client of the mock starts without a token too).
        self.tokenless_at: int | None = None
        self.numbered = 0  # access tokens issued so far
        self.forbidden: dict[str | None, int] = {}  # operation -> 403s since it last got through
        self.once: set[tuple[str, str]] = set()  # (check, about) already reported

    # ------------------------------------------------------------ entry points

    def exchange(self, facts: dict[str, Any]) -> list[Finding]:
        """The findings of one journalled authorization exchange (its ``auth`` event's fields)."""
        kind = facts.get("exchange")
        out: list[Finding] = []
        extra = {"http": f"{facts.get('method')} {facts.get('path')} {facts.get('status')}"}
        if kind == "mcp":
            self._mcp(facts, out)
        elif kind == "resourceMetadata":
            ok = facts.get("resourceOk")
            if ok is not None:
                self.prm_bad = None if ok else str(facts.get("resource"))
                self.prm_scopes = _scopes(facts["scopesSupported"]) if isinstance(facts.get("scopesSupported"), list) else None
        elif kind in ("oauth", "openid", "openidAppended"):
            if facts.get("issuerOk") is False:
                self.bad_issuers.add(str(facts.get("issuer")))
            elif facts.get("issuerOk") is True:
                self.bad_issuers.discard(str(facts.get("issuer")))
        elif kind in ("authorize", "token", "register") and not facts.get("malformed"):
            self._at_server(kind, facts, out)
        for f in out:
            f.extra = extra
        return out

    def passed(self, method: str, params: Any, authorization: str | None) -> list[Finding]:
        """An MCP request the gate let through (its ``Authorization`` header as sent): its
        operation got the scopes it needs, and the token it carries is the client's."""
        key = _NAMED.get(method)
        name = params.get(key) if key is not None and isinstance(params, dict) else None
        self.forbidden.pop(f"{method} {name}" if isinstance(name, str) else method, None)
        self.forbidden.pop(None, None)
        out: list[Finding] = []
        parts = split_credential(authorization) if authorization is not None and self.tokenless_at is not None else None
        if parts is not None:
            self._presented(fingerprint(parts[1]), out)
        return out

    def _presented(self, token: str, out: list[Finding]) -> None:
        number = self.issued.get(token)
        if self.tokenless_at is None or number is None:
            return
        if number < self.tokenless_at:
            out.append(Finding("auth.token.dropped", "an MCP request went without an Authorization header while the"
                               f" client held an access token (fingerprint {token}), which it sent again later: every"
                               " request carries it"))
        self.tokenless_at = None

    # ------------------------------------------------------------ the MCP endpoint

    def _mcp(self, facts: dict[str, Any], out: list[Finding]) -> None:
        bearer, status = facts.get("bearer"), facts.get("status")
        if bearer == "query":
            out.append(Finding("auth.token.query", "an access token in the query string of an MCP request: send it only"
                               " in the Authorization header"))
        elif bearer == "none" and self.issued and self.tokenless_at is None:
            self.tokenless_at = self.numbered
        elif bearer == "unknown" and facts.get("presented") not in self.issued:
            out.append(Finding("auth.token.foreign", f"an MCP request with a bearer token (fingerprint {facts.get('presented')})"
                               " this server's authorization server never issued"))
        if isinstance(facts.get("presented"), str):
            self._presented(facts["presented"], out)
        if isinstance(facts.get("challenge"), list):
            self.challenge = _scopes(facts["challenge"])
        if status == 403:
            op = facts.get("operation") if isinstance(facts.get("operation"), str) else None
            n = self.forbidden.get(op, 0) + 1
            self.forbidden[op] = n
            self.step_up = (op, list(self.challenge or []))
            if n > RETRY_LIMIT:
                self._retry_limit(op, f"{op or 'a request'} was answered 403 insufficient_scope {n} times: after"
                                  f" {RETRY_LIMIT} the client should treat it as a permanent authorization failure", out)
        elif status == 401:
            self.step_up = None

    def _retry_limit(self, op: str | None, text: str, out: list[Finding]) -> None:
        if ("auth.scope.retryLimit", str(op)) not in self.once:
            self.once.add(("auth.scope.retryLimit", str(op)))
            out.append(Finding("auth.scope.retryLimit", text))

    # ------------------------------------------------------------ the authorization server

    def _at_server(self, kind: str, facts: dict[str, Any], out: list[Finding]) -> None:
        issuer = str(facts.get("issuer"))
        if issuer in self.bad_issuers and ("auth.issuer.mismatch", issuer) not in self.once:
            self.once.add(("auth.issuer.mismatch", issuer))
            out.append(Finding("auth.issuer.mismatch", f"a {kind} request to {issuer} after its metadata named another"
                               " issuer: the client must not use metadata whose issuer is not the one it was fetched for"))
        client = facts.get("client")
        if isinstance(client, str) and kind != "register":
            home = self.registered.get(client)
            if home is not None and home != issuer and ("auth.registration.stale", client + issuer) not in self.once:
                self.once.add(("auth.registration.stale", client + issuer))
                out.append(Finding("auth.registration.stale", f"a {kind} request to {issuer} with a client id {home}"
                                   " registered: register again with each authorization server"))
        if kind in ("authorize", "register") and self.prm_bad is not None and ("auth.resource.unvalidated", "") not in self.once:
            self.once.add(("auth.resource.unvalidated", ""))
            out.append(Finding("auth.resource.unvalidated", f"a {kind} request after protected resource metadata whose"
                               f" resource is {self.prm_bad!r}, not this MCP server's URL: that metadata must not be used"))
        if kind == "register":
            self._register(issuer, facts, out)
            return
        if kind == "token" and isinstance(client, str) and ("auth.registration.ignored", client) not in self.once:
            ignored = _method_ignored(self.methods.get(client), facts.get("authMethod"))
            if ignored is not None:
                self.once.add(("auth.registration.ignored", client))
                out.append(ignored)
        self._resource(kind, facts, out)
        if kind == "authorize":
            self._authorize(facts, out)
            return
        code = facts.get("code")
        if isinstance(code, str) and code in self.bad_codes:
            out.append(Finding("auth.iss.unchecked", f"the token request redeems the code of an authorization response"
                               f" whose {self.bad_codes.pop(code)}: the client must reject that response (RFC 9207),"
                               " never send its code to a token endpoint"))
        issued = facts.get("issued")
        if isinstance(issued, str):
            _remember(self.issued, issued, self.numbered)
            self.numbered += 1
            self.held = _scopes(facts.get("granted"))

    def _register(self, issuer: str, facts: dict[str, Any], out: list[Finding]) -> None:
        if facts.get("applicationType") is None:
            out.append(Finding("auth.registration.applicationType", "a dynamic client registration without"
                               " application_type (native for a loopback or custom-scheme redirect, web otherwise)"))
        if self.expect == "document" and facts.get("cimd"):
            out.append(Finding("auth.registration.cimdUnused", "dynamic client registration, though the authorization"
                               " server supports Client ID Metadata Documents and the client has one: use its URL as the"
                               " client_id"))
        elif self.expect == "preRegistered":
            out.append(Finding("auth.registration.unexpected", "dynamic client registration, though the client was given"
                               " pre-registered credentials: use them"))
        client = facts.get("client")
        if isinstance(client, str):
            _remember(self.registered, client, issuer)
            method = facts.get("registeredMethod")
            if isinstance(method, str):
                _remember(self.methods, client, (str(facts.get("askedMethod")), method))

    def _resource(self, kind: str, facts: dict[str, Any], out: list[Finding]) -> None:
        what = "the authorization request" if kind == "authorize" else f"the token request ({facts.get('grant')})"
        if facts.get("resource") is None:
            out.append(Finding("auth.resource.missing", f"{what} has no resource parameter: send the MCP server's"
                               " canonical URL (RFC 8707) in both the authorization and the token request"))
        elif facts.get("resourceOk") is False:
            out.append(Finding("auth.resource.mismatch", f"{what} names resource {facts.get('resource')!r}, not the MCP"
                               f" server's canonical URL {facts.get('canonical')!r}"))

    def _authorize(self, facts: dict[str, Any], out: list[Finding]) -> None:
        pkce = facts.get("pkce")
        if pkce is None:
            out.append(Finding("auth.pkce.missing", "an authorization request without code_challenge: PKCE (S256) is"
                               " required"))
        elif pkce != "S256":
            out.append(Finding("auth.pkce.method", f"code_challenge_method {pkce}: use S256"))
        if not facts.get("state"):
            out.append(Finding("auth.state.missing", "an authorization request without state: send one and check it in"
                               " the response"))
        if self.expect == "preRegistered" and facts.get("clientKind") not in ("preRegistered", None) and \
                ("auth.registration.unexpected", "authorize") not in self.once:
            self.once.add(("auth.registration.unexpected", "authorize"))
            out.append(Finding("auth.registration.unexpected", f"an authorization request as a {facts.get('clientKind')}"
                               " client, though the client was given pre-registered credentials"))
        self._scope(facts, out)
        code, iss = facts.get("code"), facts.get("iss")
        if isinstance(code, str):
            if iss == "wrong":
                _remember(self.bad_codes, code, "iss is not the authorization server's issuer (compared as a string,"
                          " without normalizing)")
            elif iss == "missing" and facts.get("issAdvertised"):
                _remember(self.bad_codes, code, "iss is missing, though the metadata advertises"
                          " authorization_response_iss_parameter_supported")

    def _scope(self, facts: dict[str, Any], out: list[Finding]) -> None:
        asked = _scopes(facts.get("scope"))
        listed = bool(facts.get("offlineListed"))
        if "offline_access" in asked and not listed:
            out.append(Finding("auth.offlineAccess.unsupported", "the authorization asks offline_access, which the"
                               " authorization server's scopes_supported does not list"))
        step_up, self.step_up = self.step_up, None
        challenge = self.challenge or []
        offered = set(challenge) | set(self.prm_scopes or ()) | set(self.asked) | set(self.held) | {"offline_access"}
        invented = [s for s in asked if s not in offered]
        if invented:
            where = (f"the challenge named {_words(challenge)}, scopes_supported is {_words(self.prm_scopes or [])}"
                     if challenge or self.prm_scopes else "neither the challenge nor scopes_supported defines a scope:"
                     " omit the scope parameter")
            out.append(Finding("auth.scope.invented", f"the authorization asks {_words(invented)}, which nothing offered"
                               f" ({where})"))
        if step_up is not None:
            op, wanted = step_up
            count = self.forbidden.get(op, 0)
            if count >= RETRY_LIMIT:
                self._retry_limit(op, f"another authorization after {count} answers 403 insufficient_scope to"
                                  f" {op or 'a request'}: retry a few times at most, then treat it as a permanent failure",
                                  out)
            missing = [s for s in wanted if s not in asked]
            if missing:
                out.append(Finding("auth.scope.order", f"the step-up authorization asks {_words(asked)} without"
                                   f" {_words(missing)}, which the 403 challenge named"))
            dropped = [s for s in self.held if s not in asked]
            if dropped:
                out.append(Finding("auth.scope.dropped", f"the step-up authorization asks {_words(asked)} and drops"
                                   f" {_words(dropped)}, granted before: ask the union of the scopes held and the"
                                   " challenged ones"))
        elif challenge:
            missing = [s for s in challenge if s not in asked]
            before = set(challenge) | set(self.asked) | set(self.held) | {"offline_access"}
            beyond = [s for s in asked if s not in before and s in (self.prm_scopes or ())]
            if missing or beyond:
                why = f"without {_words(missing)}" if missing else f"with {_words(beyond)} from scopes_supported"
                out.append(Finding("auth.scope.order", f"the authorization asks {_words(asked)} {why}, though the"
                                   f" WWW-Authenticate challenge named {_words(challenge)}: the challenge's scope comes"
                                   " first, scopes_supported only when it names none"))
        elif self.prm_scopes:
            missing = [s for s in self.prm_scopes if s not in asked]
            if missing:
                out.append(Finding("auth.scope.order", f"the authorization asks {_words(asked)} without {_words(missing)}:"
                                   " with no scope in the challenge, ask every scope of scopes_supported"))
        self.asked = list(dict.fromkeys([*self.asked, *asked]))
