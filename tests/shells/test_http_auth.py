"""Authorization over HTTP through the real process: ``mockmcp run auth --http 0`` and a raw client.

One process serves the whole flow (401 -> Protected Resource Metadata -> authorization server
metadata -> registration -> authorize (302 with code, state, iss) -> token (PKCE) -> a tool ->
403 insufficient_scope on the step-up tool -> authorize again with both scopes -> the call ->
refresh), then every bad input the RFCs name an error for, against that same process; a second
process runs a scenario written for the switches (short lifetimes under ``--time-scale``, a
scripted wrong ``iss``, narrowed scopes, refused refreshes, the legacy era).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from support.httpmock import HttpMock, Response, mcp_headers, msg

REDIRECT = "http://127.0.0.1:47001/callback"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


class Flow:
    """A raw OAuth client of one mock: each step one request, its answer kept for the asserts."""

    def __init__(self, mock: HttpMock) -> None:
        self.mock = mock
        self.origin = mock.url.removesuffix("/mcp")

    def get(self, path: str) -> Response:
        return self.mock.post(b"", {"Content-Type": None, "Accept": None}, method="GET", path=path)

    def register(self, **metadata: Any) -> Response:
        body = {"redirect_uris": [REDIRECT], "application_type": "native", "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"], "client_name": "raw"}
        body.update(metadata)
        return self.mock.post(json.dumps(body).encode(), {"Content-Type": "application/json"}, path="/register")

    def authorize(self, client_id: str, challenge: str, **extra: str | None) -> Response:
        params: dict[str, str | None] = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT,
                                         "code_challenge": challenge, "code_challenge_method": "S256", "state": "st-1",
                                         "scope": "mcp:read", "resource": self.mock.url}
        params.update(extra)
        return self.get("/authorize?" + urlencode({k: v for k, v in params.items() if v is not None}))

    def code(self, client_id: str, **extra: str | None) -> tuple[str, str]:
        verifier, challenge = pkce()
        r = self.authorize(client_id, challenge, **extra)
        assert r.status == 302, r
        return redirected(r)["code"], verifier

    def token(self, form: dict[str, str | None], headers: dict[str, str | None] | None = None) -> Response:
        body = urlencode({k: v for k, v in form.items() if v is not None}).encode()
        return self.mock.post(body, {**FORM, **(headers or {})}, path="/token")

    def redeem(self, client_id: str, code: str, verifier: str, **extra: str | None) -> Response:
        return self.token({"grant_type": "authorization_code", "code": code, "code_verifier": verifier,
                           "client_id": client_id, "redirect_uri": REDIRECT, "resource": self.mock.url, **extra})

    def access(self, client_id: str, scope: str = "mcp:read") -> dict[str, Any]:
        code, verifier = self.code(client_id, scope=scope)
        r = self.redeem(client_id, code, verifier)
        assert r.status == 200, r
        return dict(r.json())

    def call(self, token: str | None, rid: int, tool: str = "echo", path: str = "/mcp") -> Response:
        args = {"text": "hi"} if tool == "echo" else {}
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        return self.mock.post(msg(rid, "tools/call", {"name": tool, "arguments": args}), headers, path=path)


def redirected(r: Response) -> dict[str, str]:
    location = r.headers["location"]
    assert location.startswith(REDIRECT + "?"), location
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def challenge(r: Response) -> dict[str, str]:
    header = r.headers["www-authenticate"]
    assert header.startswith("Bearer "), header
    out = {}
    for part in header[len("Bearer "):].split('", '):
        k, _, v = part.partition("=")
        out[k.strip()] = v.strip('"')
    return out


def oauth_error(r: Response, status: int, error: str) -> None:
    assert (r.status, r.json()["error"]) == (status, error), r


@pytest.fixture(scope="module")
def flow() -> Iterator[Flow]:
    with HttpMock("auth") as mock:
        yield Flow(mock)
        assert mock.stop() == 0
        assert "Traceback" not in mock.stderr()


def test_the_whole_flow_with_step_up_and_refresh(flow: Flow) -> None:
    url, origin = flow.mock.url, flow.origin
    r = flow.call(None, 1)
    assert r.status == 401
    ch = challenge(r)
    assert ch == {"resource_metadata": origin + "/.well-known/oauth-protected-resource/mcp", "scope": "mcp:read"}
    prm = flow.get("/.well-known/oauth-protected-resource/mcp").json()
    assert prm["resource"] == url and prm["scopes_supported"] == ["mcp:read"]
    assert flow.get("/.well-known/oauth-protected-resource").json() == prm  # the root location answers too
    (issuer,) = prm["authorization_servers"]
    meta = flow.get("/.well-known/oauth-authorization-server").json()
    assert meta["issuer"] == issuer == origin
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["authorization_response_iss_parameter_supported"] is True
    assert meta["client_id_metadata_document_supported"] is True
    assert set(meta["token_endpoint_auth_methods_supported"]) == {"client_secret_basic", "client_secret_post", "none"}
    assert flow.get("/.well-known/openid-configuration").json()["issuer"] == issuer
    reg = flow.register()
    assert reg.status == 201 and "client_secret" not in reg.json()
    cid = reg.json()["client_id"]

    verifier, chal = pkce()
    r = flow.authorize(cid, chal)
    assert r.status == 302
    got = redirected(r)
    assert got["state"] == "st-1" and got["iss"] == issuer and got["code"]
    r = flow.redeem(cid, got["code"], verifier)
    assert r.status == 200 and r.headers["cache-control"] == "no-store", r
    tokens = r.json()
    assert tokens["token_type"] == "Bearer" and tokens["scope"] == "mcp:read" and tokens["refresh_token"]
    assert flow.call(tokens["access_token"], 2).json()["result"]["content"][0]["text"] == "hi"

    r = flow.call(tokens["access_token"], 3, "admin_report")  # step-up: the tool needs mcp:admin too
    assert r.status == 403
    ch = challenge(r)
    assert ch["error"] == "insufficient_scope" and ch["scope"] == "mcp:read mcp:admin"
    both = flow.access(cid, "mcp:read mcp:admin")
    assert both["scope"] == "mcp:read mcp:admin"
    assert flow.call(both["access_token"], 4, "admin_report").json()["result"]["content"][0]["text"] == "all systems nominal"

    r = flow.token({"grant_type": "refresh_token", "refresh_token": both["refresh_token"], "client_id": cid,
                    "resource": url})
    assert r.status == 200, r
    refreshed = r.json()
    assert refreshed["scope"] == "mcp:read mcp:admin" and refreshed["refresh_token"] != both["refresh_token"]
    assert flow.call(refreshed["access_token"], 5, "admin_report").status == 200
    # rotation: the old refresh token is spent
    r = flow.token({"grant_type": "refresh_token", "refresh_token": both["refresh_token"], "client_id": cid, "resource": url})
    oauth_error(r, 400, "invalid_grant")
    # a refresh may narrow the scopes, never widen them
    r = flow.token({"grant_type": "refresh_token", "refresh_token": refreshed["refresh_token"], "client_id": cid,
                    "scope": "mcp:read", "resource": url})
    assert r.json()["scope"] == "mcp:read"
    r = flow.token({"grant_type": "refresh_token", "refresh_token": r.json()["refresh_token"], "client_id": cid,
                    "scope": "mcp:read offline_access", "resource": url})
    oauth_error(r, 400, "invalid_scope")


def test_pre_registered_and_metadata_document_clients(flow: Flow) -> None:
    secret_basic = "Basic " + base64.b64encode(b"mockmcp-client:mockmcp-secret").decode()
    code, verifier = flow.code("mockmcp-client")
    form = {"grant_type": "authorization_code", "code": code, "code_verifier": verifier, "redirect_uri": REDIRECT,
            "resource": flow.mock.url}
    assert flow.token(form, {"Authorization": secret_basic}).status == 200
    code, verifier = flow.code("mockmcp-client")
    wrong = "Basic " + base64.b64encode(b"mockmcp-client:nope").decode()
    r = flow.token({**form, "code": code, "code_verifier": verifier}, {"Authorization": wrong})
    oauth_error(r, 401, "invalid_client")
    assert r.headers["www-authenticate"].startswith("Basic")
    r = flow.token({**form, "code": code, "code_verifier": verifier, "client_id": "mockmcp-client",
                    "client_secret": "mockmcp-secret"})
    oauth_error(r, 401, "invalid_client")  # registered for Basic, authenticated by post
    # a Client ID Metadata Document from the scenario (never fetched): its own redirect URIs
    doc = "https://client.example/oauth/metadata.json"
    verifier, chal = pkce()
    r = flow.authorize(doc, chal, redirect_uri="http://127.0.0.1:33418/callback")
    assert r.status == 302 and r.headers["location"].startswith("http://127.0.0.1:33418/callback?code=")
    r = flow.authorize(doc, chal, redirect_uri="http://evil.example/callback")
    oauth_error(r, 400, "invalid_request")  # an unregistered redirect URI is never redirected to


def test_tokens_outside_the_header_or_for_another_resource_are_refused(flow: Flow) -> None:
    cid = flow.register().json()["client_id"]
    token = flow.access(cid)["access_token"]
    r = flow.call(None, 10, path="/mcp?access_token=" + token)
    assert r.status == 400 and challenge(r)["error"] == "invalid_request"
    r = flow.call("not-a-token-this-server-issued", 11)
    assert r.status == 401 and challenge(r)["error"] == "invalid_token"
    r = flow.mock.post(msg(12, "tools/list"), {"Authorization": f"Basic {token}"})
    assert r.status == 401 and "error" not in challenge(r)  # another scheme: no bearer credentials at all
    verifier, chal = pkce()
    r = flow.authorize(cid, chal, resource="http://127.0.0.1:1/mcp")
    assert redirected(r)["error"] == "invalid_target"
    code, verifier = flow.code(cid)
    oauth_error(flow.redeem(cid, code, verifier, resource="http://127.0.0.1:1/mcp"), 400, "invalid_target")
    # a token issued for another MCP URL of this same server (another Host) is for another resource
    other = flow.mock.url.replace("127.0.0.1", "localhost")
    assert redirected(flow.authorize(cid, pkce()[1], resource=None))["error"] == "invalid_target"  # resource required
    body = json.dumps(msg(13, "tools/list")).encode()
    raw = flow.mock.raw(b"POST /mcp HTTP/1.1\r\nHost: " + urlsplit(other).netloc.encode() + b"\r\nAuthorization: Bearer "
                        + token.encode() + b"\r\nContent-Type: application/json\r\nConnection: close\r\n"
                        + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    assert raw.startswith(b"HTTP/1.1 401 ") and b"another resource" in raw


def test_bad_input_gets_the_error_the_rfcs_name(flow: Flow) -> None:
    cid = flow.register().json()["client_id"]
    code, verifier = flow.code(cid)
    oauth_error(flow.redeem(cid, code, pkce()[0]), 400, "invalid_grant")  # a wrong verifier
    oauth_error(flow.redeem(cid, code, verifier), 400, "invalid_grant")  # (the code was spent by the failed try)
    code, verifier = flow.code(cid)
    good = flow.redeem(cid, code, verifier)
    assert good.status == 200
    oauth_error(flow.redeem(cid, code, verifier), 400, "invalid_grant")  # replayed
    assert flow.call(good.json()["access_token"], 20).status == 401  # ... and the tokens it gave are revoked
    other = flow.register().json()["client_id"]
    code, verifier = flow.code(cid)
    oauth_error(flow.redeem(other, code, verifier), 400, "invalid_grant")  # a code for another client
    code, verifier = flow.code(cid)
    oauth_error(flow.redeem(cid, code, verifier, redirect_uri="http://127.0.0.1:47001/other"), 400, "invalid_grant")
    oauth_error(flow.token({"grant_type": "password", "client_id": cid}), 400, "unsupported_grant_type")
    oauth_error(flow.token({"client_id": cid}), 400, "invalid_request")  # no grant_type
    r = flow.mock.post(b"grant_type=authorization_code&grant_type=refresh_token", FORM, path="/token")
    oauth_error(r, 400, "invalid_request")  # a repeated parameter
    r = flow.mock.post(b"grant_type=%zz", FORM, path="/token")
    oauth_error(r, 400, "invalid_request")  # a malformed escape
    r = flow.mock.post(b"x=" + b"a" * 70_000, FORM, path="/token")
    oauth_error(r, 400, "invalid_request")  # oversized
    r = flow.mock.post(b'{"grant_type": "authorization_code"}', {"Content-Type": "application/json"}, path="/token")
    oauth_error(r, 400, "invalid_request")  # not a form
    oauth_error(flow.token({"grant_type": "authorization_code", "code": "x", "client_id": "nobody"}), 401, "invalid_client")
    verifier, chal = pkce()
    assert redirected(flow.authorize(cid, chal, code_challenge_method="plain"))["error"] == "invalid_request"
    assert redirected(flow.authorize(cid, chal, code_challenge_method=None))["error"] == "invalid_request"
    assert redirected(flow.authorize(cid, chal, scope="mcp:read root"))["error"] == "invalid_scope"
    assert redirected(flow.authorize(cid, chal, response_type="token"))["error"] == "unsupported_response_type"
    oauth_error(flow.authorize("nobody", chal), 400, "invalid_client")  # no redirect for an unknown client
    oauth_error(flow.register(redirect_uris="x"), 400, "invalid_redirect_uri")
    oauth_error(flow.register(application_type="desktop"), 400, "invalid_client_metadata")
    oauth_error(flow.register(application_type="web"), 400, "invalid_redirect_uri")  # web with a loopback redirect
    # a method the server does not list is replaced by its first (RFC 7591 3.2.1), a non-string refused
    replaced = flow.register(token_endpoint_auth_method="private_key_jwt")
    assert replaced.status == 201 and replaced.json()["token_endpoint_auth_method"] == "client_secret_basic", replaced
    assert replaced.json()["client_secret"]
    oauth_error(flow.register(token_endpoint_auth_method=["none"]), 400, "invalid_client_metadata")
    r = flow.mock.post(b"[1, 2]", {"Content-Type": "application/json"}, path="/register")
    oauth_error(r, 400, "invalid_client_metadata")
    r = flow.mock.post(b"", {"Content-Type": None}, method="DELETE", path="/token")
    assert r.status == 405 and r.headers["allow"] == "POST"
    # the pre-registered secret client with a secret it registered for Basic, sent both ways at once
    basic = "Basic " + base64.b64encode(b"mockmcp-client:mockmcp-secret").decode()
    r = flow.token({"grant_type": "refresh_token", "refresh_token": "x", "client_secret": "mockmcp-secret"},
                   {"Authorization": basic})
    oauth_error(r, 400, "invalid_request")


SWITCHES = """\
mockmcp: 1
protocol: {era: dual}
auth:
  scopes: [a, b, offline_access]
  resource:
    metadataAt: [/custom/prm.json]
    requiredScopes: [a]
    challenge: {scope: false}
  server:
    issuerPath: /tenant1
    metadataAt: [openidAppended]
    issParameterSupported: null
    authorize: {iss: wrong, grantScopes: [a]}
    tokens: {lifetime: 2s, refresh: reject, refreshTokens: offlineAccess}
tools:
  - name: echo
    inputSchema: {type: object}
    replies: [{steps: [{text: ok}]}]
"""


def test_the_switches_and_expiry_on_the_shell_clock(tmp_path: Path) -> None:
    scenario = tmp_path / "switches.yaml"
    scenario.write_text(SWITCHES)
    with HttpMock(scenario, "--time-scale", "0.05") as mock:  # a 2 s lifetime lasts 0.1 s
        flow = Flow(mock)
        r = flow.call(None, 1)
        assert challenge(r) == {"resource_metadata": flow.origin + "/custom/prm.json"}  # no scope: switched off
        assert flow.get("/.well-known/oauth-protected-resource").status == 404  # only the listed location answers
        prm = flow.get("/custom/prm.json").json()
        assert prm["authorization_servers"] == [flow.origin + "/tenant1"] and "scopes_supported" not in prm
        assert flow.get("/.well-known/oauth-authorization-server/tenant1").status == 404
        meta = flow.get("/tenant1/.well-known/openid-configuration").json()
        assert meta["issuer"] == flow.origin + "/tenant1" and meta["token_endpoint"] == flow.origin + "/tenant1/token"
        assert "authorization_response_iss_parameter_supported" not in meta
        reg = mock.post(json.dumps({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
                                    "grant_types": ["authorization_code", "refresh_token"]}).encode(),
                        {"Content-Type": "application/json"}, path="/tenant1/register")
        cid = reg.json()["client_id"]
        verifier, chal = pkce()
        r = mock.post(b"", {"Content-Type": None}, method="GET", path="/tenant1/authorize?" + urlencode({
            "response_type": "code", "client_id": cid, "redirect_uri": REDIRECT, "code_challenge": chal,
            "code_challenge_method": "S256", "state": "s", "scope": "a b offline_access", "resource": mock.url}))
        got = redirected(r)
        assert got["iss"] == "https://wrong-issuer.invalid"  # scripted: a client must refuse it
        r = mock.post(urlencode({"grant_type": "authorization_code", "code": got["code"], "code_verifier": verifier,
                                 "client_id": cid, "resource": mock.url}).encode(), FORM, path="/tenant1/token")
        tokens = r.json()
        assert tokens["scope"] == "a" and "refresh_token" not in tokens  # narrowed: no b, no offline_access
        started = time.monotonic()
        assert flow.call(tokens["access_token"], 2).status == 200
        while time.monotonic() - started < 5:
            r = flow.call(tokens["access_token"], 3)
            if r.status != 200:
                break
            time.sleep(0.02)
        assert r.status == 401 and challenge(r)["error"] == "invalid_token"
        assert "expired" in challenge(r)["error_description"]
        assert 0.08 < time.monotonic() - started < 5  # expired on the scaled lifetime, not the written one
        # the legacy era is gated the same way: initialize without a token is refused
        init = {"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "legacy", "version": "1"}}}
        r = mock.post(json.dumps(init).encode())
        assert r.status == 401
        verifier, chal = pkce()
        r = mock.post(b"", {"Content-Type": None}, method="GET", path="/tenant1/authorize?" + urlencode({
            "response_type": "code", "client_id": cid, "redirect_uri": REDIRECT, "code_challenge": chal,
            "code_challenge_method": "S256", "scope": "a", "resource": mock.url}))
        r = mock.post(urlencode({"grant_type": "authorization_code", "code": redirected(r)["code"],
                                 "code_verifier": verifier, "client_id": cid, "resource": mock.url}).encode(),
                      FORM, path="/tenant1/token")
        r = mock.post(json.dumps(init).encode(), {"Authorization": "Bearer " + r.json()["access_token"]})
        assert r.status == 200 and r.json()["result"]["protocolVersion"] == "2025-11-25", r
        assert mock.stop() == 0
        assert "Traceback" not in mock.stderr()


def test_a_request_without_a_usable_host_is_never_served(flow: Flow) -> None:
    """The URLs the server advertises come from the Host: without one (HTTP/1.0) or with one that
    is no host name, nothing is served, the MCP endpoint least of all."""
    body = json.dumps(msg(30, "tools/list")).encode()
    head = (b"POST /mcp HTTP/1.0\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n")
    assert flow.mock.raw(head + b"\r\n" + body).startswith(b"HTTP/1.1 400 ")
    assert flow.mock.raw(head + b"Host: a/b\r\n\r\n" + body).split(b" ", 2)[1] in (b"400", b"403")


def test_a_registration_body_is_read_as_strictly_as_a_client_line(flow: Flow) -> None:
    """A registration is echoed in its answer, so it is read as strictly as a JSON-RPC line: a
    body nested past 64 levels (once, at ~980 levels, it killed the whole server when the echo was
    encoded), NaN or Infinity (echoed, the answer was no JSON) and a number out of range are each
    refused with the reason, and the server serves on."""
    head = '{"redirect_uris": ["' + REDIRECT + '"], "token_endpoint_auth_method": "none", "x": '
    # (the depth Python's decoder still reads but its encoder no longer writes depends on the stack: try each)
    deep = [("[" * d + "]" * d, "nested deeper than 64 levels") for d in (64, 200, *range(950, 1001))]
    cases = [*deep,
             ("NaN", "NaN is not valid JSON"), ("-Infinity", "-Infinity is not valid JSON"),
             ("1e400", "a number is out of range"), ("1" * 5000, "a number is out of range")]
    for value, reason in cases:
        r = flow.mock.post((head + value + "}").encode(), {"Content-Type": "application/json"}, path="/register")
        oauth_error(r, 400, "invalid_client_metadata")
        assert reason in r.json()["error_description"], r
    r = flow.mock.post((head + "[" * 63 + "]" * 63 + "}").encode(), {"Content-Type": "application/json"}, path="/register")
    assert r.status == 201 and "x" in r.json(), r  # 64 levels: served, and echoed
    assert flow.register().status == 201


def test_the_scope_gate_reads_a_body_as_the_engine_does(flow: Flow) -> None:
    """A body the engine refuses (NaN, nesting past 64 levels) is not judged by a laxer reading
    first: it gets the engine's error, not a 403 step-up challenge for a request that cannot succeed."""
    cid = flow.register().json()["client_id"]
    token = flow.access(cid)["access_token"]  # mcp:read: admin_report needs mcp:admin too
    message = msg(40, "tools/call", {"name": "admin_report", "arguments": {}})
    text = json.dumps(message)
    for bad in (text.replace('"arguments": {}', '"arguments": {"n": NaN}'),
                text.replace('"arguments": {}', '"arguments": {"n": ' + "[" * 70 + "]" * 70 + "}")):
        r = flow.mock.post(bad.encode(), {**mcp_headers(message), "Authorization": f"Bearer {token}"})
        assert r.status != 403 and r.json()["error"]["code"] in (-32700, -32602), r  # parse error, invalid params


def test_a_redirect_uri_with_control_characters_is_refused_not_redirected_to(flow: Flow) -> None:
    """urlsplit drops CR, LF and TAB, so for a client allowed any loopback redirect such a URI once
    passed as loopback and went into Location raw: CR/LF closed the connection without an answer
    (h11 refused the header), TAB made a malformed Location. Each is a 400, never a redirect."""
    verifier, chal = pkce()
    for uri in ("http://127.0.0.1:1/cb\r\nX-Injected: 1", "http://127.0.0.1:1/c\tb", "http://127.0.0.1:1/c\x7fb",
                "http://127.0.0.1:1/c b", "http://127.0.0.1:1/caf\u00e9"):
        r = flow.authorize("mockmcp-client", chal, redirect_uri=uri)
        oauth_error(r, 400, "invalid_request")
        assert "location" not in r.headers and "printable ASCII" in r.json()["error_description"], r
    assert flow.authorize("mockmcp-client", chal, redirect_uri="http://127.0.0.1:1/caf%C3%A9").status == 302


def test_redirect_uris_match_exactly_but_for_a_loopback_port(flow: Flow) -> None:
    """OAuth 2.1: a redirect URI is the registered string exactly, only a loopback redirect's port
    may differ (RFC 8252 7.3). A fragment, userinfo, an upper-case scheme or host and an invalid
    port once passed (the comparison went through urlsplit, which folds and drops them); now each
    is a 400, never a redirect. Registration refuses what could never match safely."""
    cid = flow.register().json()["client_id"]  # REDIRECT: http://127.0.0.1:47001/callback
    verifier, chal = pkce()
    for uri in (REDIRECT + "#frag", "http://attacker@127.0.0.1:47001/callback", "HTTP://127.0.0.1:47001/callback",
                "http://127.0.0.1:99999/callback", "http://127.0.0.1:abc/callback", REDIRECT + "/",
                "http://LOCALHOST:47001/callback"):
        r = flow.authorize(cid, chal, redirect_uri=uri)
        oauth_error(r, 400, "invalid_request")
        assert "location" not in r.headers, r
    for uri in ("http://127.0.0.1:47002/callback", "http://127.0.0.1/callback"):  # another loopback port: good
        assert flow.authorize(cid, chal, redirect_uri=uri).headers["location"].startswith(uri + "?code="), uri
    for uri, reason in (("http://127.0.0.1:99999/cb", "valid host and port"), ("javascript:alert(1)", "never a redirect"),
                        ("http://127.0.0.1:1/caf\u00e9", "printable ASCII"), ("http://127.0.0.1:1/cb#x", "fragment"),
                        ("http://u@127.0.0.1:1/cb", "userinfo"), ("HTTP://127.0.0.1:1/cb", "lower case"),
                        ("http://client.example/cb", "any other host uses https"), ("/cb", "absolute")):
        r = flow.register(redirect_uris=[uri])
        oauth_error(r, 400, "invalid_redirect_uri")
        assert reason in r.json()["error_description"], r
    for uri in ("https://client.example/cb", "com.example.app:/cb"):  # a web client's, a native app's own scheme
        assert flow.register(redirect_uris=[uri], application_type=None).status == 201, uri


def test_head_authorize_answers_get_s_head_and_every_status_has_its_reason(flow: Flow) -> None:
    """HEAD is GET without the body (RFC 9110 9.3.2): HEAD /authorize was a 405 where GET is a 302.
    And a refusal written by the shell's write_reject said ``HTTP/1.1 401 Status``: its reason
    phrase came from a table that lacked 401."""
    verifier, chal = pkce()
    query = urlencode({"response_type": "code", "client_id": "mockmcp-client", "redirect_uri": REDIRECT,
                       "code_challenge": chal, "code_challenge_method": "S256", "state": "s", "resource": flow.mock.url})
    r = flow.mock.post(b"", {"Content-Type": None, "Accept": None}, method="HEAD", path="/authorize?" + query)
    assert r.status == 302 and r.headers["location"].startswith(REDIRECT + "?code=") and r.body == b"", r
    raw = flow.mock.raw(b"POST /mcp HTTP/1.1\r\nHost: " + urlsplit(flow.mock.url).netloc.encode()
                        + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    assert raw.startswith(b"HTTP/1.1 401 Unauthorized\r\n"), raw[:100]


def test_credential_errors_name_the_problem_and_never_echo_a_credential(flow: Flow) -> None:
    """The scheme was split off at the first space only: ``Basic<TAB>creds`` at /token and
    ``Bearer<TAB>token`` at /mcp were each called another scheme, the credential echoed as its
    name; ``Basic`` alone was "not 'Basic'". A 42-character PKCE verifier was told it does not
    match the challenge, and ``%61ccess_token`` in the query passed where ``access_token`` is refused."""
    creds = base64.b64encode(b"mockmcp-client:mockmcp-secret").decode()
    form = {"grant_type": "authorization_code", "code": "x", "redirect_uri": REDIRECT, "resource": flow.mock.url}
    for header, says in ((f"Basic\t{creds}", "use a space"), ("Basic", "credentials are missing"),
                         ("s3cr3t-standalone-value", "not a header that is not")):
        r = flow.token(form, {"Authorization": header})
        oauth_error(r, 401, "invalid_client")
        assert says in r.json()["error_description"] and creds not in r.body.decode() and "s3cr3t" not in r.body.decode(), r
    r = flow.mock.post(msg(50, "tools/list"), {"Authorization": "Bearer\tsome-secret-token"})
    assert r.status == 400 and challenge(r)["error"] == "invalid_request", r
    assert "use a space" in r.json()["error_description"] and b"some-secret-token" not in r.body + str(r.headers).encode(), r

    cid = flow.register().json()["client_id"]
    verifier = "a" * 42  # its S256 is a well-formed challenge: only the verifier's length is wrong
    chal = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    code = redirected(flow.authorize(cid, chal))["code"]
    r = flow.redeem(cid, code, verifier)
    oauth_error(r, 400, "invalid_request")
    assert "43 to 128 characters" in r.json()["error_description"] and "got 42" in r.json()["error_description"], r

    token = flow.access(cid)["access_token"]
    r = flow.call(token, 51, path="/mcp?%61ccess_token=" + token)
    assert r.status == 400 and challenge(r)["error"] == "invalid_request" and "query string" in r.json()["error_description"], r


def test_what_registrations_keep_is_bounded() -> None:
    """Each registration kept every redirect URI its 64 KiB body held, for up to 10,000 clients
    (some 650 MB a client looping on /register could make the server hold). A registration now
    keeps at most 16 URIs of at most 2048 characters, and all of them together at most 4 MiB of
    URIs: past that the oldest registration is forgotten, as past the client count."""
    with HttpMock("auth") as mock:
        flow = Flow(mock)
        oauth_error(flow.register(redirect_uris=[f"http://127.0.0.1:{i + 1}/cb" for i in range(17)]), 400,
                    "invalid_redirect_uri")
        r = flow.register(redirect_uris=["http://127.0.0.1:1/" + "a" * 2030])  # 2049 characters
        oauth_error(r, 400, "invalid_redirect_uri")
        assert "2048" in r.json()["error_description"], r
        first = flow.register().json()["client_id"]
        biggest = [f"http://127.0.0.1:1/{i:02}" + "a" * (2048 - 21) for i in range(16)]  # 16 of 2048: 32 KiB
        assert all(len(u) == 2048 for u in biggest)
        for _ in range(4 * 1024 * 1024 // (16 * 2048) - 1):
            assert flow.register(redirect_uris=biggest).status == 201
        assert flow.code(first)  # within the bound (4 MiB less 32 KiB, and the first's): still known
        assert flow.register(redirect_uris=biggest).status == 201
        oauth_error(flow.authorize(first, pkce()[1]), 400, "invalid_client")  # past it: the oldest forgotten
        assert mock.stop() == 0
        assert "Traceback" not in mock.stderr()
