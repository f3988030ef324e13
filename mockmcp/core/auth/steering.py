"""The authorization core as the control channel steers it (``control.surface.AuthSurface``).

Each operation acts on the part that owns what it changes: the token table (expire, revoke),
the protected resource (scopes required from now on), the decision table of parked
authorization requests (approve, deny), the metadata overrides, the migration. ``describe``
says where things are: the MCP URL, the authorization server the resource names now, the
second origin. The parameters are checked by the control core already. Sans-I/O.
"""

from __future__ import annotations

from typing import Any

from mockmcp.core.auth.site import AuthSite
from mockmcp.scenario.model.auth import ScopeNeed


class AuthSteering:
    def __init__(self, site: AuthSite) -> None:
        self.site = site

    def expire(self, client_id: str | None, scope: str | None, refresh: bool) -> int:
        return self.site.tokens.expire(client_id, scope, refresh)

    def revoke(self, client_id: str | None, scope: str | None, refresh: bool) -> int:
        return self.site.tokens.revoke(client_id, scope, refresh)

    def require(self, scopes: list[str], method: str | None, tool: str | None, prompt: str | None,
                resource: str | None) -> dict[str, Any]:
        r = self.site.resource
        r.require(ScopeNeed(scopes=scopes, method=method, tool=tool, prompt=prompt, resource=resource))
        needs = []
        for need in r.needs:
            entry: dict[str, Any] = {"scopes": list(need.scopes)}
            entry.update({k: v for k in ("method", "tool", "prompt", "resource") if (v := getattr(need, k)) is not None})
            needs.append(entry)
        return {"requiredScopes": list(r.required), "scopes": needs}

    def pending(self) -> list[dict[str, Any]]:
        return self.site.decisions.listing(self.site.clock())

    def decide(self, which: str | None, approve: bool, scopes: list[str] | None, description: str | None) -> list[str]:
        decisions = self.site.decisions
        chosen = decisions.chosen(which)  # (KeyError: not waiting)
        for pending in chosen:
            decisions.decide(pending, "approve" if approve else "deny", None if scopes is None else tuple(scopes),
                             description)
        return [p.id for p in chosen]

    def override(self, resource: dict[str, Any] | None, server: dict[str, Any] | None) -> dict[str, Any]:
        o = self.site.overrides
        o.resource.update(resource or {})
        o.server.update(server or {})
        return {"resource": dict(o.resource), "server": dict(o.server)}

    def migrate(self) -> dict[str, Any] | None:
        if not self.site.migrate():
            return None
        return {"authorizationServer": self._issuer()}

    def _issuer(self) -> str | None:
        server, where = self.site.current()
        o = self.site.origins
        base = o.second_base if where == "second" else o.mcp_base
        return server.issuer(base) if base else None

    def describe(self) -> dict[str, Any]:
        """Where things are (the URLs as bound on the listening host) and what waits."""
        site = self.site
        o = site.origins
        out: dict[str, Any] = {
            "mcp": o.mcp_base + "/mcp" if o.mcp_base else None,
            "authorizationServer": self._issuer(),
            "secondOrigin": o.second_base or None,
            "pending": len(site.decisions.pending),
        }
        if site.migration is not None:
            out["migrated"] = site.migration.moved
        return out
