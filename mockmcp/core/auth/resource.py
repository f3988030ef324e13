"""The MCP endpoint as an OAuth 2.1 protected resource (RFC 9728, RFC 6750, MCP authorization).

Every request to the MCP endpoint (any method, either era) is checked before the engine sees
it: the token only from the ``Authorization`` header (one in the query string is refused,
OAuth 2.1 5.2), issued by this server's authorization server, not expired or revoked, for this
resource (its audience, from the ``resource`` the client asked for, is the MCP URL), with the
scopes the request needs: every request's ``requiredScopes`` and, once the body is read, those
of its method, tool, prompt or resource (``403 insufficient_scope`` naming every scope the
operation needs, in one challenge). The metadata document answers at the places the scenario
lists; its ``resource`` is the MCP URL exactly unless the scenario says otherwise.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping
from urllib.parse import unquote

from mockmcp.core.auth.answers import BearerError
from mockmcp.core.auth.forms import gap_problem, scheme_shown, split_authorization
from mockmcp.core.auth.tokens import Grant, TokenTable
from mockmcp.scenario.model.auth import Auth, ScopeNeed
from mockmcp.wire.jsonrpc import JsonRefused, strict_loads

PATH_INSERTED = "/.well-known/oauth-protected-resource/mcp"
ROOT = "/.well-known/oauth-protected-resource"
MCP_PATH = "/mcp"
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_NAMED = {"tools/call": ("tool", "name"), "prompts/get": ("prompt", "name"), "resources/read": ("resource", "uri")}


def metadata_path(place: str) -> str:
    return PATH_INSERTED if place == "pathInserted" else ROOT if place == "root" else place


class ResourceServer:
    def __init__(self, config: Auth, tokens: TokenTable) -> None:
        self.config = config.resource
        self.tokens = tokens
        self.paths = frozenset(metadata_path(p) for p in self.config.metadataAt)
        self.required = list(self.config.requiredScopes)
        self.needs = list(self.config.scopes)  # the scenario's, then those the control channel requires
        self.needs_body = bool(self.needs)  # only then is a body read for its method and name
        self.markers = _markers(self.needs)

    def require(self, need: ScopeNeed) -> None:
        """From now on (the control channel): ``need``'s scopes for its method, tool, prompt or
        resource, or for every request when it names none."""
        if need.method is None and need.tool is None and need.prompt is None and need.resource is None:
            self.required.extend(s for s in need.scopes if s not in self.required)
        else:
            self.needs.append(need)
            self.needs_body = True
            self.markers = _markers(self.needs)

    # ------------------------------------------------------------ the metadata (RFC 9728)

    def metadata_url(self, origin: str) -> str | None:
        at = self.config.metadataAt
        return origin + metadata_path(at[0]) if at else None

    def document(self, origin: str, issuer: str) -> dict[str, Any]:
        c = self.config
        doc: dict[str, Any] = {
            "resource": c.resource if c.resource is not None else origin + MCP_PATH,
            "authorization_servers": list(c.authorizationServers) if c.authorizationServers is not None else [issuer],
            "bearer_methods_supported": ["header"],
        }
        if c.scopesSupported is not None:
            doc["scopes_supported"] = list(c.scopesSupported)
        return doc

    # ------------------------------------------------------------ the token

    def _challenge(self, status: int, error: str | None, description: str, origin: str, scope: list[str]) -> BearerError:
        ch = self.config.challenge
        return BearerError(status, error, description,
                           resource_metadata=self.metadata_url(origin) if ch.resourceMetadata else None,
                           scope=scope if ch.scope and scope else None)

    def check(self, target: str, authorization: str | None, origin: str) -> Grant:
        """The grant of the request's token, or the ``BearerError`` that answers it."""
        if "?" in target and has_access_token(target.split("?", 1)[1]):
            raise self._challenge(400, "invalid_request", "an access token in the query string is refused: send it in"
                                  " the Authorization header (OAuth 2.1 5.2)", origin, list(self.required))
        if authorization is None:
            raise self._challenge(401, None, "this resource needs a bearer token", origin, list(self.required))
        scheme, gap, token = split_authorization(authorization)
        if scheme.lower() != "bearer":
            raise self._challenge(401, None, f"this resource takes Bearer tokens, not {scheme_shown(scheme, token)}", origin,
                                  list(self.required))
        problem = gap_problem(scheme, gap)
        if problem is not None:  # (malformed, as RFC 6750 3.1 names it; the token is never echoed)
            raise self._challenge(400, "invalid_request", problem, origin, list(self.required))
        grant, why = self.tokens.access_grant(token)  # (a token this server minted is well-formed: only
        if grant is None and not _TOKEN68.fullmatch(token):  # an unknown one is looked at closer)
            raise self._challenge(400, "invalid_request", "a malformed Bearer credential (one token68 value)", origin,
                                  list(self.required))
        if grant is None or why:
            raise self._challenge(401, "invalid_token", why, origin, list(self.required))
        if grant.resource != origin + MCP_PATH:
            raise self._challenge(401, "invalid_token", f"the access token is for another resource ({grant.resource!r},"
                                  f" not {origin + MCP_PATH!r}: RFC 8707)", origin, list(self.required))
        self.check_scopes(grant, (), origin)
        return grant

    def check_scopes(self, grant: Grant, extra: tuple[str, ...], origin: str) -> None:
        """``403 insufficient_scope`` unless the grant holds every scope the operation needs
        (``requiredScopes`` and ``extra``), all of them named in one challenge."""
        needed = list(dict.fromkeys((*self.required, *extra))) if extra else self.required
        held = grant.scopes
        missing = [s for s in needed if s not in held]  # (every request passes here: no more than this)
        if missing:
            named = missing if self.config.challenge.insufficientScope == "missing" else list(needed)
            raise self._challenge(403, "insufficient_scope", f"this operation needs scope {' '.join(missing)}", origin, named)

    def body_scopes(self, body: bytes) -> tuple[str, ...]:
        """The scopes the message(s) in a POST body need beyond ``requiredScopes`` (by method,
        tool, prompt or resource); a body that is not JSON needs none (the engine answers it)."""
        if not self.needs_body:
            return ()
        markers = self.markers
        if markers is not None and b"\\" not in body:
            for marker in markers:
                if marker in body:
                    break
            else:  # no need can apply: none of their names is in the body (and nothing is escaped)
                return ()
        try:  # read as the engine reads it: a body it refuses is never judged by a laxer reading
            data = strict_loads(body.decode("utf-8"))
        except (UnicodeDecodeError, JsonRefused):
            return ()
        out: list[str] = []
        for message in data if isinstance(data, list) else [data]:
            if isinstance(message, dict):
                out.extend(self._message_scopes(message))
        return tuple(dict.fromkeys(out))

    def _message_scopes(self, message: Mapping[str, Any]) -> list[str]:
        method = message.get("method")
        if not isinstance(method, str):
            return []
        params = message.get("params")
        named = _NAMED.get(method)
        name = params.get(named[1]) if named is not None and isinstance(params, dict) else None
        out: list[str] = []
        for need in self.needs:
            if need.method is not None and need.method != method:
                continue
            if need.tool is not None and not (method == "tools/call" and name == need.tool):
                continue
            if need.prompt is not None and not (method == "prompts/get" and name == need.prompt):
                continue
            if need.resource is not None and not (method == "resources/read" and name == need.resource):
                continue
            out.extend(need.scopes)
        return out


def _markers(needs: list[ScopeNeed]) -> tuple[bytes, ...] | None:
    """What a body must contain, as it is sent, for one of ``needs`` to apply to it: the tool,
    prompt or resource name a need names, else its method, each as a JSON string's text. A body
    with none of them (and no escape, which could spell one differently) needs no scope beyond
    ``requiredScopes``, and is not parsed here: the engine parses it anyway. None: every body is
    parsed (a need that names nothing to look for)."""
    out: list[bytes] = []
    for need in needs:
        name = need.tool or need.prompt or need.resource or need.method
        if name is None:
            return None
        out.append(json.dumps(name, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass"))
    return tuple(dict.fromkeys(out))


def has_access_token(query: str) -> bool:
    """Does the query carry ``access_token`` (OAuth 2.1 5.2 refuses it)? Each name is decoded
    first (``%61ccess_token`` is the same parameter) and compared without case."""
    return any(unquote(piece.split("=", 1)[0].replace("+", " ")).lower() == "access_token" for piece in query.split("&"))
