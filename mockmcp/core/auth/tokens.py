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
    """What a code or token stands for: a client, scopes, the resource (audience), an expiry."""

    __slots__ = ("client_id", "scopes", "resource", "expires", "revoked")

    def __init__(self, client_id: str, scopes: tuple[str, ...], resource: str, expires: float | None) -> None:
        self.client_id = client_id
        self.scopes = scopes
        self.resource = resource
        self.expires = expires
        self.revoked = False

    def expired(self, now: float) -> bool:
        return self.expires is not None and now >= self.expires


class IssuedCode(Grant):
    __slots__ = ("redirect_uri", "challenge", "used", "issued")

    def __init__(self, client_id: str, scopes: tuple[str, ...], resource: str, expires: float, redirect_uri: str | None,
                 challenge: str) -> None:
        super().__init__(client_id, scopes, resource, expires)
        self.redirect_uri = redirect_uri  # as given in the authorization request (None: not given)
        self.challenge = challenge
        self.used = False
        self.issued: list[str] = []  # the tokens redeemed from it (revoked if it is replayed)


def _bounded(table: dict[str, Grant], key: str, value: Grant) -> None:
    table[key] = value
    while len(table) > MAX_ENTRIES:
        del table[next(iter(table))]


class TokenTable:
    def __init__(self, clock: Clock, mint: Mint) -> None:
        self.clock = clock
        self.mint = mint
        self.codes: dict[str, Grant] = {}
        self.access: dict[str, Grant] = {}
        self.refresh: dict[str, Grant] = {}

    def issue_code(self, client_id: str, scopes: tuple[str, ...], resource: str, lifetime: float,
                   redirect_uri: str | None, challenge: str) -> str:
        code = self.mint()
        _bounded(self.codes, code, IssuedCode(client_id, scopes, resource, self.clock() + lifetime, redirect_uri, challenge))
        return code

    def redeem_code(self, code: str, client_id: str) -> IssuedCode:
        """The code's grant, once: unknown, expired, another client's or replayed is ``invalid_grant``
        (a replay also revokes what the code gave, OAuth 2.1 4.1.3)."""
        found = self.codes.get(code)
        if not isinstance(found, IssuedCode):
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

    def issue_access(self, client_id: str, scopes: tuple[str, ...], resource: str, lifetime: float) -> str:
        token = self.mint()
        _bounded(self.access, token, Grant(client_id, scopes, resource, self.clock() + lifetime))
        return token

    def issue_refresh(self, client_id: str, scopes: tuple[str, ...], resource: str, lifetime: float | None) -> str:
        token = self.mint()
        expires = None if lifetime is None else self.clock() + lifetime
        _bounded(self.refresh, token, Grant(client_id, scopes, resource, expires))
        return token

    def access_grant(self, token: str) -> tuple[Grant | None, str]:
        """The grant of an access token and, when it is not usable, why ("" when it is)."""
        grant = self.access.get(token)
        if grant is None:
            return None, "the access token is unknown (this server's authorization server did not issue it)"
        if grant.revoked:
            return grant, "the access token was revoked"
        if grant.expired(self.clock()):
            return grant, "the access token expired"
        return grant, ""

    def refresh_grant(self, token: str, client_id: str) -> Grant:
        grant = self.refresh.get(token)
        if grant is None:
            raise OAuthError("invalid_grant", "unknown refresh token")
        if grant.revoked:
            raise OAuthError("invalid_grant", "the refresh token was revoked (rotated refresh tokens are used once)")
        if grant.client_id != client_id:
            raise OAuthError("invalid_grant", "the refresh token was issued to another client")
        if grant.expired(self.clock()):
            raise OAuthError("invalid_grant", "the refresh token expired")
        return grant
