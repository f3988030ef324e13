"""The built-in authorization server: discovery metadata, the authorization endpoint, the token
endpoint and dynamic registration (OAuth 2.1, RFC 8414, RFC 7591, RFC 7636, RFC 8707, RFC 9207).

No user takes part: an authorization request is approved (or denied, or narrowed to fewer scopes)
as the scenario says, and answered with a ``302`` to the client's redirect URI carrying ``code``,
``state`` and ``iss`` (each variant of ``iss`` scriptable). PKCE S256 is required; ``resource``
is checked in both requests and becomes the token's audience. Every refusal is an ``OAuthError``
or a ``RedirectError`` raised where it is found; ``answers.answer_for`` builds its answer.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any, Callable, Mapping, Sequence

from mockmcp.core.auth.answers import (NO_STORE, HttpAnswer, OAuthError, RedirectError, answer_for, json_answer, redirect,
                                       with_query)
from mockmcp.core.auth.clients import Client, Clients
from mockmcp.core.auth.live import Pending
from mockmcp.core.auth.resource import MCP_PATH
from mockmcp.core.auth.tokens import Grant, TokenTable
from mockmcp.scenario.model.auth import Auth

_VERIFIER = re.compile(r"[A-Za-z0-9\-._~]{43,128}")
_CHALLENGE = re.compile(r"[A-Za-z0-9\-_]{43}")
WRONG_ISSUER = "https://wrong-issuer.invalid"


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode("ascii")


class AuthorizationServer:
    def __init__(self, config: Auth, tokens: TokenTable, clients: Clients, time_scale: float, *, tag: str = "",
                 mcp_origin: Callable[[str], str] = lambda origin: origin) -> None:
        self.auth = config
        self.config = config.server
        self.tokens = tokens
        self.clients = clients
        self.time_scale = time_scale
        self.tag = tag  # marks what it issues: after a migration the resource refuses the first server's tokens
        self.mcp_origin = mcp_origin  # this server's origin -> the MCP server's (another port on a second origin)
        self.known_scopes = frozenset(config.scopes)
        p = self.config.issuerPath
        self.endpoints = {"authorize": p + "/authorize", "token": p + "/token", "register": p + "/register",
                          "jwks": p + "/jwks"}
        places = {"oauth": "/.well-known/oauth-authorization-server" + p, "openid": "/.well-known/openid-configuration" + p,
                  "openidAppended": p + "/.well-known/openid-configuration"}
        self.metadata_paths = {places[k]: k for k in self.config.metadataAt}

    def issuer(self, origin: str) -> str:
        return origin + self.config.issuerPath

    def claimed_issuer(self, origin: str) -> str:
        """The ``issuer`` the metadata says (the scenario's, on purpose, else the real one); RFC 9207's
        ``iss`` is this very string."""
        return self.config.issuer if self.config.issuer is not None else self.issuer(origin)

    # ------------------------------------------------------------ discovery (RFC 8414, OpenID)

    def metadata(self, kind: str, origin: str) -> dict[str, Any]:
        c = self.config
        doc: dict[str, Any] = {
            "issuer": self.claimed_issuer(origin),
            "authorization_endpoint": origin + self.endpoints["authorize"],
            "token_endpoint": origin + self.endpoints["token"],
        }
        if c.registration.dynamic:
            doc["registration_endpoint"] = origin + self.endpoints["register"]
        doc["response_types_supported"] = ["code"]
        doc["response_modes_supported"] = ["query"]
        doc["grant_types_supported"] = ["authorization_code", "refresh_token"]
        doc["token_endpoint_auth_methods_supported"] = list(c.tokenEndpointAuthMethods)
        if c.codeChallengeMethods is not None:
            doc["code_challenge_methods_supported"] = list(c.codeChallengeMethods)
        doc["scopes_supported"] = list(c.scopesSupported if c.scopesSupported is not None else self.auth.scopes)
        if c.issParameterSupported is not None:
            doc["authorization_response_iss_parameter_supported"] = c.issParameterSupported
        if c.registration.clientIdMetadataDocuments:
            doc["client_id_metadata_document_supported"] = True
        if kind != "oauth":
            doc["jwks_uri"] = origin + self.endpoints["jwks"]
            doc["subject_types_supported"] = ["public"]
            doc["id_token_signing_alg_values_supported"] = ["RS256"]
        return doc

    # ------------------------------------------------------------ the authorization endpoint

    def _iss(self, origin: str) -> str | None:
        variant = self.config.authorize.iss
        claimed = self.claimed_issuer(origin)
        if variant == "missing":
            return None
        if variant == "wrong":
            return WRONG_ISSUER
        if variant == "normalized":  # equal after RFC 3986 normalization, not as a string
            return claimed[:-1] if claimed.endswith("/") else claimed + "/"
        return claimed

    def authorize(self, params: Mapping[str, str], origin: str) -> HttpAnswer | Pending:
        """An authorization request (no user): a ``302`` to the client with a code, or its refusal
        (or, with ``decision: wait``, the request to park for the control channel)."""
        client_id = params.get("client_id")
        if client_id is None:
            raise OAuthError("invalid_request", "client_id is required")
        client = self.clients.find(client_id)
        if client is None:
            raise OAuthError("invalid_client", f"unknown client {client_id!r} (not registered, pre-registered or a"
                             " Client ID Metadata Document this server has)")
        redirect_uri = self.clients.redirect_for(client, params.get("redirect_uri"))
        # from here on a refusal goes back to the client's redirect URI (RFC 6749 4.1.2.1)
        state, iss = params.get("state"), self._iss(origin)

        def refuse(error: str, description: str) -> RedirectError:
            return RedirectError(error, description, redirect_uri, state, iss)

        if params.get("response_type") != "code":
            raise refuse("unsupported_response_type", "response_type must be code")
        challenge, method = params.get("code_challenge"), params.get("code_challenge_method")
        if challenge is None:
            raise refuse("invalid_request", "code_challenge is required (PKCE, OAuth 2.1 4.1.1)")
        if method != "S256":
            raise refuse("invalid_request", f"code_challenge_method must be S256 (got {method or 'none, which means plain'})")
        if not _CHALLENGE.fullmatch(challenge):
            raise refuse("invalid_request", "code_challenge is not an S256 challenge (43 base64url characters)")
        resource = self._resource(params.get("resource"), origin, refuse)
        requested = tuple((params.get("scope") or "").split())
        unknown = [s for s in requested if s not in self.known_scopes]
        if unknown:
            raise refuse("invalid_scope", f"unknown scope {unknown[0]!r}")
        decision = self.config.authorize
        if decision.decision == "deny":
            raise refuse("access_denied", "the resource owner denied the request (scripted)")
        if decision.decision == "wait":
            return Pending(client.client_id, requested, resource, redirect_uri, params.get("redirect_uri"), state, iss,
                           challenge, self.tag)
        return self._approve(Pending(client.client_id, requested, resource, redirect_uri, params.get("redirect_uri"),
                                     state, iss, challenge, self.tag), decision.grantScopes)

    def settle(self, pending: Pending) -> HttpAnswer:
        """The answer to a parked request once the control channel decided (or its time ran out)."""
        if pending.decision != "approve":
            return answer_for(RedirectError("access_denied", pending.description or "the resource owner denied the request"
                                            " (the control channel)", pending.redirect_uri, pending.state, pending.iss))
        grant = pending.grant_scopes if pending.grant_scopes is not None else self.config.authorize.grantScopes
        return self._approve(pending, grant)

    def _approve(self, p: Pending, grant_scopes: Sequence[str] | None) -> HttpAnswer:
        granted = p.scopes if grant_scopes is None else tuple(s for s in p.scopes if s in grant_scopes)
        code = self.tokens.issue_code(p.client_id, granted, p.resource, self.config.tokens.codeLifetime.seconds * self.time_scale,
                                      p.given_redirect, p.challenge, self.tag)
        answer = {"code": code}
        if p.state is not None:
            answer["state"] = p.state
        if p.iss is not None:
            answer["iss"] = p.iss
        return redirect(with_query(p.redirect_uri, answer))

    def _resource(self, given: str | None, origin: str, refuse: Any) -> str:
        """RFC 8707: the resource the token is for, which must be this MCP server's URL."""
        mcp = self.mcp_origin(origin) + MCP_PATH
        if given is None:
            if self.config.authorize.resourceParameter == "required":
                raise refuse("invalid_target", f"resource is required: the MCP server's URL, {mcp} (RFC 8707)")
            return mcp
        if given != mcp:
            raise refuse("invalid_target", f"resource {given!r} is not a resource of this server (it serves {mcp})")
        return mcp

    # ------------------------------------------------------------ the token endpoint

    def token(self, form: Mapping[str, str], authorization: str | None, origin: str) -> HttpAnswer:
        grant_type = form.get("grant_type")
        if grant_type is None:
            raise OAuthError("invalid_request", "grant_type is required")
        if grant_type not in ("authorization_code", "refresh_token"):
            raise OAuthError("unsupported_grant_type", f"grant_type {grant_type!r} is not supported")
        client = self.clients.authenticate(form, authorization)
        if grant_type not in client.grant_types:
            raise OAuthError("unauthorized_client", f"the client did not register the {grant_type} grant")
        if grant_type == "authorization_code":
            return self._code_grant(form, client, origin)
        return self._refresh_grant(form, client, origin)

    def _code_grant(self, form: Mapping[str, str], client: Client, origin: str) -> HttpAnswer:
        code = form.get("code")
        if code is None:
            raise OAuthError("invalid_request", "code is required")
        verifier = form.get("code_verifier")
        found = self.tokens.redeem_code(code, client.client_id, self.tag)
        if found.redirect_uri is not None and form.get("redirect_uri", found.redirect_uri) != found.redirect_uri:
            raise OAuthError("invalid_grant", "redirect_uri differs from the authorization request's")
        if verifier is None:
            raise OAuthError("invalid_grant", "code_verifier is required (PKCE)")
        if not _VERIFIER.fullmatch(verifier):
            bad = sorted(set(re.sub(r"[A-Za-z0-9\-._~]", "", verifier)))[:5]
            raise OAuthError("invalid_request", f"code_verifier is not an RFC 7636 verifier (4.1): 43 to 128 characters of"
                             f" A-Z a-z 0-9 - . _ ~, got {len(verifier)} characters"
                             + (f" with {' '.join(map(repr, bad))}" if bad else ""))
        if s256(verifier) != found.challenge:
            raise OAuthError("invalid_grant", "code_verifier does not match the code_challenge (PKCE S256)")
        self._token_resource(form.get("resource"), found.resource, origin)
        body = self._issue(client, found.scopes, found.resource)
        found.issued.extend(t for t in (body.get("access_token"), body.get("refresh_token")) if isinstance(t, str))
        return json_answer(200, body, NO_STORE)

    def _refresh_grant(self, form: Mapping[str, str], client: Client, origin: str) -> HttpAnswer:
        token = form.get("refresh_token")
        if token is None:
            raise OAuthError("invalid_request", "refresh_token is required")
        grant = self.tokens.refresh_grant(token, client.client_id, self.tag)
        t = self.config.tokens
        if t.refresh == "reject":
            raise OAuthError("invalid_grant", "this server refuses refresh tokens (scripted): authorize again")
        given = form.get("resource")
        if given is not None:  # (a refresh is bound to its grant's resource already: asked only to match it)
            self._token_resource(given, grant.resource, origin)
        scopes = grant.scopes
        asked = form.get("scope")
        if asked is not None:
            wanted = tuple(asked.split())
            beyond = [s for s in wanted if s not in grant.scopes]
            if beyond:
                raise OAuthError("invalid_scope", f"scope {beyond[0]!r} was not granted to this refresh token"
                                 " (a refresh may narrow scopes, never widen them)")
            scopes = wanted
        if t.refreshScopes is not None:
            scopes = tuple(t.refreshScopes)
        body = self._issue(client, scopes, grant.resource, refresh=grant if t.refresh == "reuse" else None, old=token)
        if t.refresh == "rotate":
            grant.revoked = True
        return json_answer(200, body, NO_STORE)

    def _token_resource(self, given: str | None, bound: str, origin: str) -> None:
        if given is None:
            if self.config.authorize.resourceParameter == "required":
                raise OAuthError("invalid_target", f"resource is required: the MCP server's URL,"
                                 f" {self.mcp_origin(origin) + MCP_PATH} (RFC 8707)")
            return
        if given != bound:
            raise OAuthError("invalid_target", f"resource {given!r} is not the resource this grant is for ({bound})")

    def _issue(self, client: Client, scopes: tuple[str, ...], resource: str, *, refresh: Grant | None = None,
               old: str | None = None) -> dict[str, Any]:
        t = self.config.tokens
        lifetime = t.lifetime.seconds * self.time_scale
        access = self.tokens.issue_access(client.client_id, scopes, resource, lifetime, self.tag)
        body: dict[str, Any] = {"access_token": access, "token_type": "Bearer", "expires_in": max(1, round(t.lifetime.seconds)),
                                "scope": " ".join(scopes)}
        wants = t.refreshTokens == "always" or (t.refreshTokens == "offlineAccess" and "offline_access" in scopes)
        if refresh is not None and old is not None:
            body["refresh_token"] = old  # "reuse": the same refresh token again
        elif wants and "refresh_token" in client.grant_types:
            life = None if t.refreshLifetime is None else t.refreshLifetime.seconds * self.time_scale
            body["refresh_token"] = self.tokens.issue_refresh(client.client_id, scopes, resource, life, self.tag)
        return body

    # ------------------------------------------------------------ dynamic registration (RFC 7591)

    def register(self, body: Mapping[str, Any]) -> HttpAnswer:
        if not self.config.registration.dynamic:
            raise OAuthError("invalid_request", "this server does not offer dynamic registration")
        _, answer = self.clients.register(body)
        return json_answer(201, answer, NO_STORE)
