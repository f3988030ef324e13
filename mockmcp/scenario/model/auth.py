"""The model classes of the ``auth:`` section: the MCP endpoint as an OAuth 2.1 protected
resource and the built-in authorization server that issues its tokens (HTTP only).

A part of the model (see ``base``'s docstring): imported only when a scenario has ``auth``
(a warm spawn of any other scenario never creates these classes).

Every switch a client's authorization flow can meet is a key here, so a scenario can
reproduce a server that answers only some well-known URLs, advertises a wrong ``resource``,
sends a wrong ``iss``, refuses a refresh or narrows scopes, as data. The core that serves
them is ``core/auth/``; the checks of their values are ``scenario/authcheck.py``.
"""

from __future__ import annotations

from typing import Literal

import attrs
from attrs import frozen

from mockmcp.scenario.model.base import JSON, Duration, Model

__all__ = [
    "ScopeNeed", "Challenge", "ProtectedResource", "PreRegisteredClient", "ClientDocument", "Registration",
    "Authorize", "Tokens", "Migration", "AuthorizationServer", "AuthExpect", "Auth", "AUTH_METHODS",
]

AuthMethod = Literal["client_secret_basic", "client_secret_post", "none"]
AUTH_METHODS: tuple[AuthMethod, ...] = ("client_secret_basic", "client_secret_post", "none")


@frozen(repr=False, eq=False)
class ScopeNeed(Model):
    """Scopes some requests need beyond ``requiredScopes`` (step-up): those of a ``method``,
    or a ``tools/call`` of ``tool``, a ``prompts/get`` of ``prompt``, a ``resources/read``
    of ``resource`` (its uri). A token without them gets ``403 insufficient_scope``."""

    scopes: list[str]
    method: str | None = None
    tool: str | None = None
    prompt: str | None = None
    resource: str | None = None


@frozen(repr=False, eq=False)
class Challenge(Model):
    """What the ``401``'s ``WWW-Authenticate: Bearer`` carries: ``resource_metadata`` (the
    first of ``metadataAt``) and ``scope`` (the scopes the request needs). A ``403``'s
    ``scope`` names every scope the operation needs (``insufficientScope: all``) or only
    those the token lacks (``missing``: a client that echoes the challenge instead of adding
    it to what it holds then drops scopes, which the specification's step-up forbids)."""

    resourceMetadata: bool = True
    scope: bool = True
    insufficientScope: Literal["all", "missing"] = "all"


@frozen(repr=False, eq=False)
class ProtectedResource(Model):
    """The MCP endpoint as an OAuth 2.1 resource server (RFC 9728 metadata, bearer tokens)."""

    # where the metadata answers: "pathInserted" (/.well-known/oauth-protected-resource/mcp),
    # "root" (/.well-known/oauth-protected-resource), or a path of its own ("/custom/prm.json")
    metadataAt: list[str] = attrs.Factory(lambda: ["pathInserted", "root"])
    # the metadata's `resource` (default: the MCP URL exactly); another value on purpose
    resource: str | None = None
    scopesSupported: list[str] | None = None  # the metadata's scopes_supported (omitted when null)
    authorizationServers: list[str] | None = None  # default: the built-in server's issuer
    challenge: Challenge = Challenge()
    requiredScopes: list[str] = attrs.Factory(list)  # every request needs them
    scopes: list[ScopeNeed] = attrs.Factory(list)
    # a wrong `resource` is meant (a scenario that tests a client's refusal): check does not warn
    deliberate: bool = False


@frozen(repr=False, eq=False)
class PreRegisteredClient(Model):
    """A client the server knows before any registration (its credentials given to the client)."""

    clientId: str
    clientSecret: str | None = None
    tokenEndpointAuthMethod: AuthMethod = "client_secret_basic"
    redirectUris: list[str] | None = None  # null: any loopback redirect


@frozen(repr=False, eq=False)
class ClientDocument(Model):
    """A Client ID Metadata Document: ``document`` is what ``url`` (the client_id) would serve.
    The mock never fetches it."""

    url: str
    document: dict[str, JSON]


@frozen(repr=False, eq=False)
class Registration(Model):
    """How clients are known: dynamic registration (RFC 7591), Client ID Metadata Documents,
    pre-registered credentials."""

    dynamic: bool = True
    # a registration asking a token_endpoint_auth_method not in tokenEndpointAuthMethods: register the
    # client with the first listed one and say so in the response ("replace", RFC 7591 3.2.1: the
    # server may replace requested values), or refuse it with invalid_client_metadata ("reject")
    unsupportedAuthMethod: Literal["replace", "reject"] = "replace"
    # application_type in a registration: "check" (if given: native or web, and its redirect
    # URIs fit it), "require" (and it must be given), "ignore"
    applicationType: Literal["check", "require", "ignore"] = "check"
    clientIdMetadataDocuments: bool = True  # client_id_metadata_document_supported
    documents: list[ClientDocument] = attrs.Factory(list)
    # an https client_id with no document here: a public client with any loopback redirect
    # (true), or invalid_client (false)
    acceptAnyDocument: bool = False
    preRegistered: list[PreRegisteredClient] = attrs.Factory(list)


@frozen(repr=False, eq=False)
class Authorize(Model):
    """The authorization endpoint (no user): approve, deny, or wait for the control channel;
    ``grantScopes`` narrows what is granted; ``iss`` is the RFC 9207 parameter of the redirect."""

    decision: Literal["approve", "deny", "wait"] = "approve"
    grantScopes: list[str] | None = None  # grant only these of the scopes asked
    iss: Literal["correct", "missing", "wrong", "normalized"] = "correct"
    # RFC 8707's `resource`, in the authorization and the token request
    resourceParameter: Literal["required", "optional"] = "required"
    # decision: wait: how long a request waits for the control channel's approve or deny (then denied)
    waitTimeout: Duration = Duration(30.0)


@frozen(repr=False, eq=False)
class Tokens(Model):
    """Lifetimes (scaled by ``--time-scale``) and refresh tokens."""

    lifetime: Duration = Duration(3600.0)
    codeLifetime: Duration = Duration(60.0)
    refreshLifetime: Duration | None = None  # null: a refresh token lasts as long as the process
    # when a refresh token is issued: "always", "offlineAccess" (only when offline_access is granted), "never"
    refreshTokens: Literal["always", "offlineAccess", "never"] = "always"
    # a refresh: a new refresh token each time ("rotate"), the same one ("reuse"), or invalid_grant ("reject")
    refresh: Literal["rotate", "reuse", "reject"] = "rotate"
    refreshScopes: list[str] | None = None  # what a refresh grants (default: what was asked, or the grant's)


@frozen(repr=False, eq=False)
class Migration(Model):
    """A second authorization server on an origin of its own, to which the protected resource
    moves: its metadata's ``authorization_servers`` then names the second server, and the first
    one's tokens get ``401 invalid_token``. It knows no client of the first (a client registers
    again). When: after ``afterRequests`` MCP requests let through with a token, or when the
    control channel says ``migrate`` (null)."""

    afterRequests: int | None = None


@frozen(repr=False, eq=False)
class AuthorizationServer(Model):
    """The built-in authorization server (RFC 8414 / OpenID discovery, PKCE S256, RFC 9207)."""

    origin: Literal["same", "second"] = "same"  # "second": its own listener (a migration)
    issuerPath: str = ""  # a path-based issuer: "/tenant1"
    # which discovery documents answer: "oauth" (/.well-known/oauth-authorization-server{path}),
    # "openid" (/.well-known/openid-configuration{path}), "openidAppended" ({path}/.well-known/openid-configuration)
    metadataAt: list[Literal["oauth", "openid", "openidAppended"]] = attrs.Factory(lambda: ["oauth", "openid"])
    issuer: str | None = None  # the `issuer` the metadata claims (default: the real one); another on purpose
    deliberate: bool = False  # a wrong `issuer` is meant: check does not warn about it
    scopesSupported: list[str] | None = None  # default: auth.scopes
    codeChallengeMethods: list[str] | None = attrs.Factory(lambda: ["S256"])  # null: omitted
    issParameterSupported: bool | None = True  # null: omitted
    tokenEndpointAuthMethods: list[AuthMethod] = attrs.Factory(lambda: list(AUTH_METHODS))
    registration: Registration = Registration()
    authorize: Authorize = Authorize()
    tokens: Tokens = Tokens()
    migration: Migration | None = None  # a move to a second authorization server (its own origin)


@frozen(repr=False, eq=False)
class AuthExpect(Model):
    """What the client under test is expected to do where the specification leaves it a choice
    the server cannot see (the verifier judges it): ``registration: document`` says the client has
    a Client ID Metadata Document (dynamic registration while the server offers documents is
    ``auth.registration.cimdUnused``), ``preRegistered`` that it was given credentials (registering,
    or authorizing as another client, is ``auth.registration.unexpected``)."""

    registration: Literal["any", "document", "preRegistered"] = "any"


@frozen(repr=False, eq=False)
class Auth(Model):
    """Authorization over HTTP: the MCP endpoint is a protected resource and the mock runs the
    authorization server that issues its tokens (stdio runs ignore it, as the spec says)."""

    scopes: list[str] = attrs.Factory(lambda: ["mcp"])  # every scope the server grants
    resource: ProtectedResource = ProtectedResource()
    server: AuthorizationServer = AuthorizationServer()
    expect: AuthExpect = AuthExpect()  # what the verifier expects of the client (its registration)
