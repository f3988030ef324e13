"""The control operations on authorization (a scenario with ``auth``, served over HTTP).

``expireTokens`` and ``revokeTokens`` act on the issued tokens now (all, or a client's, or those
holding a scope); ``requireScope`` adds scopes a method, tool, prompt, resource or every request
needs from now on (step-up on demand); ``listAuthorizations``, ``approveAuthorization`` and
``denyAuthorization`` see and decide the authorization requests parked by ``decision: wait``;
``setAuthMetadata`` overrides fields of the protected resource's and the authorization server's
metadata; ``migrate`` moves the resource to the second authorization server. Their parameters
are checked here; the authorization core does the rest (``AuthSurface``). Without one (no
``auth``, or a stdio run) each says so. Sans-I/O.
"""

from __future__ import annotations

from typing import Any

from mockmcp.wire import errors
from mockmcp.core.control.params import NotFound, bool_param, ok, str_param
from mockmcp.core.control.surface import AuthSurface
from mockmcp.core.control.task_ops import Op

MAX_SCOPES = 100
NO_AUTH = ("this mock serves no authorization (the scenario has no auth section, or the run is not over HTTP:"
           " authorization applies to `mockmcp run SCENARIO --http ...` only)")


def _scopes(params: dict[str, Any], key: str, rid: Any, *, required: bool) -> list[str] | None:
    value = params.get(key)
    if value is None:
        if required:
            raise errors.InvalidParams(f"Invalid params: missing {key!r} (a list of scopes)", request_id=rid)
        return None
    if isinstance(value, str):
        value = value.split()
    if type(value) is not list or len(value) > MAX_SCOPES:
        raise errors.InvalidParams(f"Invalid params: {key!r} must be a list of scopes (at most {MAX_SCOPES})",
                                   request_id=rid)
    for scope in value:
        if type(scope) is not str or not scope or any(c in scope for c in ' "\\') or not scope.isprintable():
            raise errors.InvalidParams(f"Invalid params: {scope!r} in {key!r} is not a scope (RFC 6749 3.3)", request_id=rid)
    return list(dict.fromkeys(value))


def _fields(params: dict[str, Any], key: str, rid: Any) -> dict[str, Any] | None:
    value = params.get(key)
    if value is None:
        return None
    if type(value) is not dict:
        raise errors.InvalidParams(f"Invalid params: {key!r} must be an object of metadata fields (null removes one)",
                                   request_id=rid)
    return value


class AuthOps:
    def __init__(self, auth: AuthSurface | None) -> None:
        self.auth = auth

    def operations(self) -> dict[str, Op]:
        return {
            "expireTokens": self.expire_tokens,
            "revokeTokens": self.revoke_tokens,
            "requireScope": self.require_scope,
            "listAuthorizations": self.list_authorizations,
            "approveAuthorization": self.approve,
            "denyAuthorization": self.deny,
            "setAuthMetadata": self.set_metadata,
            "migrate": self.migrate,
        }

    def _core(self, rid: Any) -> AuthSurface:
        if self.auth is None:
            raise errors.InvalidRequest(NO_AUTH, request_id=rid)
        return self.auth

    @staticmethod
    def _which(params: dict[str, Any], rid: Any) -> tuple[str | None, str | None]:
        """Which tokens: a client's (``clientId``), those holding ``scope``, both, or (neither) all."""
        return str_param(params, "clientId", rid, required=False), str_param(params, "scope", rid, required=False)

    def expire_tokens(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        """Expire now: a client then meets ``401 invalid_token`` (the token expired) and may refresh."""
        auth = self._core(rid)
        client, scope = self._which(params, rid)
        n = auth.expire(client, scope, bool_param(params, "refresh", rid, default=False))
        return ok(rid, {"expired": n})

    def revoke_tokens(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        """Revoke now (refresh tokens too unless ``refresh: false``): the client must authorize again."""
        auth = self._core(rid)
        client, scope = self._which(params, rid)
        n = auth.revoke(client, scope, bool_param(params, "refresh", rid, default=True))
        return ok(rid, {"revoked": n})

    def require_scope(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        auth = self._core(rid)
        scopes = _scopes(params, "scopes", rid, required=True)
        assert scopes is not None
        if not scopes:
            raise errors.InvalidParams("Invalid params: 'scopes' must name at least one scope", request_id=rid)
        named = {k: str_param(params, k, rid, required=False) for k in ("method", "tool", "prompt", "resource")}
        given = [k for k in ("tool", "prompt", "resource") if named[k] is not None]
        if len(given) > 1:
            raise errors.InvalidParams(f"Invalid params: name one of tool, prompt or resource (got {', '.join(given)})",
                                       request_id=rid)
        implied = {"tool": "tools/call", "prompt": "prompts/get", "resource": "resources/read"}
        if given and named["method"] is not None and named["method"] != implied[given[0]]:
            raise errors.InvalidParams(f"Invalid params: a {given[0]} is reached by {implied[given[0]]},"
                                       f" not {named['method']}", request_id=rid)
        return ok(rid, auth.require(scopes, named["method"], named["tool"], named["prompt"], named["resource"]))

    def list_authorizations(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        return ok(rid, {"pending": self._core(rid).pending()})

    def _decide(self, rid: Any, params: dict[str, Any], approve: bool) -> dict[str, Any]:
        auth = self._core(rid)
        which = str_param(params, "id", rid, required=False)
        scopes = _scopes(params, "scopes", rid, required=False) if approve else None
        description = None if approve else str_param(params, "description", rid, required=False)
        try:
            decided = auth.decide(which, approve, scopes, description)
        except KeyError:
            waiting = [p["id"] for p in auth.pending()]
            raise NotFound(f"no authorization request {which!r} is waiting (waiting: {', '.join(waiting) or 'none'})",
                           request_id=rid) from None
        return ok(rid, {"decided": decided})

    def approve(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        """Approve one waiting request (``id``), or all; ``scopes``: grant only these of those asked."""
        return self._decide(rid, params, True)

    def deny(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        """Deny one waiting request (``id``), or all: the client is redirected with ``access_denied``."""
        return self._decide(rid, params, False)

    def set_metadata(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        auth = self._core(rid)
        resource, server = _fields(params, "resource", rid), _fields(params, "server", rid)
        if resource is None and server is None:
            raise errors.InvalidParams("Invalid params: give 'resource' or 'server' (metadata fields; null removes one)",
                                       request_id=rid)
        return ok(rid, auth.override(resource, server))

    def migrate(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        moved = self._core(rid).migrate()
        if moved is None:
            raise errors.InvalidRequest("no migration to make: the scenario has no auth.server.migration, or the"
                                        " resource moved already", request_id=rid)
        return ok(rid, moved)
