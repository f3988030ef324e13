"""Secrets stay secret: no token, code, verifier, state or client secret reaches what mockmcp writes.

Through the real process: ``mockmcp run auth --http 0`` with ``--journal`` and ``--report``, and
another with ``--session DIR`` (its journal, state and report in DIR), each at ``--log-level
debug`` with stderr kept; the clients do the whole flow (dynamic registration with
``client_secret_post``, a step-up, a refresh; the pre-registered client with
``client_secret_basic``), and the session's also a refresh after the control channel expired the
tokens mid-session and what a careless client does (a token the server
never issued, a token in the query string, a replayed code with a wrong verifier). Every secret the
clients sent or were given is gathered from their own side of the wire; then every file under
the test's folder, the mocks' stdout and stderr, the journal's transcript, its HTML timeline and
``mockmcp report DIR`` are searched for each of them: none is found. The journal still says what
happened (each request's ``Authorization`` as ``Bearer [REDACTED]``, the ``auth`` events).
"""

from __future__ import annotations

import base64
import json
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from support.httpmock import HttpMock, Response, mcp_headers, msg
from support.oauthclient import Behaviour, OAuthClient, PreRegistered
from support.process import run_mock

from mockmcp.controlclient import SyncControl

# the names under which OAuth carries a secret, in a query, a form, a redirect or a JSON answer
SECRET_PARAMS = frozenset({"state", "code", "code_verifier", "code_challenge", "access_token", "refresh_token",
                           "client_secret"})
FORM = "application/x-www-form-urlencoded"


class Seeing(OAuthClient):
    """The raw OAuth client, keeping every secret it sends or receives, by kind."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: dict[str, set[str]] = {}

    def _keep(self, kind: str, value: str) -> None:
        self.seen.setdefault(kind, set()).add(value)

    def http(self, method: str, url: str, headers: dict[str, str] | None = None, body: bytes = b"") -> Response:
        for name, value in parse_qsl(urlsplit(url).query):
            if name in SECRET_PARAMS:
                self._keep(name, value)
        for name, value in (headers or {}).items():
            if name.lower() == "authorization":
                scheme, _, credential = value.partition(" ")
                self._keep(scheme.lower(), credential)
                if scheme.lower() == "basic":  # the client's secret, as the token endpoint decodes it
                    self._keep("client_secret", base64.b64decode(credential).decode().partition(":")[2])
        if body and (headers or {}).get("Content-Type") == FORM:
            for name, value in parse_qsl(body.decode()):
                if name in SECRET_PARAMS:
                    self._keep(name, value)
        r = super().http(method, url, headers, body)
        for name, value in parse_qsl(urlsplit(r.headers.get("location", "")).query):
            if name in SECRET_PARAMS:
                self._keep(name, value)
        if r.headers.get("content-type", "").startswith("application/json") and r.body:
            answer = r.json()
            if isinstance(answer, dict):
                for name in SECRET_PARAMS & answer.keys():
                    if isinstance(answer[name], str):
                        self._keep(name, answer[name])
        return r

    def mcp(self, method: str, url: str | None = None, token: str | None = None) -> Response:
        """One MCP request as a careless client sends it (another URL, another token)."""
        message = msg(self.next_id, method)
        self.next_id += 1
        headers = dict(mcp_headers(message))
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return self.http("POST", url or self.url, headers, json.dumps(message).encode())

    def token_form(self, form: dict[str, str]) -> Response:
        assert self.client is not None
        form = {**form, "client_id": self.client.client_id, "resource": self.url}
        if self.client.secret is not None:
            form["client_secret"] = self.client.secret
        return self.http("POST", self.url.removesuffix("/mcp") + "/token", {"Content-Type": FORM},
                         urlencode(form).encode())


def full_flow(url: str) -> list[Seeing]:
    """Dynamic registration with client_secret_post, a step-up and a refresh; the pre-registered
    client with client_secret_basic."""
    dcr = Seeing(url, behaviour=Behaviour(tokenAuthMethod="client_secret_post"))
    assert dcr.session("echo", {"text": "hi"})["content"][0]["text"] == "hi"
    stepped = dcr.request("tools/call", {"name": "admin_report", "arguments": {}})
    assert stepped["result"]["content"][0]["text"] == "all systems nominal"
    assert dcr.refresh is not None
    refreshed = dcr.token_form({"grant_type": "refresh_token", "refresh_token": dcr.refresh})
    assert refreshed.status == 200, refreshed
    dcr.token = refreshed.json()["access_token"]
    assert "result" in dcr.request("tools/list")
    pre = Seeing(url, pre_registered=PreRegistered("mockmcp-client", "mockmcp-secret"))
    assert pre.session("echo", {"text": "again"})["content"][0]["text"] == "again"
    return [dcr, pre]


def careless(client: Seeing) -> None:
    """What a careless client sends, each refused: a token never issued, a token in the query, a
    replayed code with a wrong verifier."""
    assert client.mcp("tools/list", token=secrets.token_urlsafe(32)).status == 401
    assert client.token is not None
    assert client.mcp("tools/list", url=f"{client.url}?access_token={client.token}").status == 400
    code = next(iter(client.seen["code"]))
    replayed = client.token_form({"grant_type": "authorization_code", "code": code, "code_verifier": "x" * 43,
                                  "redirect_uri": client.redirect_uri})
    assert replayed.status == 400 and replayed.json()["error"] == "invalid_grant", replayed


def secrets_of(clients: list[Seeing]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for client in clients:
        for kind, values in client.seen.items():
            out.setdefault(kind, set()).update(values)
    return out


def leaks(texts: dict[str, str], found: dict[str, set[str]]) -> list[str]:
    return [f"{where}: a {kind}" for where, text in texts.items() for kind, values in found.items()
            for value in values if value in text]


def files_under(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_bytes().decode("latin-1") for p in sorted(folder.rglob("*")) if p.is_file()}


def test_no_secret_reaches_the_journal_report_session_timeline_or_stderr(tmp_path: Path) -> None:
    journal, report = tmp_path / "journal.jsonl", tmp_path / "report.json"
    session = tmp_path / "session"
    streams: dict[str, str] = {}
    clients: list[Seeing] = []
    with HttpMock("auth", "--journal", str(journal), "--report", str(report), "--log-level", "debug") as mock:
        clients += full_flow(mock.url)
        assert mock.stop() == 0
        streams["journal run: stdout"] = mock.first_line + mock.proc.stdout.read().decode()  # type: ignore[union-attr]
        streams["journal run: stderr"] = mock.stderr()
    control = tmp_path / "c.sock"
    with HttpMock("auth", "--session", str(session), "--report", str(tmp_path / "session-report.json"),
                  "--log-level", "debug", "--control", str(control)) as mock:
        clients += full_flow(mock.url)
        dcr = clients[-2]  # the dynamically registered one (client_secret_post)
        assert SyncControl(str(control)).expire_tokens() >= 1  # mid-session: a 401 invalid_token, a refresh
        assert "result" in dcr.request("tools/list")
        careless(dcr)
        assert mock.stop() == 0
        streams["session run: stdout"] = mock.first_line + mock.proc.stdout.read().decode()  # type: ignore[union-attr]
        streams["session run: stderr"] = mock.stderr()
    for name, args in {"timeline": ("journal", str(journal), "--html", str(tmp_path / "timeline.html")),
                       "session timeline": ("journal", str(session / "journal.jsonl"), "--html",
                                            str(tmp_path / "session-timeline.html")),
                       "transcript": ("journal", str(journal), "--color", "never"),
                       "session transcript": ("journal", str(session / "journal.jsonl"), "--color", "never"),
                       "session report": ("report", str(session), "--per-process", "--json")}.items():
        done = run_mock(*args)
        # the careless client broke rules: the session's verdict says so (exit 1)
        assert done.returncode == (1 if name == "session report" else 0), (name, done.stderr)
        streams[f"{name}: stdout"], streams[f"{name}: stderr"] = done.stdout.decode(), done.stderr.decode()

    found = secrets_of(clients)
    # every kind of secret was really seen by a client, so the search below means something
    assert {"state", "code", "code_verifier", "code_challenge", "access_token", "refresh_token", "client_secret",
            "bearer", "basic"} <= found.keys(), found.keys()
    texts = {**files_under(tmp_path), **streams}
    assert {"journal.jsonl", "report.json", "timeline.html", "session/journal.jsonl", "session-report.json",
            "session-timeline.html"} <= texts.keys(), sorted(texts)
    assert leaks(texts, found) == []

    # the findings about the careless client's tokens are there, without the tokens
    checks = {f["check"] for f in json.loads(streams["session report: stdout"])["findings"]}
    assert {"auth.token.foreign", "auth.token.query"} <= checks, checks
    # the journal still tells what happened, and the search finds a secret where one is
    records = [json.loads(line) for line in (session / "journal.jsonl").read_text().splitlines()]
    assert {r["headers"]["authorization"] for r in records if r["dir"] == "in"} == {"Bearer [REDACTED]"}
    paths = {r["path"] for r in records if r.get("kind") == "auth"}
    assert {"/mcp", "/register", "/authorize", "/token"} <= paths, paths
    token = next(iter(found["access_token"]))
    assert "a file: a access_token" in leaks({"a file": f"x{token}y"}, found)


def test_the_journal_keeps_other_headers_and_the_scheme(tmp_path: Path) -> None:
    """Outside authorization too (a plain scenario, a client with a static key): the credential
    is redacted, the scheme and every other header are kept."""
    journal = tmp_path / "j.jsonl"
    with HttpMock("default", "--journal", str(journal)) as mock:
        message = msg(1, "tools/list")
        r = mock.post(message, {"Authorization": "Bearer static-key-123", "X-Api-Key": "k-456",
                                "Cookie": "sid=789", "X-Trace": "t-1"})
        assert r.status == 200, r
        assert mock.stop() == 0
    text = journal.read_text()
    assert not any(s in text for s in ("static-key-123", "k-456", "sid=789")), text
    (headers,) = [json.loads(line)["headers"] for line in text.splitlines() if json.loads(line)["dir"] == "in"]
    assert headers["authorization"] == "Bearer [REDACTED]"
    assert headers["x-api-key"] == headers["cookie"] == "[REDACTED]"
    assert headers["x-trace"] == "t-1" and headers["content-type"] == "application/json"

