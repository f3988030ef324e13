"""The codes and tokens the built-in authorization server issued: one bounded table.

Times are the shell's clock (the value ``clock()`` hands in, seconds), lifetimes already
scaled by ``--time-scale``; the strings are the shell's randomness (``mint()``), so this
module has neither. Each kind is kept in insertion order and bounded by ``MAX_ENTRIES``:
past it the oldest entry is forgotten (a client holding it is told its token is invalid,
as after a server restart), so memory stays flat whatever a client does.
"""

from __future__ import annotations

from typing import Callable

from mockmcp.core.auth.answers import OAuthError

MAX_ENTRIES = 50_000  # of each kind: codes, access tokens, refresh tokens

Clock = Callable[[], float]
Mint = Callable[[], str]


class Grant:
    """What a code or token stands for: a client, scopes, the resource (audience), an expiry, and
    the authorization server that issued it (``issuer``: its tag, "" when the scenario has one)."""

    __slots__ = ("client_id", "scopes", "resource", "expires", "revoked", "issuer")

    def __init__(self, client_id: str, scopes: tuple[str, ...], resource: str, expires: float | None,
                 issuer: str = "") -> None:
        self.client_id = client_id
        self.scopes = scopes
        self.resource = resource
        self.expires = expires
        self.revoked = False
        self.issuer = issuer

    def expired(self, now: float) -> bool:
        return self.expires is not None and now >= self.expires


class IssuedCode(Grant):
    __slots__ = ("redirect_uri", "challenge", "used", "issued")

    def __init__(self, client_id: str, scopes: tuple[str, ...], resource: str, expires: float, redirect_uri: str | None,
                 challenge: str, issuer: str = "") -> None:
        super().__init__(client_id, scopes, resource, expires, issuer)
        self.redirect_uri = redirect_uri  # as given in the authorization request (None: not given)
        self.challenge = challenge
        self.used = False
        self.issued: list[str] = []  # the tokens redeemed from it (revoked if it is replayed)


def _bounded(table: dict[str, Grant], key: str, value: Grant) -> None:
    table[key] = value
    while len(table) > MAX_ENTRIES:
        del table[next(iter(table))]


class TokenTable:
    """Every code and token of the process, whichever authorization server issued it (after a
    migration the resource stops trusting the first one's: ``retire``)."""

    def __init__(self, clock: Clock, mint: Mint) -> None:
        self.clock = clock
        self.mint = mint
        self.codes: dict[str, Grant] = {}
        self.access: dict[str, Grant] = {}
        self.refresh: dict[str, Grant] = {}
        self.retired: set[str] = set()  # the tags of authorization servers whose tokens are refused now

    def issue_code(self, client_id: str, scopes: tuple[str, ...], resource: str, lifetime: float,
                   redirect_uri: str | None, challenge: str, issuer: str = "") -> str:
        code = self.mint()
        _bounded(self.codes, code, IssuedCode(client_id, scopes, resource, self.clock() + lifetime, redirect_uri, challenge,
                                              issuer))
        return code

    def redeem_code(self, code: str, client_id: str, issuer: str = "") -> IssuedCode:
        """The code's grant, once: unknown, expired, another client's or replayed is ``invalid_grant``
        (a replay also revokes what the code gave, OAuth 2.1 4.1.3)."""
        found = self.codes.get(code)
        if not isinstance(found, IssuedCode) or found.issuer != issuer:
            raise OAuthError("invalid_grant", "unknown authorization code")
        if found.used:
            for token in found.issued:
                grant = self.access.get(token) or self.refresh.get(token)
                if grant is not None:
                    grant.revoked = True
            raise OAuthError("invalid_grant", "the authorization code was already redeemed (the tokens it gave are revoked)")
        if found.client_id != client_id:
            raise OAuthError("invalid_grant", "the authorization code was issued to another client")
        if found.expired(self.clock()):
            raise OAuthError("invalid_grant", "the authorization code expired")
        found.used = True
        return found

    def issue_access(self, client_id: str, scopes: tuple[str, ...], resource: str, lifetime: float,
                     issuer: str = "") -> str:
        token = self.mint()
        _bounded(self.access, token, Grant(client_id, scopes, resource, self.clock() + lifetime, issuer))
        return token

    def issue_refresh(self, client_id: str, scopes: tuple[str, ...], resource: str, lifetime: float | None,
                      issuer: str = "") -> str:
        token = self.mint()
        expires = None if lifetime is None else self.clock() + lifetime
        _bounded(self.refresh, token, Grant(client_id, scopes, resource, expires, issuer))
        return token

    def access_grant(self, token: str) -> tuple[Grant | None, str]:
        """The grant of an access token and, when it is not usable, why ("" when it is)."""
        grant = self.access.get(token)
        if grant is None:
            return None, "the access token is unknown (this server's authorization server did not issue it)"
        if grant.revoked:
            return grant, "the access token was revoked"
        if grant.issuer in self.retired:
            return grant, "the authorization server changed: this token's issuer is no longer trusted (discover the" \
                " protected resource metadata again)"
        if grant.expired(self.clock()):
            return grant, "the access token expired"
        return grant, ""

    def refresh_grant(self, token: str, client_id: str, issuer: str = "") -> Grant:
        grant = self.refresh.get(token)
        if grant is None or grant.issuer != issuer:
            raise OAuthError("invalid_grant", "unknown refresh token")
        if grant.revoked:
            raise OAuthError("invalid_grant", "the refresh token was revoked (rotated refresh tokens are used once)")
        if grant.client_id != client_id:
            raise OAuthError("invalid_grant", "the refresh token was issued to another client")
        if grant.expired(self.clock()):
            raise OAuthError("invalid_grant", "the refresh token expired")
        return grant

    # ------------------------------------------------------------ live control

    def _matching(self, table: dict[str, Grant], client_id: str | None, scope: str | None) -> list[Grant]:
        now = self.clock()
        return [g for g in table.values() if not g.revoked and not g.expired(now)
                and (client_id is None or g.client_id == client_id) and (scope is None or scope in g.scopes)]

    def expire(self, client_id: str | None, scope: str | None, refresh: bool) -> int:
        """Expire now the usable access tokens (and, with ``refresh``, refresh tokens) of a client
        or holding a scope (``None``: any): a client then meets ``401 invalid_token`` "expired"
        and may refresh. The number expired."""
        now = self.clock()
        found = self._matching(self.access, client_id, scope)
        if refresh:
            found += self._matching(self.refresh, client_id, scope)
        for grant in found:
            grant.expires = now
        return len(found)

    def revoke(self, client_id: str | None, scope: str | None, refresh: bool) -> int:
        """Revoke now, as ``expire`` picks them: a revoked refresh token cannot be used either."""
        found = self._matching(self.access, client_id, scope)
        if refresh:
            found += self._matching(self.refresh, client_id, scope)
        for grant in found:
            grant.revoked = True
        return len(found)

    def retire(self, issuer: str) -> None:
        """Refuse from now on every token the authorization server tagged ``issuer`` issued."""
        self.retired.add(issuer)
