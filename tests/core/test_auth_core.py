"""The authorization core without sockets: ``core.auth`` driven with a hand-made clock and mint.

What the process tests (tests/shells/test_http_auth.py) cannot reach cheaply: the clock moved by
hand (code and refresh expiry), the refresh switches, the bounds of the token table, the strict
form parser's rules one by one, and the challenge's quoting.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
from urllib.parse import parse_qs, urlencode, urlsplit

import attrs
import pytest

from mockmcp.core.auth import tokens as tokens_module
from mockmcp.core.auth.answers import BearerError, OAuthError, answer_for, challenge
from mockmcp.core.auth.forms import parse_form, parse_pairs
from mockmcp.core.auth.site import AuthSite
from mockmcp.scenario.model.auth import Auth, AuthorizationServer, ProtectedResource, Registration, Tokens
from mockmcp.scenario.model.base import Duration

ORIGIN = "http://127.0.0.1:9"
MCP = ORIGIN + "/mcp"
REDIRECT = "http://127.0.0.1:5000/cb"
VERIFIER = "v" * 43
CHALLENGE = base64.urlsafe_b64encode(hashlib.sha256(VERIFIER.encode()).digest()).rstrip(b"=").decode()


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def site(tokens: Tokens = Tokens(), **server: object) -> tuple[AuthSite, Clock]:
    clock = Clock()
    counter = itertools.count()
    config = Auth(scopes=["a", "b", "offline_access"], resource=ProtectedResource(requiredScopes=["a"]),
                  server=attrs.evolve(AuthorizationServer(tokens=tokens), **server))
    return AuthSite(config, clock, lambda: f"t{next(counter)}", time_scale=0.5), clock


def post(s: AuthSite, path: str, form: dict[str, str]) -> tuple[int, dict[str, object]]:
    import json

    answer = s.answer(b"POST", path.encode(), {b"content-type": FORM_TYPE}, urlencode(form).encode(), ORIGIN)
    return answer.status, json.loads(answer.body)


FORM_TYPE = b"application/x-www-form-urlencoded"


def register(s: AuthSite) -> str:
    import json

    body = json.dumps({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
                       "grant_types": ["authorization_code", "refresh_token"]}).encode()
    answer = s.answer(b"POST", s.server.endpoints["register"].encode(), {b"content-type": b"application/json"}, body,
                      ORIGIN)
    assert answer.status == 201
    return str(json.loads(answer.body)["client_id"])


def authorize(s: AuthSite, cid: str, scope: str = "a") -> dict[str, str]:
    query = urlencode({"response_type": "code", "client_id": cid, "redirect_uri": REDIRECT, "code_challenge": CHALLENGE,
                       "code_challenge_method": "S256", "scope": scope, "resource": MCP, "state": "s"})
    answer = s.answer(b"GET", f"{s.server.endpoints['authorize']}?{query}".encode(), {}, b"", ORIGIN)
    assert answer.status == 302
    location = dict(answer.headers)[b"location"].decode()
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def redeem(s: AuthSite, cid: str, code: str) -> tuple[int, dict[str, object]]:
    return post(s, "/token", {"grant_type": "authorization_code", "code": code, "code_verifier": VERIFIER,
                              "client_id": cid, "resource": MCP})


def test_codes_and_tokens_expire_on_the_handed_in_clock_scaled() -> None:
    s, clock = site(Tokens(lifetime=Duration(10.0), codeLifetime=Duration(4.0), refreshLifetime=Duration(20.0)))
    cid = register(s)
    code = authorize(s, cid)["code"]
    clock.now += 2.0  # the code lives 4 s x 0.5
    status, body = redeem(s, cid, code)
    assert (status, body["error"]) == (400, "invalid_grant") and "expired" in str(body["error_description"])
    status, body = redeem(s, cid, authorize(s, cid)["code"])
    assert status == 200 and body["expires_in"] == 10  # the lifetime as written; it passes scaled
    token = str(body["access_token"])
    assert s.gate(b"/mcp", {b"authorization": f"Bearer {token}".encode()}, ORIGIN) is None
    clock.now += 5.0
    refused = s.gate(b"/mcp", {b"authorization": f"Bearer {token}".encode()}, ORIGIN)
    assert refused is not None and refused.status == 401 and b"expired" in refused.body
    clock.now += 6.0  # the refresh token lives 20 s x 0.5
    status, body = post(s, "/token", {"grant_type": "refresh_token", "refresh_token": str(body["refresh_token"]),
                                      "client_id": cid})
    assert (status, body["error"]) == (400, "invalid_grant")


@pytest.mark.parametrize("refresh", ["rotate", "reuse", "reject"])
def test_refresh_switches(refresh: str) -> None:
    s, _ = site(Tokens(refresh=refresh, refreshScopes=["a", "b"]))  # type: ignore[arg-type]
    cid = register(s)
    _, first = redeem(s, cid, authorize(s, cid)["code"])
    status, body = post(s, "/token", {"grant_type": "refresh_token", "refresh_token": str(first["refresh_token"]),
                                      "client_id": cid})
    if refresh == "reject":
        assert (status, body["error"]) == (400, "invalid_grant")
        return
    assert status == 200 and body["scope"] == "a b"  # scripted: a refresh changes the scopes
    assert (body["refresh_token"] == first["refresh_token"]) is (refresh == "reuse")
    again, _ = post(s, "/token", {"grant_type": "refresh_token", "refresh_token": str(first["refresh_token"]),
                                  "client_id": cid})
    assert again == (200 if refresh == "reuse" else 400)


def test_offline_access_decides_refresh_tokens_and_deny_redirects() -> None:
    s, _ = site(Tokens(refreshTokens="offlineAccess"))
    cid = register(s)
    assert "refresh_token" not in redeem(s, cid, authorize(s, cid, "a")["code"])[1]
    assert "refresh_token" in redeem(s, cid, authorize(s, cid, "a offline_access")["code"])[1]
    denied, _ = site(authorize=attrs.evolve(AuthorizationServer().authorize, decision="deny", iss="missing"))
    got = authorize(denied, register(denied))
    assert got["error"] == "access_denied" and got["state"] == "s" and "iss" not in got


def test_the_iss_variants_and_the_claimed_issuer() -> None:
    for variant, expected in (("correct", ORIGIN + "/t"), ("normalized", ORIGIN + "/t/"),
                              ("wrong", "https://wrong-issuer.invalid")):
        s, _ = site(issuerPath="/t", authorize=attrs.evolve(AuthorizationServer().authorize, iss=variant))
        assert authorize(s, register(s))["iss"] == expected
    s, _ = site(issuer="https://elsewhere.example")
    assert authorize(s, register(s))["iss"] == "https://elsewhere.example"  # iss is what the metadata claims


def test_the_token_table_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens_module, "MAX_ENTRIES", 3)
    s, _ = site()
    cid = register(s)
    issued = [str(redeem(s, cid, authorize(s, cid)["code"])[1]["access_token"]) for _ in range(5)]
    assert len(s.tokens.access) == 3 and len(s.tokens.codes) == 3 and len(s.tokens.refresh) == 3
    assert s.gate(b"/mcp", {b"authorization": f"Bearer {issued[0]}".encode()}, ORIGIN) is not None  # forgotten
    assert s.gate(b"/mcp", {b"authorization": f"Bearer {issued[-1]}".encode()}, ORIGIN) is None


@pytest.mark.parametrize("text", ["a=1&a=2", "a=%zz", "a=%C3", "=x", "&".join(f"k{i}=1" for i in range(65))])
def test_forms_are_parsed_strictly(text: str) -> None:
    with pytest.raises(OAuthError) as caught:
        parse_pairs(text, "form body")
    assert caught.value.error == "invalid_request"


def test_forms_omit_empty_values_and_decode_plus_and_escapes() -> None:
    assert parse_pairs("a=&b=x+y&c=%2F%C3%A9&&", "query") == {"b": "x y", "c": "/é"}
    with pytest.raises(OAuthError):
        parse_form(b"a=1", "application/json")
    with pytest.raises(OAuthError):
        parse_form("a=é".encode(), "application/x-www-form-urlencoded")


def test_the_challenge_quotes_its_values_and_omits_the_error_without_a_token() -> None:
    err = BearerError(401, None, "no token", resource_metadata='http://x/"m"', scope=["a", "b"])
    assert challenge(err) == 'Bearer resource_metadata="http://x/\\"m\\"", scope="a b"'
    answer = answer_for(BearerError(403, "insufficient_scope", "needs b", resource_metadata=None, scope=["b"]))
    assert dict(answer.headers)[b"www-authenticate"] == b'Bearer scope="b", error="insufficient_scope", error_description="needs b"'


def test_registration_application_type_policies() -> None:
    import json

    def reg(s: AuthSite, **extra: object) -> tuple[int, str]:
        body = json.dumps({"redirect_uris": ["myapp:/cb"], "token_endpoint_auth_method": "none", **extra}).encode()
        answer = s.answer(b"POST", b"/register", {b"content-type": b"application/json"}, body, ORIGIN)
        return answer.status, json.loads(answer.body).get("error", "")

    s, _ = site(registration=Registration(applicationType="require"))
    assert reg(s) == (400, "invalid_client_metadata")
    assert reg(s, application_type="native")[0] == 201
    assert reg(s, application_type="web") == (400, "invalid_redirect_uri")  # a custom scheme is native's
    s, _ = site(registration=Registration(applicationType="ignore"))
    assert reg(s, application_type="anything")[0] == 201
    s, _ = site(registration=Registration(dynamic=False))
    assert not s.owns(b"/register") and "registration_endpoint" not in s.server.metadata("oauth", ORIGIN)
