"""The OAuth mode of ``python_driver.py``: the Python clients' authorization, with no user.

The interop matrix gives a plan an ``auth`` object when its scenario has an ``auth`` section
(``matrix.oauth_options``)::

    {"redirectUri": "http://127.0.0.1:47005/callback",
     "clientMetadataUrl": "https://client.example/oauth/metadata.json",   # optional (CIMD)
     "clientId": "ci-client", "clientSecret": "ci-secret",                # optional (pre-registered)
     "tokenEndpointAuthMethod": "client_secret_basic"}                    # optional

Two clients use it. The official Python client (mcp==2.3.0): an ``OAuthClientProvider`` on the
``httpx2`` client of its Streamable HTTP transport (``oauth_transport``). fastmcp 4.1.6's client:
its ``OAuth`` helper as ``Client(url, auth=...)`` (``fastmcp_client``), whose own browser step
(open a browser, serve the redirect URI on a local port) is replaced; ``FastmcpOps`` lets the
driver's operations run on it through fastmcp's ``*_mcp`` methods (the raw MCP results).

Either way the browser is played the same way: GET the authorization URL without following
the redirect, read ``code``, ``state`` and ``iss`` from ``Location``, hand them to the client,
which checks ``state`` and ``iss`` itself. ``AuthLog.summary`` is what the driver reports:
each authorization request's scope and ``resource``, each response's outcome; never a code,
a verifier or a token.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

CLIENT_NAME = "mockmcp interop matrix (Python)"


def _query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


class AuthLog:
    """The browser's side of the flow: every authorization request and its redirect."""

    def __init__(self) -> None:
        self.requests: list[dict[str, str]] = []
        self.responses: list[dict[str, str]] = []

    async def open(self, authorization_url: str) -> None:
        import httpx2

        self.requests.append(_query(authorization_url))
        async with httpx2.AsyncClient(follow_redirects=False) as browser:
            r = await browser.get(authorization_url)
        location = r.headers.get("location")
        if location is None:
            raise RuntimeError(f"the authorization endpoint answered {r.status_code} without a redirect")
        self.responses.append(_query(location))

    def callback(self) -> Any:
        from mcp.client.auth import AuthorizationCodeResult

        got = self.responses[-1] if self.responses else {}
        if "code" not in got:  # a refusal (access_denied ...): the user's browser shows it, no code
            raise RuntimeError(f"authorization refused: {got.get('error', 'no code in the redirect')}")
        return AuthorizationCodeResult(code=got["code"], state=got.get("state"), iss=got.get("iss"))

    def summary(self) -> dict[str, Any]:
        return {"requests": [{"scope": q.get("scope"), "resource": q.get("resource")} for q in self.requests],
                "responses": [{"code": "code" in r, "error": r.get("error"), "iss": r.get("iss")}
                              for r in self.responses]}


class MemoryStorage:
    """The client's token storage (``TokenStorage``), in memory, optionally with a pre-registered client."""

    def __init__(self, client: Any = None) -> None:
        self.tokens: Any = None
        self.client: Any = client

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client: Any) -> None:
        self.client = client


def _metadata(options: dict[str, Any]) -> dict[str, Any]:
    """The client's metadata; ``token_endpoint_auth_method`` left to the SDK unless the application
    knows it (a pre-registered client's)."""
    out = {"client_name": CLIENT_NAME, "redirect_uris": [options["redirectUri"]],
           "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]}
    if options.get("tokenEndpointAuthMethod"):
        out["token_endpoint_auth_method"] = options["tokenEndpointAuthMethod"]
    return out


@contextlib.asynccontextmanager
async def oauth_transport(url: str, options: dict[str, Any], log: AuthLog) -> AsyncIterator[Any]:
    """The official client's Streamable HTTP transport with an ``OAuthClientProvider``."""
    import httpx2
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    metadata = _metadata(options)
    known = None
    if options.get("clientId"):
        known = OAuthClientInformationFull(client_id=options["clientId"], client_secret=options.get("clientSecret"),
                                           **metadata)
    provider = OAuthClientProvider(url, OAuthClientMetadata(**metadata), MemoryStorage(known), log.open,
                                   _async(log.callback), client_metadata_url=options.get("clientMetadataUrl"))
    async with httpx2.AsyncClient(auth=provider) as http:
        yield streamable_http_client(url, http_client=http)


def _async(fn: Any) -> Any:
    async def call() -> Any:
        return fn()

    return call


def fastmcp_auth(options: dict[str, Any], log: AuthLog) -> Any:
    """fastmcp's ``OAuth`` with the browser step played by ``log`` (its redirect handler would GET
    the URL once as a check for a stale client id, then open a browser; its callback handler
    would serve the redirect URI on a local port until the browser arrives)."""
    from fastmcp.client.auth import OAuth

    class Browserless(OAuth):
        async def redirect_handler(self, authorization_url: str) -> None:
            await log.open(authorization_url)

        async def callback_handler(self) -> Any:
            return log.callback()

    redirect = urlsplit(options["redirectUri"])
    extra = {"token_endpoint_auth_method": options["tokenEndpointAuthMethod"]} \
        if options.get("tokenEndpointAuthMethod") else None
    return Browserless(client_name=CLIENT_NAME, callback_host=redirect.hostname or "127.0.0.1",
                       callback_port=redirect.port, client_metadata_url=options.get("clientMetadataUrl"),
                       client_id=options.get("clientId"), client_secret=options.get("clientSecret"),
                       additional_client_metadata=extra)


class FastmcpOps:
    """The driver's operations on a connected fastmcp ``Client``, by its ``*_mcp`` methods (the
    MCP results as they came, a tool's ``isError`` included), under the names the driver calls."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def call_tool(self, name: str, arguments: dict[str, Any], *, read_timeout_seconds: float,
                        progress_callback: Any) -> Any:
        return await self.client.call_tool_mcp(name, arguments, progress_handler=progress_callback,
                                               timeout=read_timeout_seconds)

    async def get_prompt(self, name: str, arguments: dict[str, Any]) -> Any:
        return await self.client.get_prompt_mcp(name, arguments)

    async def read_resource(self, uri: str) -> Any:
        return await self.client.read_resource_mcp(uri)

    async def complete(self, ref: Any, argument: dict[str, str]) -> Any:
        return await self.client.complete_mcp(ref, argument)

    async def list_tools(self, cursor: str | None = None) -> Any:
        return await self.client.list_tools_mcp(cursor=cursor)

    async def list_prompts(self, cursor: str | None = None) -> Any:
        return await self.client.list_prompts_mcp(cursor=cursor)

    async def list_resources(self, cursor: str | None = None) -> Any:
        return await self.client.list_resources_mcp(cursor=cursor)

    async def list_resource_templates(self, cursor: str | None = None) -> Any:
        return await self.client.list_resource_templates_mcp(cursor=cursor)

    def listen(self, **_: Any) -> Any:
        raise NotImplementedError("fastmcp's client has no subscriptions/listen")
