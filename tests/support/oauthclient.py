"""A raw OAuth 2.1 MCP client over HTTP, in-process, for the authorization scenarios' tests.

It does what the MCP authorization specification asks of a client, one plain HTTP request at a
time (http.client, no SDK): on a ``401`` it reads ``WWW-Authenticate``, finds the Protected
Resource Metadata (the challenge's ``resource_metadata``, else the path-inserted then the root
well-known URL), refuses metadata whose ``resource`` is not the MCP URL, discovers the
authorization server (RFC 8414 and OpenID, path-inserted then path-appended) and refuses a
document whose ``issuer`` is not the one it asked for, registers (pre-registered credentials
when given, else its Client ID Metadata Document when the server supports them, else dynamic
registration with ``application_type``), picks the scope (the challenge's, else the resource's
``scopes_supported``, else none; ``offline_access`` only when the server lists it), authorizes
with PKCE S256, ``state`` and ``resource``, checks ``state`` and ``iss`` (simple string
comparison; required when advertised), redeems the code with the token endpoint's auth method,
and then sends the token in the header on every request. A ``403 insufficient_scope`` is a
step-up: it authorizes again with the union of what it had and what the challenge names, at most
``step_up_limit`` times for one request. When the protected resource names another
authorization server it registers there afresh.

Every rule is a switch of ``Behaviour``, so a test builds the deliberately wrong client a
scenario exists to catch (ignores ``iss``, drops scopes on step-up, retries forever, reuses a
registration, ...) from the same code. ``OAuthClient.exchanges`` lists every HTTP exchange
(method, URL without query, status) for asserts; ``Refused`` says why the client gave up.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import secrets
from typing import Any, Literal
from urllib.parse import parse_qs, urlencode, urlsplit

import attrs

from support.httpmock import Response, mcp_headers, msg, sse_data

REDIRECT = "http://127.0.0.1:47123/callback"
FORM = "application/x-www-form-urlencoded"


class Refused(Exception):
    """The client stopped, as a careful client does (or could not go on): the reason."""


@attrs.frozen
class PreRegistered:
    client_id: str
    secret: str | None = None
    method: str = "client_secret_basic"


@attrs.frozen
class Behaviour:
    """What the client does at each decision; the defaults are what the specification asks."""

    # where the Protected Resource Metadata is looked for: "spec" (challenge, path-inserted, root),
    # "rootOnly" (the root well-known URL alone), "noChallenge" (ignores resource_metadata)
    prm: Literal["spec", "rootOnly", "noChallenge"] = "spec"
    # where the authorization server metadata is looked for: "spec" (RFC 8414 then OpenID, path
    # inserted then appended), "oauthOnly" (no OpenID), "rootOnly" (ignores the issuer's path)
    asMetadata: Literal["spec", "oauthOnly", "rootOnly"] = "spec"
    checkResource: bool = True  # refuse metadata whose resource is not the MCP URL
    checkIssuer: bool = True  # refuse authorization server metadata whose issuer is not the one asked for
    # iss in the authorization response: "check" (simple string comparison, required when advertised),
    # "ignore", "normalize" (compares without a trailing slash: wrong), "require" (always required: wrong),
    # "href" (compares with the issuer as a URL library writes it back, a slash added to an empty path: wrong)
    iss: Literal["check", "ignore", "normalize", "require", "href"] = "check"
    # the first scope: "spec" (challenge, else the resource's scopes_supported, else none), "supportedFirst"
    # (scopes_supported even when the challenge names a scope), "none" (never a scope), "asMetadata"
    # (the authorization server's scopes_supported)
    scope: Literal["spec", "supportedFirst", "none", "asMetadata"] = "spec"
    # step-up: "union" (what was asked before and the challenge), "missing" (only scopes not held yet)
    stepUp: Literal["union", "missing"] = "union"
    step_up_limit: int = 2  # re-authorizations for one request after a 403 (so at most 3 in all)
    # offline_access: "whenListed" (when the authorization server lists it), "never", "always"
    offlineAccess: Literal["whenListed", "never", "always"] = "whenListed"
    # how it gets a client id: "auto" (pre-registered, else a metadata document when offered, else
    # dynamic registration), "dynamic" (always registers)
    registration: Literal["auto", "dynamic"] = "auto"
    applicationType: bool = True  # send application_type in a registration
    reuseRegistration: bool = False  # keep a client id when the authorization server changes (wrong)
    sendResource: bool = True  # RFC 8707 resource in both requests
    # the token endpoint auth method: None, the one the registration response names; else this one
    # regardless (asked at registration too, and used even without a secret to send: wrong)
    tokenAuthMethod: str | None = None
    # the method asked at registration: None, tokenAuthMethod or one the server supports; else this
    # one even when the server does not list it (RFC 7591 lets the server register another)
    registerMethod: str | None = None
    pkce: bool = True


@attrs.define
class Exchange:
    method: str
    url: str  # without its query
    status: int


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def parse_challenge(header: str | None) -> dict[str, str]:
    """The parameters of a ``Bearer`` challenge (quoted values, commas between)."""
    if not header or not header.lower().startswith("bearer"):
        return {}
    out: dict[str, str] = {}
    rest = header[len("Bearer"):].strip()
    while rest:
        name, _, rest = rest.partition("=")
        rest = rest.lstrip()
        if rest.startswith('"'):
            value, i = "", 1
            while i < len(rest) and rest[i] != '"':
                if rest[i] == "\\" and i + 1 < len(rest):
                    i += 1
                value += rest[i]
                i += 1
            rest = rest[i + 1:]
        else:
            value, _, rest = rest.partition(",")
            rest = "," + rest
        out[name.strip().lower()] = value.strip()
        rest = rest.lstrip().removeprefix(",").lstrip()
    return out


class OAuthClient:
    def __init__(self, mcp_url: str, *, behaviour: Behaviour = Behaviour(), pre_registered: PreRegistered | None = None,
                 document_url: str | None = None, redirect_uri: str = REDIRECT, timeout: float = 10) -> None:
        self.url = mcp_url
        self.b = behaviour
        self.pre = pre_registered
        self.document_url = document_url
        self.redirect_uri = redirect_uri
        self.timeout = timeout
        self.exchanges: list[Exchange] = []
        self.authorizations: list[str | None] = []  # the scope of each authorization request
        self.token: str | None = None
        self.refresh: str | None = None
        self.scopes: list[str] | None = None  # what was asked last (None: no scope parameter)
        self.issuer: str | None = None  # the authorization server the client id belongs to
        self.client: PreRegistered | None = None
        self.next_id = 1

    # ------------------------------------------------------------ HTTP

    def http(self, method: str, url: str, headers: dict[str, str] | None = None, body: bytes = b"") -> Response:
        parts = urlsplit(url)
        assert parts.scheme == "http" and parts.hostname, url
        conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=self.timeout)
        try:
            target = parts.path + ("?" + parts.query if parts.query else "")
            conn.putrequest(method, target or "/", skip_accept_encoding=True)
            for k, v in (headers or {}).items():
                conn.putheader(k, v)
            if method == "POST":
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body if method == "POST" else None)
            r = conn.getresponse()
            got = Response(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
        finally:
            conn.close()
        self.exchanges.append(Exchange(method, url.split("?", 1)[0], got.status))
        return got

    def get_json(self, url: str) -> dict[str, Any] | None:
        r = self.http("GET", url, {"Accept": "application/json"})
        if r.status != 200:
            return None
        try:
            data = r.json()
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    # ------------------------------------------------------------ MCP

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """One MCP request, authorizing (and stepping up) as the answers ask; its JSON-RPC answer."""
        rid, self.next_id = self.next_id, self.next_id + 1
        message = msg(rid, method, params)
        body = json.dumps(message).encode()
        step_ups, fresh, refreshed = 0, 0, False
        while True:
            headers = dict(mcp_headers(message))
            if self.token is not None:
                headers["Authorization"] = f"Bearer {self.token}"
            r = self.http("POST", self.url, headers, body)
            challenge = parse_challenge(r.headers.get("www-authenticate"))
            if r.status == 401:
                fresh += 1
                if fresh > 3:
                    raise Refused(f"{method}: still 401 after authorizing: {r.body[:200]!r}")
                # a refresh first (once); if the token is still refused, discovery from the start:
                # the resource may have moved to another authorization server
                if not refreshed and self.token is not None and self.refresh is not None:
                    refreshed = True
                    if self._refreshed():
                        continue
                self.authorize(challenge, step_up=False)
            elif r.status == 403 and challenge.get("error") == "insufficient_scope":
                step_ups += 1
                if step_ups > self.b.step_up_limit:
                    raise Refused(f"{method}: 403 insufficient_scope again after {step_ups - 1} step-ups: giving up")
                self.authorize(challenge, step_up=True)
            elif r.status == 200:
                return self._answer(r, rid)
            else:
                raise Refused(f"{method}: HTTP {r.status}: {r.body[:300]!r}")

    def _answer(self, r: Response, rid: int) -> dict[str, Any]:
        if r.headers.get("content-type", "").startswith("text/event-stream"):
            for data in sse_data(r.body):
                event = json.loads(data)
                if isinstance(event, dict) and event.get("id") == rid:
                    return event
            raise AssertionError(f"no answer to {rid} in the stream: {r.body[:300]!r}")
        answer = r.json()
        assert isinstance(answer, dict), answer
        return answer

    def session(self, tool: str = "test-tool", arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """What each conformance auth scenario's client does: list the tools, call one."""
        listed = self.request("tools/list")
        assert "result" in listed, listed
        called = self.request("tools/call", {"name": tool, "arguments": arguments or {}})
        assert "result" in called, called
        return called["result"]

    # ------------------------------------------------------------ discovery

    def _origin(self, url: str) -> str:
        p = urlsplit(url)
        return f"{p.scheme}://{p.netloc}"

    def protected_resource(self, challenge: dict[str, str]) -> dict[str, Any]:
        origin, path = self._origin(self.url), urlsplit(self.url).path
        places = []
        if self.b.prm == "spec" and challenge.get("resource_metadata"):
            places.append(challenge["resource_metadata"])
        if self.b.prm != "rootOnly":
            places.append(origin + "/.well-known/oauth-protected-resource" + path.rstrip("/"))
        places.append(origin + "/.well-known/oauth-protected-resource")
        for place in dict.fromkeys(places):
            doc = self.get_json(place)
            if doc is not None:
                if self.b.checkResource and doc.get("resource") != self.url:
                    raise Refused(f"the protected resource metadata names resource {doc.get('resource')!r}, not {self.url!r}")
                return doc
        raise Refused(f"no protected resource metadata at {places}")

    def authorization_server(self, issuer: str) -> dict[str, Any]:
        p = urlsplit(issuer)
        origin, path = f"{p.scheme}://{p.netloc}", p.path.rstrip("/")
        if self.b.asMetadata == "rootOnly":
            path = ""
        places = [origin + "/.well-known/oauth-authorization-server" + path]
        if self.b.asMetadata != "oauthOnly":
            places.append(origin + "/.well-known/openid-configuration" + path)
            if path:
                places.append(origin + path + "/.well-known/openid-configuration")
        for place in places:
            doc = self.get_json(place)
            if doc is not None:
                if self.b.checkIssuer and doc.get("issuer") != issuer:
                    raise Refused(f"the authorization server metadata at {place} names issuer {doc.get('issuer')!r},"
                                  f" not {issuer!r} (RFC 8414 3.3)")
                return doc
        raise Refused(f"no authorization server metadata at {places}")

    # ------------------------------------------------------------ registration

    def register(self, meta: dict[str, Any], issuer: str) -> PreRegistered:
        if self.client is not None and (self.issuer == issuer or self.b.reuseRegistration):
            return self.client
        methods = meta.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        if self.pre is not None:
            return self.pre
        if self.b.registration == "auto" and self.document_url and meta.get("client_id_metadata_document_supported"):
            return PreRegistered(self.document_url, None, "none")
        endpoint = meta.get("registration_endpoint")
        if not endpoint:
            raise Refused("no pre-registered credentials, no metadata document accepted and no registration endpoint")
        method = self.b.registerMethod or self.b.tokenAuthMethod or next(m for m in ("client_secret_basic", "client_secret_post", "none", *methods)
                                                if m in methods)
        body: dict[str, Any] = {"client_name": "raw oauth test client", "redirect_uris": [self.redirect_uri],
                                "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
                                "token_endpoint_auth_method": method}
        if self.b.applicationType:
            body["application_type"] = "native"
        r = self.http("POST", endpoint, {"Content-Type": "application/json", "Accept": "application/json"},
                      json.dumps(body).encode())
        if r.status != 201:
            raise Refused(f"registration refused: {r.status} {r.body[:300]!r}")
        got = r.json()
        return PreRegistered(got["client_id"], got.get("client_secret"), got.get("token_endpoint_auth_method", method))

    # ------------------------------------------------------------ authorization

    def _first_scope(self, challenge: dict[str, str], prm: dict[str, Any], meta: dict[str, Any]) -> list[str] | None:
        from_challenge = challenge.get("scope", "").split() or None
        supported = prm.get("scopes_supported")
        from_prm = [s for s in supported if isinstance(s, str)] if isinstance(supported, list) and supported else None
        if self.b.scope == "none":
            return None
        if self.b.scope == "asMetadata":
            listed = meta.get("scopes_supported")
            return [s for s in listed if s != "offline_access"] if isinstance(listed, list) and listed else None
        if self.b.scope == "supportedFirst":
            return from_prm or from_challenge
        return from_challenge or from_prm

    def authorize(self, challenge: dict[str, str], *, step_up: bool) -> None:
        prm = self.protected_resource(challenge)
        servers = prm.get("authorization_servers")
        if not isinstance(servers, list) or not servers or not isinstance(servers[0], str):
            raise Refused("the protected resource metadata names no authorization server")
        issuer = servers[0]
        meta = self.authorization_server(issuer)
        client = self.register(meta, issuer)
        self.client, self.issuer = client, issuer
        if step_up:
            wanted = challenge.get("scope", "").split()
            held = self.scopes or []
            scopes: list[str] | None = list(dict.fromkeys(held + wanted)) if self.b.stepUp == "union" \
                else [s for s in wanted if s not in held]
        else:
            scopes = self._first_scope(challenge, prm, meta)
        listed = meta.get("scopes_supported")
        offline = self.b.offlineAccess == "always" or (
            self.b.offlineAccess == "whenListed" and isinstance(listed, list) and "offline_access" in listed)
        if offline and scopes is not None and "offline_access" not in scopes:
            scopes = [*scopes, "offline_access"]
        elif offline and scopes is None:
            scopes = ["offline_access"]
        scope = " ".join(scopes) if scopes else None
        self.authorizations.append(scope)
        verifier, code_challenge = pkce_pair()
        state = secrets.token_urlsafe(16)
        params = {"response_type": "code", "client_id": client.client_id, "redirect_uri": self.redirect_uri,
                  "state": state}
        if self.b.pkce:
            params.update(code_challenge=code_challenge, code_challenge_method="S256")
        if scope is not None:
            params["scope"] = scope
        if self.b.sendResource:
            params["resource"] = self.url
        r = self.http("GET", meta["authorization_endpoint"] + "?" + urlencode(params))
        if r.status != 302:
            raise Refused(f"authorization refused: {r.status} {r.body[:300]!r}")
        location = r.headers["location"]
        got = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
        if "error" in got:
            raise Refused(f"authorization refused: {got['error']}: {got.get('error_description')}")
        if got.get("state") != state:
            raise Refused("the authorization response's state is not the one sent")
        self._check_iss(got.get("iss"), meta)
        form = {"grant_type": "authorization_code", "code": got["code"], "redirect_uri": self.redirect_uri}
        if self.b.pkce:
            form["code_verifier"] = verifier
        tokens = self._token(meta, client, form)
        self.token, self.refresh = tokens["access_token"], tokens.get("refresh_token")
        self.scopes = scopes

    def _check_iss(self, iss: str | None, meta: dict[str, Any]) -> None:
        mode = self.b.iss
        if mode == "ignore":
            return
        if iss is None:
            if mode == "require" or meta.get("authorization_response_iss_parameter_supported") is True:
                raise Refused("the authorization response has no iss, though the server advertises it (RFC 9207)")
            return
        expected = meta.get("issuer")
        if mode == "href" and isinstance(expected, str) and not urlsplit(expected).path:
            expected += "/"
        same = iss.rstrip("/") == str(expected).rstrip("/") if mode == "normalize" else iss == expected
        if not same:
            raise Refused(f"the authorization response's iss {iss!r} is not the issuer {expected!r} (RFC 9207)")

    def _token(self, meta: dict[str, Any], client: PreRegistered, form: dict[str, str]) -> dict[str, Any]:
        if self.b.sendResource:
            form["resource"] = self.url
        headers = {"Content-Type": FORM, "Accept": "application/json"}
        method = self.b.tokenAuthMethod or client.method
        if method == "client_secret_basic":
            pair = f"{client.client_id}:{client.secret or ''}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        else:
            form["client_id"] = client.client_id
            if method == "client_secret_post":
                form["client_secret"] = client.secret or ""
        r = self.http("POST", meta["token_endpoint"], headers, urlencode(form).encode())
        if r.status != 200:
            raise Refused(f"token request refused: {r.status} {r.body[:300]!r}")
        tokens = r.json()
        assert isinstance(tokens, dict) and tokens.get("access_token"), tokens
        return tokens

    def _refreshed(self) -> bool:
        """A refresh at the authorization server the token came from; False if refused."""
        assert self.issuer is not None and self.client is not None and self.refresh is not None
        try:
            meta = self.authorization_server(self.issuer)
            tokens = self._token(meta, self.client, {"grant_type": "refresh_token", "refresh_token": self.refresh})
        except Refused:
            self.refresh = None
            return False
        self.token, self.refresh = tokens["access_token"], tokens.get("refresh_token", self.refresh)
        return True


__all__ = ["Behaviour", "Exchange", "OAuthClient", "PreRegistered", "REDIRECT", "Refused", "parse_challenge", "pkce_pair"]
