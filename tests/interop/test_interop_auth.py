"""The official Python client (mcp==2.3.0, ``OAuthClientProvider``) completes authorization against
``mockmcp run auth --http 0``: 401, discovery, dynamic registration, authorize, token (PKCE), the
tools listed and called, and the step-up tool after its 403 (the client authorizes again with the
scope the challenge names).

The test plays the user's browser: the redirect handler GETs the authorization URL without
following the redirect and reads ``code``, ``state`` and ``iss`` from its ``Location``; the
callback handler hands them to the client, which checks ``state`` and ``iss`` itself.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio

from support.httpmock import HttpMock

REDIRECT = "http://127.0.0.1:47002/callback"


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client: Any) -> None:
        self.client = client


async def _session(url: str, seen: dict[str, Any]) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientMetadata

    redirects: list[dict[str, str]] = []

    async def open_browser(authorization_url: str) -> None:
        async with httpx2.AsyncClient(follow_redirects=False) as browser:
            r = await browser.get(authorization_url)
        assert r.status_code == 302, r.text
        location = r.headers["location"]
        assert location.startswith(REDIRECT + "?")
        redirects.append({k: v[0] for k, v in parse_qs(urlsplit(location).query).items()})

    async def callback() -> AuthorizationCodeResult:
        got = redirects[-1]
        return AuthorizationCodeResult(code=got["code"], state=got.get("state"), iss=got.get("iss"))

    storage = MemoryStorage()
    metadata = OAuthClientMetadata(client_name="mockmcp interop", redirect_uris=[REDIRECT],  # type: ignore[list-item]
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"])
    provider = OAuthClientProvider(url, metadata, storage, open_browser, callback)
    async with httpx2.AsyncClient(auth=provider) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            seen["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
            seen["echo"] = (await client.call_tool("echo", {"text": "hi"})).content[0].text
            seen["admin"] = (await client.call_tool("admin_report", {})).content[0].text
    seen["redirects"] = redirects
    seen["scope"] = storage.tokens.scope
    seen["client_id"] = storage.client.client_id


def test_the_python_client_completes_the_flow_and_steps_up() -> None:
    with HttpMock("auth", "--log-level", "debug") as mock:
        seen: dict[str, Any] = {}
        try:
            anyio.run(_session, mock.url, seen)
        finally:
            assert mock.stop() == 0
        log = mock.stderr()
    assert seen["tools"] == ["admin_report", "echo"]
    assert seen["echo"] == "hi" and seen["admin"] == "all systems nominal"
    assert len(seen["redirects"]) == 2  # the first authorization, then the step-up after the 403
    assert all(r["iss"] == mock.url.removesuffix("/mcp") for r in seen["redirects"])
    assert "mcp:admin" in seen["scope"].split() and "mcp:read" in seen["scope"].split()
    assert seen["client_id"].startswith("dyn-")  # dynamically registered
    order = [line.split("auth: ", 1)[1] for line in log.splitlines() if "auth: " in line]
    assert order[:6] == ["POST /mcp -> 401 unauthorized", "GET /.well-known/oauth-protected-resource/mcp -> 200",
                         "GET /.well-known/oauth-authorization-server -> 200", "POST /register -> 201",
                         "GET /authorize -> 302", "POST /token -> 200"], order
    assert "POST /mcp -> 403 insufficient_scope" in order
    assert "Traceback" not in log
