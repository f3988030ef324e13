"""Live control of authorization through the real process: ``mockmcp run ... --http 0 --control SOCK``
with a raw OAuth client, the control channel driven by the Python control client and ``mockmcp ctl``.

One process of the bundled ``auth`` scenario takes every token and metadata operation (expire,
revoke, require a scope, override the metadata, getState); a second process of a scenario written
for the rest parks every authorization request for the control channel (approved, approved with
fewer scopes, denied, timed out) and moves to a second authorization server on its own origin
after the first request (migration: the first server's token refused, a registration again at
the second server, whose URL the resource's metadata and getState name).
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import secrets
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import parse_qs, urlencode, urlsplit

import jsonschema
import pytest

from mockmcp.api import MockServer
from mockmcp.cli.outputschemas import SCHEMAS
from mockmcp.controlclient import ControlError, SyncControl
from support.httpmock import HttpMock, Response, msg
from support.paths import SCENARIOS
from support.process import mockmcp_cmd

REDIRECT = "http://127.0.0.1:47001/callback"


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    return verifier, base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def fetch(url: str, method: str = "GET", body: bytes = b"", headers: dict[str, str] | None = None,
          timeout: float = 20) -> Response:
    """One request to any origin (the MCP one or the second)."""
    parts = urlsplit(url)
    c = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
    try:
        c.request(method, parts.path + (f"?{parts.query}" if parts.query else ""), body=body or None, headers=headers or {})
        r = c.getresponse()
        return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
    finally:
        c.close()


class Client:
    """A raw OAuth client of one authorization server (``issuer``: its base URL) for ``mcp``."""

    def __init__(self, mcp: str, issuer: str) -> None:
        self.mcp = mcp
        self.issuer = issuer
        self.client_id = ""

    def register(self) -> str:
        body = {"redirect_uris": [REDIRECT], "application_type": "native", "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"], "client_name": "raw"}
        r = fetch(self.issuer + "/register", "POST", json.dumps(body).encode(), {"Content-Type": "application/json"})
        assert r.status == 201, r
        self.client_id = r.json()["client_id"]
        return self.client_id

    def authorize(self, scope: str, challenge: str, client_id: str | None = None) -> Response:
        params = {"response_type": "code", "client_id": client_id or self.client_id, "redirect_uri": REDIRECT,
                  "code_challenge": challenge, "code_challenge_method": "S256", "state": "st", "scope": scope,
                  "resource": self.mcp}
        return fetch(self.issuer + "/authorize?" + urlencode(params))

    def redeem(self, code: str, verifier: str) -> Response:
        form = {"grant_type": "authorization_code", "code": code, "code_verifier": verifier, "client_id": self.client_id,
                "redirect_uri": REDIRECT, "resource": self.mcp}
        return fetch(self.issuer + "/token", "POST", urlencode(form).encode(),
                     {"Content-Type": "application/x-www-form-urlencoded"})

    def refresh(self, token: str) -> Response:
        form = {"grant_type": "refresh_token", "refresh_token": token, "client_id": self.client_id, "resource": self.mcp}
        return fetch(self.issuer + "/token", "POST", urlencode(form).encode(),
                     {"Content-Type": "application/x-www-form-urlencoded"})

    def tokens(self, scope: str = "mcp:read") -> dict[str, Any]:
        verifier, challenge = pkce()
        r = self.authorize(scope, challenge)
        assert r.status == 302, r
        r = self.redeem(redirected(r)["code"], verifier)
        assert r.status == 200, r
        return dict(r.json())


def redirected(r: Response) -> dict[str, str]:
    location = r.headers["location"]
    assert location.startswith(REDIRECT + "?"), location
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def call(mock: HttpMock, token: str | None, rid: int, tool: str = "echo") -> Response:
    args = {"text": "hi"} if tool == "echo" else {}
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return mock.post(msg(rid, "tools/call", {"name": tool, "arguments": args}), headers)


def bearer(r: Response) -> str:
    return r.headers.get("www-authenticate", "")


AUTH_OPERATIONS = {"expireTokens", "revokeTokens", "requireScope", "listAuthorizations", "approveAuthorization",
                   "denyAuthorization", "setAuthMetadata", "migrate"}


class Recorded(SyncControl):
    """The control client, keeping each operation's result to check it against the control schema."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.results: dict[str, list[Any]] = {}

    def call(self, op: str, params: dict[str, Any], pick: str | None = None) -> Any:
        result = super().call(op, params)
        self.results.setdefault(op, []).append(result)
        return result if pick is None else result[pick]


def fit_the_schema(results: dict[str, list[Any]]) -> None:
    """Each answer fits its operation's result in ``mockmcp schema control`` (what the TypeScript types come from)."""
    schema = SCHEMAS["control"]()
    for op, answers in results.items():
        ref = schema["properties"][op]["properties"]["result"]["$ref"]
        validator = jsonschema.Draft202012Validator({**{k: v for k, v in schema.items() if k == "$defs"}, "$ref": ref})
        for answer in answers:
            problems = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(answer)]
            assert not problems, (op, answer, problems)


def ctl(sock: Path, op: str, *args: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run([*mockmcp_cmd(), "ctl", str(sock), op, *args], capture_output=True, timeout=30)
    return done.returncode, json.loads(done.stdout)


@pytest.fixture(scope="module")
def sock_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # (a short path: a Unix socket's path is bounded)
    return tmp_path_factory.mktemp("ac")


def test_tokens_scopes_and_metadata_live(sock_dir: Path) -> None:
    sock = sock_dir / "a.sock"
    with HttpMock("auth", "--control", str(sock)) as mock:
        control = Recorded(str(sock))
        origin = mock.url.removesuffix("/mcp")
        state = control.call("getState", {})
        assert state["auth"] == {"mcp": mock.url, "authorizationServer": origin, "secondOrigin": None, "pending": 0}
        a, b = Client(mock.url, origin), Client(mock.url, origin)
        a.register(), b.register()
        ta, tb = a.tokens(), b.tokens("mcp:read mcp:admin")
        assert call(mock, ta["access_token"], 1).status == 200

        # expire one client's access tokens now: 401 invalid_token "expired", and the refresh still works
        assert control.call("expireTokens", {"clientId": a.client_id}) == {"expired": 1}
        r = call(mock, ta["access_token"], 2)
        assert r.status == 401 and 'error="invalid_token"' in bearer(r) and "expired" in bearer(r), r
        assert call(mock, tb["access_token"], 3).status == 200  # the other client's is untouched
        r = a.refresh(ta["refresh_token"])
        assert r.status == 200, r
        ta = r.json()
        assert call(mock, ta["access_token"], 4).status == 200

        # revoke by scope (refresh tokens too): only b holds mcp:admin
        code, out = ctl(sock, "revokeTokens", "scope=mcp:admin")
        assert (code, out["result"]) == (0, {"revoked": 2})
        r = call(mock, tb["access_token"], 5)
        assert r.status == 401 and "revoked" in bearer(r), r
        assert b.refresh(tb["refresh_token"]).json()["error"] == "invalid_grant"
        assert call(mock, ta["access_token"], 6).status == 200

        # a scope required from now on, for one tool, then for every request: step-up on demand
        got = control.call("requireScope", {"scopes": ["offline_access"], "tool": "echo"})
        assert {"scopes": ["offline_access"], "tool": "echo"} in got["scopes"]
        r = call(mock, ta["access_token"], 7)
        assert r.status == 403 and 'error="insufficient_scope"' in bearer(r) and "offline_access" in bearer(r), r
        code, out = ctl(sock, "requireScope", 'scopes=["mcp:admin"]')
        assert code == 0 and out["result"]["requiredScopes"] == ["mcp:read", "mcp:admin"]
        r = call(mock, ta["access_token"], 8, tool="admin_report")
        assert r.status == 403 and "mcp:admin" in bearer(r), r
        full = a.tokens("mcp:read mcp:admin offline_access")
        assert call(mock, full["access_token"], 9).status == 200

        # the metadata changed live: a field replaced, one removed
        control.call("setAuthMetadata", {"resource": {"scopes_supported": ["mcp:read", "mcp:admin"]},
                                         "server": {"scopes_supported": None, "issuer": "https://elsewhere.example"}})
        prm = fetch(origin + "/.well-known/oauth-protected-resource/mcp").json()
        assert prm["scopes_supported"] == ["mcp:read", "mcp:admin"] and prm["resource"] == mock.url
        meta = fetch(origin + "/.well-known/oauth-authorization-server").json()
        assert meta["issuer"] == "https://elsewhere.example" and "scopes_supported" not in meta

        # a control mistake is an error answer, the mock goes on
        code, out = ctl(sock, "requireScope", "scopes=[]")
        assert code == 1 and out["error"]["code"] == -32602
        assert control.call("revokeTokens", {"clientId": "nobody", "refresh": False}) == {"revoked": 0}
        with pytest.raises(ControlError, match="no migration"):
            control.call("migrate", {})
        with pytest.raises(ControlError, match="no authorization request 'authz-9'"):
            control.call("approveAuthorization", {"id": "authz-9"})
        assert mock.stop() == 0
        assert "Traceback" not in mock.stderr()
    fit_the_schema(control.results)


def test_control_operations_without_auth_say_why(sock_dir: Path) -> None:
    sock = sock_dir / "p.sock"
    with HttpMock("default", "--control", str(sock)) as mock:
        code, out = ctl(sock, "expireTokens")
        assert code == 1 and "serves no authorization" in out["error"]["message"]
        assert "auth" not in SyncControl(str(sock)).call("getState", {})
        assert mock.stop() == 0


WAITING = """
mockmcp: 1
server: {name: waiting, version: 1.0.0}
auth:
  scopes: [mcp:read, mcp:admin]
  resource: {requiredScopes: [mcp:read]}
  server:
    authorize: {decision: wait, waitTimeout: 1s}
    migration: {afterRequests: 1}
tools:
  - name: echo
    inputSchema: {type: object}
    replies: [{steps: [{text: hi}]}]
"""


class Parked:
    """An authorization request sent in a thread (it waits for the control channel's decision)."""

    def __init__(self, client: Client, scope: str) -> None:
        self.verifier, challenge = pkce()
        self.answer: Response | None = None
        self.thread = threading.Thread(target=self._run, args=(client, scope, challenge))
        self.thread.start()

    def _run(self, client: Client, scope: str, challenge: str) -> None:
        self.answer = client.authorize(scope, challenge)

    def done(self) -> Response:
        self.thread.join(20)
        assert self.answer is not None
        return self.answer


def pending(control: SyncControl, n: int = 1) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 20
    while True:
        found = control.call("listAuthorizations", {}, "pending")
        if len(found) >= n or time.monotonic() > deadline:
            return list(found)
        time.sleep(0.02)


def test_pending_authorizations_and_migration(sock_dir: Path, tmp_path: Path) -> None:
    scenario = tmp_path / "waiting.yaml"
    scenario.write_text(WAITING)
    sock = sock_dir / "w.sock"
    with HttpMock(scenario, "--control", str(sock), "--log-level", "info") as mock:
        control = Recorded(str(sock))
        origin = mock.url.removesuffix("/mcp")
        first = Client(mock.url, origin)
        first.register()

        # approved with fewer scopes than asked
        parked = Parked(first, "mcp:read mcp:admin")
        (entry,) = pending(control)
        assert entry["clientId"] == first.client_id and entry["scopes"] == ["mcp:read", "mcp:admin"]
        assert entry["redirectUri"] == REDIRECT and entry["state"] == "st"
        assert control.call("approveAuthorization", {"id": entry["id"], "scopes": ["mcp:read"]}) == {"decided": [entry["id"]]}
        r = parked.done()
        assert r.status == 302, r
        token = first.redeem(redirected(r)["code"], parked.verifier).json()
        assert token["scope"] == "mcp:read"

        # denied (by mockmcp ctl), then left to time out: both access_denied on the redirect URI
        parked = Parked(first, "mcp:read")
        (entry,) = pending(control)
        code, out = ctl(sock, "denyAuthorization", f"id={entry['id']}", "description=not today")
        assert code == 0 and out["result"] == {"decided": [entry["id"]]}
        got = redirected(parked.done())
        assert got["error"] == "access_denied" and got["error_description"] == "not today" and got["state"] == "st"
        started = time.monotonic()
        got = redirected(Parked(first, "mcp:read").done())
        assert got["error"] == "access_denied" and "in time" in got["error_description"]
        assert 0.8 < time.monotonic() - started < 15
        assert pending(control, 0) == [] and control.call("denyAuthorization", {}) == {"decided": []}

        # migration after the first request let through: the metadata names the second origin
        assert control.call("getState", {})["auth"]["migrated"] is False
        assert call(mock, token["access_token"], 1).status == 200
        r = call(mock, token["access_token"], 2)
        assert r.status == 401 and "authorization server changed" in bearer(r), r
        prm = fetch(origin + "/.well-known/oauth-protected-resource/mcp").json()
        (second,) = prm["authorization_servers"]
        assert second != origin and urlsplit(second).hostname == urlsplit(origin).hostname
        state = control.call("getState", {})["auth"]
        assert state["migrated"] is True and state["authorizationServer"] == state["secondOrigin"] == second
        meta = fetch(second + "/.well-known/oauth-authorization-server").json()
        assert meta["issuer"] == second and meta["token_endpoint"] == second + "/token"
        assert fetch(second + "/mcp", "POST").status == 404  # the second origin serves only the authorization server
        verifier, challenge = pkce()
        stale = Client(mock.url, second).authorize("mcp:read", challenge, client_id=first.client_id)
        assert stale.status == 400 and stale.json()["error"] == "invalid_client"  # the first server's client is unknown here
        again = Client(mock.url, second)
        again.register()
        parked = Parked(again, "mcp:read")
        pending(control)
        assert len(control.call("approveAuthorization", {}, "decided")) == 1  # (no id: every waiting one)
        fresh = again.redeem(redirected(parked.done())["code"], parked.verifier).json()
        assert call(mock, fresh["access_token"], 3).status == 200
        assert mock.stop() == 0
        assert f"second origin): {second}" in mock.stderr()
    fit_the_schema(control.results)


def test_the_python_api_steers_authorization(tmp_path: Path) -> None:
    """``MockServer``'s own methods (and the pytest fixture's, the same class) over an HTTP run of ``auth``;
    with the two processes above, every authorization operation's answer fits the control schema."""
    scenario = tmp_path / "movable.yaml"
    scenario.write_text((SCENARIOS / "auth.yaml").read_text().replace("  server:\n", "  server:\n    migration: {}\n", 1))
    mock = MockServer(str(scenario), tmp_path, control=True)
    with mock.http() as url:
        origin = url.removesuffix("/mcp")
        assert mock.sync.auth_state()["authorizationServer"] == origin
        client = Client(url, origin)
        client.register()
        client.tokens()
        assert mock.sync.expire_tokens(client_id=client.client_id) == 1
        assert mock.sync.revoke_tokens() == 1  # the refresh token is all that is left usable
        assert mock.sync.pending_authorizations() == [] and mock.sync.approve_authorization() == []
        got = mock.sync.require_scope(["mcp:admin"], prompt="p")
        assert got["scopes"][-1] == {"scopes": ["mcp:admin"], "prompt": "p"}
        assert mock.sync.set_auth_metadata(server={"service_documentation": "https://docs.example"})["server"] == {
            "service_documentation": "https://docs.example"}
        assert fetch(origin + "/.well-known/oauth-authorization-server").json()["service_documentation"] == "https://docs.example"
        moved = mock.sync.call("migrate", {})
        fit_the_schema({"migrate": [moved]})
        second = moved["authorizationServer"]
        assert second != origin and mock.sync.auth_state() == {"mcp": url, "authorizationServer": second,
                                                                "secondOrigin": second, "pending": 0, "migrated": True}
        prm = fetch(origin + "/.well-known/oauth-protected-resource").json()
        assert prm["authorization_servers"] == [second]
        with pytest.raises(ControlError, match="moved already"):
            mock.sync.migrate()
