"""The checks of a scenario's ``auth:`` section (what its types alone cannot say).

``check`` calls ``problems`` only for a scenario that has ``auth``, so every other
scenario never imports this module. Each problem is a JSON path below ``auth`` and a
message (the loader adds file, line and column); a deliberate oddity a conformance
scenario needs (a scope no token can get, a wrong ``resource``) is a warning, never an
error, since a scenario that reproduces a broken server is the point.
"""

from __future__ import annotations

from typing import Any

from mockmcp.scenario.model.auth import Auth

Path_ = tuple[Any, ...]
Problem = tuple[Path_, str, str]  # path, message, level ("error" or "warning")

RESOURCE_PLACES = ("pathInserted", "root")
_URL_CHARS = frozenset("?#")


def problems(auth: Auth) -> list[Problem]:
    out: list[Problem] = []
    known = _scope_list(auth.scopes, ("auth", "scopes"), out)
    _resource(auth, known, out)
    _server(auth, known, out)
    return out


def _err(out: list[Problem], path: Path_, message: str) -> None:
    out.append((path, message, "error"))


def _warn(out: list[Problem], path: Path_, message: str) -> None:
    out.append((path, message, "warning"))


def _scope_list(scopes: list[str], path: Path_, out: list[Problem]) -> set[str]:
    """Scopes are non-empty tokens without spaces or quotes (RFC 6749 3.3), each once."""
    seen: set[str] = set()
    for i, scope in enumerate(scopes):
        if not scope or any(c in scope for c in ' "\\') or not scope.isprintable():
            _err(out, path + (i,), f"{scope!r} is not a scope (a scope is printable text without spaces, quotes or backslashes)")
        elif scope in seen:
            _err(out, path + (i,), f"scope {scope!r} is listed twice")
        seen.add(scope)
    return seen


def _grantable(scopes: list[str], known: set[str], path: Path_, out: list[Problem]) -> None:
    _scope_list(scopes, path, out)
    for i, scope in enumerate(scopes):
        if scope and scope not in known:
            _warn(out, path + (i,), f"scope {scope!r} is not in auth.scopes: the server never grants it, so no token"
                  " ever has it (add it to auth.scopes unless that is the point)")


def _path(value: str, path: Path_, out: list[Problem], what: str) -> None:
    if not value.startswith("/") or any(c in value for c in _URL_CHARS) or " " in value:
        _err(out, path, f"{what} must be a path starting with '/' (no query, fragment or spaces), got {value!r}")


def _resource(auth: Auth, known: set[str], out: list[Problem]) -> None:
    r = auth.resource
    base: Path_ = ("auth", "resource")
    seen: set[str] = set()
    for i, place in enumerate(r.metadataAt):
        if place not in RESOURCE_PLACES:
            _path(place, base + ("metadataAt", i), out, "a metadata location other than 'pathInserted' or 'root'")
            if place == "/mcp":
                _err(out, base + ("metadataAt", i), "the MCP endpoint itself cannot serve the metadata")
        if place in seen:
            _err(out, base + ("metadataAt", i), f"{place!r} is listed twice")
        seen.add(place)
    if not r.metadataAt and r.challenge.resourceMetadata:
        _err(out, base + ("challenge", "resourceMetadata"),
             "the challenge points at the metadata, but metadataAt is empty (set resourceMetadata: false)")
    if r.resource is not None and not r.deliberate:
        _warn(out, base + ("resource",), "the metadata's resource is not the MCP URL: a client must refuse it"
              " (RFC 9728 3.3; drop the key for a working server, or say deliberate: true)")
    if r.scopesSupported is not None:
        _grantable(r.scopesSupported, known, base + ("scopesSupported",), out)
    _grantable(r.requiredScopes, known, base + ("requiredScopes",), out)
    for i, need in enumerate(r.scopes):
        at = base + ("scopes", i)
        _grantable(need.scopes, known, at + ("scopes",), out)
        if not need.scopes:
            _err(out, at + ("scopes",), "list at least one scope")
        named = [k for k in ("tool", "prompt", "resource") if getattr(need, k) is not None]
        if len(named) > 1:
            _err(out, at, f"name one of tool, prompt or resource (got {', '.join(named)})")
        implied = {"tool": "tools/call", "prompt": "prompts/get", "resource": "resources/read"}
        if named and need.method is not None and need.method != implied[named[0]]:
            _err(out, at + ("method",), f"a {named[0]} is reached by {implied[named[0]]}, not {need.method}")
        if not named and need.method is None:
            _err(out, at, "say which requests need these scopes: method, tool, prompt or resource")


def _server(auth: Auth, known: set[str], out: list[Problem]) -> None:
    s = auth.server
    base: Path_ = ("auth", "server")
    if s.migration is not None:
        if s.origin == "second":
            _err(out, base + ("migration",), "a migration moves to the second origin: the first authorization server"
                 " stays on the MCP server's own (origin: same)")
        after = s.migration.afterRequests
        if after is not None and after < 1:
            _err(out, base + ("migration", "afterRequests"), "afterRequests must be at least 1 (null: only when the"
                 " control channel says migrate)")
    if s.issuerPath:
        _path(s.issuerPath, base + ("issuerPath",), out, "issuerPath")
        if s.issuerPath.endswith("/"):
            _err(out, base + ("issuerPath",), "issuerPath must not end with '/' (an issuer has no trailing slash)")
        if s.issuerPath == "/mcp" or s.issuerPath.startswith("/.well-known"):
            _err(out, base + ("issuerPath",), f"issuerPath {s.issuerPath!r} collides with the MCP endpoint or the well-known paths")
    if len(set(s.metadataAt)) != len(s.metadataAt):
        _err(out, base + ("metadataAt",), "a discovery document is listed twice")
    if not s.issuerPath and "openid" in s.metadataAt and "openidAppended" in s.metadataAt:
        _warn(out, base + ("metadataAt",), "without an issuerPath, openid and openidAppended are the same URL")
    if s.issuer is not None and not s.deliberate:
        _warn(out, base + ("issuer",), "the metadata's issuer is not the URL it was fetched for: a client must refuse it"
              " (RFC 8414 3.3; drop the key for a working server, or say deliberate: true)")
    if s.scopesSupported is not None:
        _grantable(s.scopesSupported, known, base + ("scopesSupported",), out)
    if not s.tokenEndpointAuthMethods:
        _err(out, base + ("tokenEndpointAuthMethods",), "list at least one method")
    elif len(set(s.tokenEndpointAuthMethods)) != len(s.tokenEndpointAuthMethods):
        _err(out, base + ("tokenEndpointAuthMethods",), "a method is listed twice")
    _registration(auth, out)
    a = s.authorize
    if a.waitTimeout.template is not None or a.waitTimeout.seconds <= 0:
        _err(out, base + ("authorize", "waitTimeout"), "waitTimeout must be a positive duration (no template)")
    if a.grantScopes is not None:
        _grantable(a.grantScopes, known, base + ("authorize", "grantScopes"), out)
    t = s.tokens
    for key in ("lifetime", "codeLifetime", "refreshLifetime"):
        d = getattr(t, key)
        if d is not None and (d.template is not None or d.seconds <= 0):
            _err(out, base + ("tokens", key), f"{key} must be a positive duration (no template)")
    if t.refreshScopes is not None:
        _grantable(t.refreshScopes, known, base + ("tokens", "refreshScopes"), out)


def _registration(auth: Auth, out: list[Problem]) -> None:
    s = auth.server
    reg = s.registration
    base: Path_ = ("auth", "server", "registration")
    ids: dict[str, int] = {}
    for i, c in enumerate(reg.preRegistered):
        at = base + ("preRegistered", i)
        if not c.clientId:
            _err(out, at + ("clientId",), "a client id cannot be empty")
        if c.clientId in ids:
            _err(out, at + ("clientId",), f"client {c.clientId!r} is also preRegistered[{ids[c.clientId]}]")
        ids.setdefault(c.clientId, i)
        if c.tokenEndpointAuthMethod == "none" and c.clientSecret is not None:
            _err(out, at + ("clientSecret",), "a public client (tokenEndpointAuthMethod: none) has no secret")
        if c.tokenEndpointAuthMethod != "none" and not c.clientSecret:
            _err(out, at + ("clientSecret",), f"{c.tokenEndpointAuthMethod} needs a clientSecret")
        if c.tokenEndpointAuthMethod not in s.tokenEndpointAuthMethods:
            _err(out, at + ("tokenEndpointAuthMethod",), f"{c.tokenEndpointAuthMethod} is not in"
                 f" tokenEndpointAuthMethods ({', '.join(s.tokenEndpointAuthMethods)})")
        for k, uri in enumerate(c.redirectUris or ()):
            if "://" not in uri or "#" in uri:
                _err(out, at + ("redirectUris", k), f"{uri!r} is not an absolute URI without a fragment")
    for i, doc in enumerate(reg.documents):
        at = base + ("documents", i)
        if not doc.url.startswith("https://") or doc.url.count("/") < 3 or doc.url.endswith("/"):
            _err(out, at + ("url",), "a Client ID Metadata Document's URL is an https URL with a path")
        if doc.document.get("client_id") != doc.url:
            _err(out, at + ("document", "client_id"), "the document's client_id must be its url")
        uris = doc.document.get("redirect_uris")
        if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
            _err(out, at + ("document", "redirect_uris"), "the document needs redirect_uris, a list of URIs")
        if not isinstance(doc.document.get("client_name"), str):
            _err(out, at + ("document", "client_name"), "the document needs a client_name")
        method = doc.document.get("token_endpoint_auth_method", "none")
        if method != "none":
            _err(out, at + ("document", "token_endpoint_auth_method"),
                 "a client known by its metadata document has no secret: its token_endpoint_auth_method is none")
    if not reg.dynamic and reg.unsupportedAuthMethod != "replace":
        _warn(out, base + ("unsupportedAuthMethod",), "dynamic registration is off (dynamic: false): what a"
              " registration asking an unsupported token endpoint auth method gets never matters")
    if (reg.documents or reg.acceptAnyDocument) and not reg.clientIdMetadataDocuments:
        _warn(out, base, "documents are listed but clientIdMetadataDocuments is false: the metadata does not offer them")
    if reg.documents or reg.acceptAnyDocument or reg.clientIdMetadataDocuments:
        if "none" not in s.tokenEndpointAuthMethods:
            _warn(out, base, "clients known by their metadata documents are public (none), which"
                  " tokenEndpointAuthMethods does not list")
