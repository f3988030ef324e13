"""The authorization client checks: through the real ``mockmcp run --http 0`` process with a raw
OAuth client (tests/support/oauthclient.py, one rule switched per mistake), and the pure judging
rules of ``verify/auth_checks.py`` fed facts directly.

One process per scenario variant; in a process, mistakes that do not disturb each other's
judging run one after the other (the checks follow one client per process, so the state a
mistake leaves, a token held, scopes asked, is part of what the next one meets, and each
process's report must hold exactly the findings its mistakes explain: no false positive).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import yaml

from mockmcp.verify.auth_checks import RETRY_LIMIT, AuthChecker
from mockmcp.verify.checks import CHECKS, spec_url
from support.httpmock import HttpMock
from support.oauthclient import REDIRECT, Behaviour, OAuthClient, PreRegistered, Refused, pkce_pair
from support.paths import SCENARIOS

DOCUMENT = "https://client.example/oauth/metadata.json"


def run(mock: HttpMock, report: Path) -> tuple[int, dict[str, Any]]:
    status = mock.stop()
    return status, json.loads(report.read_text())


def checks_of(report: dict[str, Any]) -> set[str]:
    return {f["check"] for f in report["findings"]}


def refused(client: OAuthClient, method: str = "tools/list", params: dict[str, Any] | None = None) -> str:
    with pytest.raises(Refused) as caught:
        client.request(method, params)
    return str(caught.value)


def serve(tmp_path: Path, scenario: Path | str, strict: bool = True) -> tuple[HttpMock, Path]:
    report = tmp_path / "report.json"
    args = ["--journal", str(tmp_path / "journal.jsonl"), "--report", str(report)] + (["--strict"] if strict else [])
    return HttpMock(scenario, *args), report


def scenario(tmp_path: Path, auth: dict[str, Any], tools: list[dict[str, Any]] | None = None) -> Path:
    path = tmp_path / "scenario.yaml"
    text = [{"name": "echo", "inputSchema": {"type": "object"}, "replies": [{"steps": [{"text": "ok"}]}]},
            {"name": "admin", "inputSchema": {"type": "object"}, "replies": [{"steps": [{"text": "admin ok"}]}]}]
    path.write_text(yaml.safe_dump({"mockmcp": 1, "auth": auth, "tools": tools or text}))
    return path


def test_a_careful_client_has_no_finding(tmp_path: Path) -> None:
    mock, report = serve(tmp_path, SCENARIOS / "auth.yaml")
    with mock:
        client = OAuthClient(mock.url)
        assert client.session("echo", {"text": "hi"})["content"][0]["text"] == "hi"
        # the step-up: a 403 insufficient_scope, the union of the scopes authorized, the call retried
        assert client.request("tools/call", {"name": "admin_report", "arguments": {}})["result"]
        assert client.authorizations == ["mcp:read offline_access", "mcp:read offline_access mcp:admin"]
        status, got = run(mock, report)
    assert status == 0 and got["ok"] and got["findings"] == [], got["findings"]
    events = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    auth = [e for e in events if e.get("kind") == "auth"]
    assert [e["exchange"] for e in auth][:3] == ["mcp", "resourceMetadata", "oauth"]
    text = (tmp_path / "journal.jsonl").read_text()
    assert client.token is not None and client.token not in text and client.refresh not in text  # fingerprints only
    tokens = [e for e in auth if e["exchange"] == "token"]
    assert all(len(e["issued"]) == 12 and len(e["code"]) == 12 for e in tokens)


def test_the_mistakes_at_the_endpoints(tmp_path: Path) -> None:
    """The bundled ``auth``: a careful client first (it holds a token), then each mistake once."""
    mock, report = serve(tmp_path, SCENARIOS / "auth.yaml")
    with mock:
        good = OAuthClient(mock.url)
        good.session("echo", {"text": "hi"})
        assert "authorization refused" in refused(OAuthClient(mock.url, behaviour=Behaviour(pkce=False)))
        assert "authorization refused" in refused(OAuthClient(mock.url, behaviour=Behaviour(sendResource=False)))
        careless = OAuthClient(mock.url, behaviour=Behaviour(applicationType=False))  # registers without it
        assert careless.request("tools/list")["result"]
        origin = mock.url.removesuffix("/mcp")
        assert good.client is not None
        verifier, challenge = pkce_pair()
        base = {"response_type": "code", "client_id": good.client.client_id, "redirect_uri": REDIRECT, "state": "s",
                "code_challenge": challenge, "code_challenge_method": "S256", "scope": "mcp:read", "resource": mock.url}
        for change in ({"code_challenge_method": "plain"}, {"state": None}, {"resource": origin + "/other"}):
            query = urlencode({k: v for k, v in {**base, **change}.items() if v is not None})
            assert good.http("GET", origin + "/authorize?" + query).status == 302
        listing = json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/list", "params": {}}).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        assert good.http("POST", mock.url + "?access_token=" + str(good.token), headers, listing).status == 400
        assert good.http("POST", mock.url, {**headers, "Authorization": "Bearer not-one-of-ours"}, listing).status == 401
        assert good.http("POST", mock.url, headers, listing).status == 401  # the token it holds, dropped...
        assert good.request("tools/list")["result"]  # ...as its next request, with that token, shows
        status, got = run(mock, report)
    assert status == 1 and not got["ok"]  # --strict
    assert checks_of(got) == {"auth.pkce.missing", "auth.resource.missing", "auth.registration.applicationType",
                              "auth.pkce.method", "auth.state.missing", "auth.resource.mismatch", "auth.token.query",
                              "auth.token.foreign", "auth.token.dropped"}
    for f in got["findings"]:
        assert f["level"] == CHECKS[f["check"]][0] and f["spec"] == spec_url(CHECKS[f["check"]][1])
        assert f["spec"].startswith("https://modelcontextprotocol.io/specification/2026-07-28/basic/authorization")
        assert f.get("http", "POST").split()[0] in ("GET", "POST")
    missing = [f for f in got["findings"] if f["check"] == "auth.resource.missing"]
    assert len(missing) == 1 and "authorization request" in missing[0]["text"]  # refused there: no token request


def test_what_a_client_must_refuse(tmp_path: Path) -> None:
    """A resource metadata naming another resource and an issuer that lies: a client that goes on."""
    mock, report = serve(tmp_path, scenario(tmp_path, {
        "scopes": ["mcp"], "resource": {"resource": "https://evil.example/mcp", "deliberate": True},
        "server": {"issuer": "https://honest.example", "deliberate": True}}))
    with mock:
        careful = OAuthClient(mock.url)
        assert "resource" in refused(careful)
        blind = OAuthClient(mock.url, behaviour=Behaviour(checkResource=False, checkIssuer=False))
        assert blind.request("tools/list")["result"]
        status, got = run(mock, report)
    assert status == 1
    assert checks_of(got) == {"auth.resource.unvalidated", "auth.issuer.mismatch"}
    assert [f["check"] for f in got["findings"]].count("auth.issuer.mismatch") == 1  # once per issuer


def test_iss_not_validated_before_the_code_is_redeemed(tmp_path: Path) -> None:
    mock, report = serve(tmp_path, scenario(tmp_path, {"server": {"authorize": {"iss": "wrong"}}}))
    with mock:
        assert "iss" in refused(OAuthClient(mock.url))  # the careful client stops before the token request
        assert OAuthClient(mock.url, behaviour=Behaviour(iss="ignore")).request("tools/list")["result"]
        status, got = run(mock, report)
    assert status == 1 and checks_of(got) == {"auth.iss.unchecked"}
    assert "RFC 9207" in got["findings"][0]["text"]


def test_scope_selection_and_registration(tmp_path: Path) -> None:
    """Scopes offered by the challenge (a), by scopes_supported (a, b), a step-up tool (c), an
    authorization server listing x but no offline_access, and a client expected to use its metadata
    document. Each client below makes one mistake; the order keeps each judged on its own."""
    mock, report = serve(tmp_path, scenario(tmp_path, {
        "scopes": ["a", "b", "c", "x", "offline_access"],
        "resource": {"scopesSupported": ["a", "b"], "requiredScopes": ["a"], "scopes": [{"tool": "admin", "scopes": ["c"]}],
                     "challenge": {"insufficientScope": "missing"}},
        "server": {"scopesSupported": ["a", "b", "c", "x"], "registration": {"acceptAnyDocument": True}},
        "expect": {"registration": "document"}}), strict=False)
    with mock:
        def client(**b: Any) -> OAuthClient:
            return OAuthClient(mock.url, behaviour=Behaviour(**b), document_url=DOCUMENT)

        assert client().session("admin")  # careful: no finding
        assert client(scope="supportedFirst").request("tools/list")["result"]  # asks a b, the challenge said a
        dropper = client(stepUp="missing")  # the 403 names only c; it asks c alone
        assert dropper.request("tools/list")["result"]
        refused(dropper, "tools/call", {"name": "admin", "arguments": {}})  # c alone; then a alone; ...
        assert client(scope="asMetadata").request("tools/list")["result"]  # asks x, which nothing offered
        assert client(offlineAccess="always").request("tools/list")["result"]  # offline_access, not listed
        assert client(registration="dynamic").request("tools/list")["result"]  # registers despite its document
        status, got = run(mock, report)
    assert status == 0  # warnings and an error, but no --strict
    found = [f["check"] for f in got["findings"]]
    assert set(found) == {"auth.scope.order", "auth.scope.dropped", "auth.scope.invented", "auth.offlineAccess.unsupported",
                          "auth.registration.cimdUnused"}, got["findings"]
    assert len(found) == 6 and found.count("auth.scope.dropped") == 2  # the dropper drops on each of its step-ups
    text = {f["check"]: f["text"] for f in got["findings"]}
    assert "with b from scopes_supported" in text["auth.scope.order"]
    assert "asks x" in text["auth.scope.invented"]
    assert [f["text"].split(",")[0] for f in got["findings"] if f["check"] == "auth.scope.dropped"] == [
        "the step-up authorization asks c and drops a", "the step-up authorization asks a and drops c"]


def test_retry_limit_and_registration_kind(tmp_path: Path) -> None:
    """A scope that is never granted: a client that steps up past the limit; and a client given
    pre-registered credentials that registers anyway."""
    mock, report = serve(tmp_path, scenario(tmp_path, {
        "scopes": ["a", "c"], "resource": {"requiredScopes": ["a"], "scopes": [{"tool": "admin", "scopes": ["c"]},
                                                                              {"tool": "echo", "scopes": ["c"]}]},
        "server": {"authorize": {"grantScopes": ["a"]},
                   "registration": {"preRegistered": [{"clientId": "given", "clientSecret": "s"}]}},
        "expect": {"registration": "preRegistered"}}), strict=False)
    with mock:
        pre = PreRegistered("given", "s")
        patient = OAuthClient(mock.url, pre_registered=pre)  # gives up after its third 403
        assert "giving up" in refused(patient, "tools/call", {"name": "admin", "arguments": {}})
        stubborn = OAuthClient(mock.url, pre_registered=pre, behaviour=Behaviour(step_up_limit=RETRY_LIMIT + 1))
        refused(stubborn, "tools/call", {"name": "echo", "arguments": {}})  # another operation: counted apart
        assert OAuthClient(mock.url).request("tools/list")["result"]  # no credentials used: registers
        status, got = run(mock, report)
    found = [f["check"] for f in got["findings"]]
    assert sorted(found) == ["auth.registration.unexpected", "auth.registration.unexpected", "auth.scope.retryLimit"]
    assert "after 3 answers 403" in next(f["text"] for f in got["findings"] if f["check"] == "auth.scope.retryLimit")


def test_a_registration_reused_after_a_migration(tmp_path: Path) -> None:
    mock, report = serve(tmp_path, scenario(tmp_path, {"server": {"migration": {"afterRequests": 1}}}))
    with mock:
        stale = OAuthClient(mock.url, behaviour=Behaviour(reuseRegistration=True))
        assert stale.request("tools/list")["result"]  # the resource moves to the second server now
        refused(stale)  # the first server's token refused; its client id unknown at the second
        status, got = run(mock, report)
    assert status == 1 and checks_of(got) == {"auth.registration.stale"}, got["findings"]


# ------------------------------------------------------------ the judging rules alone

def authorize(**facts: Any) -> dict[str, Any]:
    base = {"exchange": "authorize", "issuer": "http://as", "client": "c1", "clientKind": "dynamic", "pkce": "S256",
            "state": True, "resource": "http://rs/mcp", "resourceOk": True, "scope": None, "offlineListed": False,
            "issAdvertised": True, "code": "k1", "iss": "correct"}
    return {**base, **facts}


def token(**facts: Any) -> dict[str, Any]:
    base = {"exchange": "token", "issuer": "http://as", "grant": "authorization_code", "client": "c1",
            "clientKind": "dynamic", "resource": "http://rs/mcp", "resourceOk": True, "code": "k1", "issued": "t1",
            "granted": []}
    return {**base, **facts}


def ids(checker: AuthChecker, facts: dict[str, Any]) -> list[str]:
    return [f.check for f in checker.exchange(facts)]


@pytest.mark.parametrize(("iss", "advertised", "found"), [
    ("correct", True, []), ("missing", False, []), ("missing", True, ["auth.iss.unchecked"]),
    ("wrong", False, ["auth.iss.unchecked"]), ("wrong", True, ["auth.iss.unchecked"]),
])
def test_iss_rules(iss: str, advertised: bool, found: list[str]) -> None:
    c = AuthChecker()
    assert ids(c, authorize(iss=iss, issAdvertised=advertised)) == []
    assert ids(c, token()) == found
    assert ids(c, token(code="k2")) == []  # another code: nothing known against it


def test_scope_is_omitted_when_nothing_defines_one() -> None:
    c = AuthChecker()
    ids(c, {"exchange": "mcp", "status": 401, "bearer": "none", "challenge": None})
    ids(c, {"exchange": "resourceMetadata", "resourceOk": True, "scopesSupported": None})
    found = c.exchange(authorize(scope=["mcp"]))
    assert [f.check for f in found] == ["auth.scope.invented"] and "omit the scope parameter" in found[0].text
    assert ids(AuthChecker(), authorize(scope=None)) == []


def test_a_refresh_without_resource_and_a_client_that_had_a_token() -> None:
    c = AuthChecker()
    assert ids(c, {"exchange": "mcp", "status": 401, "bearer": "none", "challenge": ["a"]}) == []  # before any token
    ids(c, authorize(scope=["a"]))
    ids(c, token(granted=["a"]))
    assert ids(c, token(grant="refresh_token", code=None, resource=None)) == ["auth.resource.missing"]
    assert ids(c, {"exchange": "mcp", "status": 401, "bearer": "unknown", "presented": "t1"}) == []  # ours (forgotten)
    assert ids(c, {"exchange": "mcp", "status": 401, "bearer": "none"}) == []  # a new client, or a drop?
    assert [f.check for f in c.passed("tools/list", {}, "Bearer t1-secret")] == []  # not the token it held
    ids(c, {"exchange": "mcp", "status": 401, "bearer": "none"})
    ids(c, token(issued="t2"))  # a new client's token: the token-less request was not a drop
    ids(c, {"exchange": "mcp", "status": 401, "bearer": "none"})
    assert ids(c, {"exchange": "mcp", "status": 403, "bearer": "ok", "presented": "t1"}) == ["auth.token.dropped"]


def test_the_retry_count_is_per_operation_and_reset_when_it_gets_through() -> None:
    c = AuthChecker()
    forbidden = {"exchange": "mcp", "status": 403, "bearer": "ok", "challenge": ["c"], "operation": "tools/call admin"}
    for _ in range(RETRY_LIMIT):
        assert ids(c, forbidden) == []
    c.passed("tools/call", {"name": "admin"}, None)
    for _ in range(RETRY_LIMIT):
        assert ids(c, forbidden) == []
    assert ids(c, {**forbidden, "operation": "tools/call other"}) == []
    assert ids(c, forbidden) == ["auth.scope.retryLimit"]
    assert ids(c, forbidden) == []  # once per operation


def test_a_token_request_that_ignores_the_registered_method() -> None:
    """The registration response names the method the server registered (it may replace the one
    asked); a token request authenticated otherwise is found once per client."""
    c = AuthChecker()
    register = {"exchange": "register", "issuer": "http://as", "applicationType": "native", "cimd": False}
    ids(c, {**register, "askedMethod": "none", "client": "c1", "clientKind": "dynamic", "registeredMethod": "client_secret_post"})
    ids(c, {**register, "askedMethod": "none", "client": "c2", "clientKind": "dynamic", "registeredMethod": "none"})
    found = c.exchange(token(authMethod="none", issued=None))
    assert [f.check for f in found] == ["auth.registration.ignored"]
    assert "asked none and was registered with client_secret_post" in found[0].text
    assert ids(c, token(authMethod="none", issued=None)) == []  # once per client
    assert ids(c, token(client="c2", authMethod="none", code="k2")) == []  # used as registered
    assert ids(c, token(client="c3", authMethod="client_secret_basic", code="k3")) == []  # not registered here
