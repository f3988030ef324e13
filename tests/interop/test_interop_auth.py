"""The three clients complete authorization against ``mockmcp run auth --http 0``: the official
Python client (mcp==2.3.0, ``OAuthClientProvider``), the official TypeScript client
(@modelcontextprotocol/client 2.4.0, an ``OAuthClientProvider`` given to its Streamable HTTP
transport) and fastmcp 4.1.6's client (``Client(url, auth=OAuth(...))``). Each goes through the 401,
discovery, dynamic registration, authorize, token (PKCE), lists and calls the tools, and calls the
step-up tool after its 403 (the client authorizes again with the scope the challenge names, the
scopes it had kept).

Each test plays the user's browser: the redirect handler GETs the authorization URL without
following the redirect and reads ``code``, ``state`` and ``iss`` from its ``Location``; the
callback hands them to the client, which checks ``state`` and ``iss`` itself (the TypeScript
SDK checks ``iss`` in ``finishAuth`` and leaves ``state`` to the host: tests/interop/ts/auth_provider.mjs
does what a host does). One mock process per client; the order of the exchanges comes from
the mock's ``auth:`` log lines, and its report (``--report``) judges each client's flow clean.
The interop matrix's OAuth mode (``matrix.oauth_options``) is checked here too.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import pytest

from interop.python_auth import MemoryStorage  # the matrix driver's token storage, shared
from interop.tsclient import TS_DIR
from support.httpmock import HttpMock

pytestmark = pytest.mark.interop

REDIRECT = "http://127.0.0.1:47002/callback"
# What every client's session shows in the mock's log, in this order: the first authorization.
FIRST_FLOW = ["POST /mcp -> 401 unauthorized", "GET /.well-known/oauth-protected-resource/mcp -> 200",
              "GET /.well-known/oauth-authorization-server -> 200", "POST /register -> 201",
              "GET /authorize -> 302", "POST /token -> 200"]
# ... and after it, the step-up: the 403 on admin_report, a second authorization, a retry.
STEP_UP = ["POST /mcp -> 403 insufficient_scope", "GET /authorize -> 302", "POST /token -> 200"]


def auth_log(log: str) -> list[str]:
    """The mock's ``auth:`` log lines (method, path, status, outcome), in order."""
    return [line.split("auth: ", 1)[1] for line in log.splitlines() if "auth: " in line]


def assert_flow(log: str) -> None:
    """The first authorization, then one step-up (its 403 followed by a second authorization and
    token, nothing else that the auth front answers between them), and no traceback."""
    order = auth_log(log)
    assert order[:6] == FIRST_FLOW, order
    at = order.index(STEP_UP[0])
    assert order[at:at + 3] == STEP_UP, order
    assert order.count("GET /authorize -> 302") == 2 and "POST /register -> 201" not in order[6:], order
    assert "Traceback" not in log


def assert_judged_clean(report: Any) -> None:
    """The mock's verdict on the client (``--report``): no finding of its authorization checks
    (PKCE, ``state``, ``resource``, ``iss``, the token on every request, scopes kept at step-up,
    ``application_type`` ...) and no client error of any other check."""
    findings = json.loads(report.read_text())["findings"]
    assert not [f for f in findings if f["check"].startswith("auth.") or f["level"] == "error"], findings


def assert_authorizations(queries: list[dict[str, str]], url: str) -> None:
    """The two authorization requests as the client sent them: PKCE S256, ``state``, ``resource``
    the MCP URL, and the step-up's scope keeping the first one's (accumulated, not replaced)."""
    assert len(queries) == 2, queries
    for q in queries:
        assert q["code_challenge_method"] == "S256" and q["code_challenge"] and q["state"], q
        assert q["resource"] == url, q
    first, second = (set(q["scope"].split()) for q in queries)
    assert "mcp:read" in first and "mcp:admin" not in first
    assert first | {"mcp:admin"} <= second


async def _session(url: str, seen: dict[str, Any]) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientMetadata

    redirects: list[dict[str, str]] = []
    queries: list[dict[str, str]] = []

    async def open_browser(authorization_url: str) -> None:
        queries.append({k: v[0] for k, v in parse_qs(urlsplit(authorization_url).query).items()})
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
    seen["redirects"], seen["queries"] = redirects, queries
    seen["scope"] = storage.tokens.scope
    seen["client_id"] = storage.client.client_id


def test_the_python_client_completes_the_flow_and_steps_up(tmp_path: Any) -> None:
    report = tmp_path / "report.json"
    with HttpMock("auth", "--log-level", "debug", "--report", str(report)) as mock:
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
    assert_authorizations(seen["queries"], mock.url)
    assert_flow(log)
    assert_judged_clean(report)


@pytest.mark.usefixtures("typescript_client")
def test_the_typescript_client_completes_the_flow_and_steps_up(tmp_path: Any) -> None:
    """tests/interop/ts/auth_flow.mjs: the SDK's transport meets the 401 at connect, discovers,
    registers and redirects (UnauthorizedError); the host hands the callback to ``finishAuth`` and
    connects again; at admin_report's 403 the transport itself re-authorizes with the union of the
    scopes (another redirect, another ``finishAuth``) and the call is retried."""
    report = tmp_path / "report.json"
    with HttpMock("auth", "--log-level", "debug", "--report", str(report)) as mock:
        try:
            proc = subprocess.run(["node", str(TS_DIR / "auth_flow.mjs"), mock.url], capture_output=True,
                                  text=True, timeout=60, cwd=TS_DIR)
        finally:
            assert mock.stop() == 0
        log = mock.stderr()
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    steps = out["steps"]
    assert steps["connect"] == {"ok": True, "protocolVersion": "2026-07-28"}, steps
    assert steps["tools"] == {"ok": True, "value": ["admin_report", "echo"]}, steps
    assert steps["echo"] == {"ok": True, "value": "hi"}, steps
    assert steps["admin"] == {"ok": True, "value": "all systems nominal"}, steps
    assert_authorizations(out["authorizations"], mock.url)
    issuer = mock.url.removesuffix("/mcp")
    assert [c["iss"] for c in out["callbacks"]] == [issuer, issuer]
    assert [c["state"] for c in out["callbacks"]] == [q["state"] for q in out["authorizations"]]
    assert {"mcp:read", "mcp:admin"} <= set(out["scope"].split())
    assert out["clientId"].startswith("dyn-")  # dynamically registered
    assert_flow(log)
    assert_judged_clean(report)


async def _fastmcp_session(url: str, seen: dict[str, Any]) -> None:
    import httpx2
    from fastmcp import Client
    from fastmcp.client.auth import OAuth
    from mcp.client.auth import AuthorizationCodeResult

    class Browserless(OAuth):
        """fastmcp's ``OAuth`` with its browser step played by the test: its own redirect handler
        GETs the URL once (a check for a stale client id) then opens a browser, and its callback
        handler serves the redirect URI on a local port until the browser arrives."""

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.queries: list[dict[str, str]] = []
            self.redirects: list[dict[str, str]] = []

        async def redirect_handler(self, authorization_url: str) -> None:
            self.queries.append({k: v[0] for k, v in parse_qs(urlsplit(authorization_url).query).items()})
            async with httpx2.AsyncClient(follow_redirects=False) as browser:
                r = await browser.get(authorization_url)
            assert r.status_code == 302, r.text
            self.redirects.append({k: v[0] for k, v in parse_qs(urlsplit(r.headers["location"]).query).items()})

        async def callback_handler(self) -> AuthorizationCodeResult:
            got = self.redirects[-1]
            return AuthorizationCodeResult(code=got["code"], state=got.get("state"), iss=got.get("iss"))

    oauth = Browserless(client_name="mockmcp interop (fastmcp)", callback_host="127.0.0.1", callback_port=47004)
    async with Client(url, auth=oauth) as client:
        seen["tools"] = sorted(t.name for t in await client.list_tools())
        seen["echo"] = (await client.call_tool("echo", {"text": "hi"})).content[0].text
        seen["admin"] = (await client.call_tool("admin_report", {})).content[0].text
    seen["queries"], seen["redirects"] = oauth.queries, oauth.redirects


@pytest.mark.filterwarnings("ignore:Using in-memory token storage")
def test_the_fastmcp_client_completes_the_flow_and_steps_up(tmp_path: Any) -> None:
    report = tmp_path / "report.json"
    with HttpMock("auth", "--log-level", "debug", "--report", str(report)) as mock:
        seen: dict[str, Any] = {}
        try:
            anyio.run(_fastmcp_session, mock.url, seen)
        finally:
            assert mock.stop() == 0
        log = mock.stderr()
    assert seen["tools"] == ["admin_report", "echo"]
    assert seen["echo"] == "hi" and seen["admin"] == "all systems nominal"
    assert_authorizations(seen["queries"], mock.url)
    assert all(r["iss"] == mock.url.removesuffix("/mcp") for r in seen["redirects"])
    assert seen["queries"][0]["client_id"].startswith("dyn-")
    assert seen["queries"][0]["redirect_uri"] == "http://127.0.0.1:47004/callback"
    assert_flow(log)
    assert_judged_clean(report)


PRE_REGISTERED_ONLY = """\
mockmcp: 1
auth:
  server:
    registration:
      dynamic: false
      clientIdMetadataDocuments: false
      preRegistered:
        - {clientId: ci-client, clientSecret: ci-secret, tokenEndpointAuthMethod: client_secret_post,
           redirectUris: ["http://localhost:3000/callback"]}
tools:
  - {name: t, replies: [{steps: [{text: ok}]}]}
"""


def test_the_matrix_oauth_mode_gives_each_client_what_the_scenario_offers(tmp_path: Any) -> None:
    """The interop matrix's OAuth mode (tests/interop/matrix.py ``oauth_options``): the scenario's
    Client ID Metadata Document, else its pre-registered credentials when they are the only way
    in, else nothing (the client registers); fastmcp's column is not run without ``auth``."""
    from interop import matrix
    from mockmcp.scenario import loader

    bundled, _ = loader.load("auth", use_cache=False)
    assert matrix.oauth_options(bundled) == {"redirectUri": "http://127.0.0.1:33418/callback",
                                             "clientMetadataUrl": "https://client.example/oauth/metadata.json"}
    path = tmp_path / "pre.yaml"
    path.write_text(PRE_REGISTERED_ONLY)
    pre, _ = loader.load(str(path), use_cache=False)
    assert matrix.oauth_options(pre) == {"redirectUri": "http://localhost:3000/callback", "clientId": "ci-client",
                                         "clientSecret": "ci-secret", "tokenEndpointAuthMethod": "client_secret_post"}
    path.write_text(PRE_REGISTERED_ONLY.replace("dynamic: false", "dynamic: true"))
    dynamic, _ = loader.load(str(path), use_cache=False)
    assert matrix.oauth_options(dynamic) == {"redirectUri": matrix.OAUTH_REDIRECT}
    default, _ = loader.load("default", use_cache=False)
    assert matrix.oauth_options(default) is None
    from mockmcp.scenario import loadcache

    (cell,) = matrix.run_cells([(loadcache.bundled_dir() / "default.yaml", matrix.FASTMCP)])
    assert matrix.summarize(cell) == (matrix.NOT_RUN, [])
