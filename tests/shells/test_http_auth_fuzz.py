"""Never a crash at the authorization server: generated requests to its endpoints through the real
process (``mockmcp run auth --http 0``, one process for every example). Each gets an OAuth answer:
a JSON body whose ``error`` is one the RFCs name (or a success, or a redirect), never a 500, and the
server still serves the whole flow afterwards."""

from __future__ import annotations

import json
from typing import Any, Iterator
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from support.httpmock import HttpMock

ERRORS = {"invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type",
          "invalid_scope", "invalid_target", "invalid_redirect_uri", "invalid_client_metadata",
          "unsupported_response_type", "access_denied"}
PATHS = ["/authorize", "/token", "/register", "/.well-known/oauth-authorization-server",
         "/.well-known/openid-configuration", "/.well-known/oauth-protected-resource/mcp"]
NAMES = ["grant_type", "code", "code_verifier", "client_id", "client_secret", "redirect_uri", "resource", "scope",
         "refresh_token", "response_type", "code_challenge", "code_challenge_method", "state", "x"]
VALUES = st.one_of(
    st.sampled_from(["authorization_code", "refresh_token", "password", "code", "S256", "plain", "mockmcp-client",
                     "mcp:read", "mcp:read mcp:admin", "http://127.0.0.1:1/cb", "https://client.example/oauth/metadata.json",
                     "a" * 43, "", "%", "%zz", "%C3", "+", "&", "="]),
    st.text(max_size=20),
)
TYPES = st.sampled_from(["application/x-www-form-urlencoded", "application/json", "text/plain", None,
                         "application/x-www-form-urlencoded; charset=utf-8"])


@st.composite
def form(draw: st.DrawFn) -> bytes:
    pairs = draw(st.lists(st.tuples(st.sampled_from(NAMES), VALUES), max_size=8))
    raw = draw(st.booleans())  # raw: the value as drawn (malformed escapes and all), else encoded
    text = "&".join(f"{k}={v if raw else quote(v)}" for k, v in pairs)
    return text.encode("utf-8", "surrogatepass")


bodies = st.one_of(form(), st.builds(lambda v: json.dumps(v).encode(), st.dictionaries(st.sampled_from(
    ["redirect_uris", "token_endpoint_auth_method", "application_type", "grant_types", "response_types", "scope"]),
    st.one_of(VALUES, st.lists(VALUES, max_size=3)), max_size=5)), st.binary(max_size=80))


@pytest.fixture(scope="module")
def mock() -> Iterator[HttpMock]:
    with HttpMock("auth") as m:
        yield m
        assert "Traceback" not in m.stderr() or m.proc.poll() is None


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(method=st.sampled_from(["GET", "POST", "PUT"]), path=st.sampled_from(PATHS), query=form(), body=bodies,
       ctype=TYPES, basic=st.one_of(st.none(), st.sampled_from(["Basic bW9ja21jcC1jbGllbnQ6bW9ja21jcC1zZWNyZXQ=",
                                                                  "Basic !!!", "Bearer x", "Basic Og=="])))
def test_the_authorization_endpoints_answer_every_request(mock: HttpMock, method: str, path: str, query: bytes,
                                                          body: bytes, ctype: str | None, basic: str | None) -> None:
    text = query.decode("utf-8", "surrogatepass")  # (what a request line can carry: the rest %-escaped)
    target = path + ("?" + "".join(c if 0x20 < ord(c) < 0x7F else quote(c, errors="surrogatepass") for c in text)
                     if query else "")
    headers: dict[str, str | None] = {"Content-Type": ctype, "Accept": None, "Authorization": basic}
    r = mock.post(body, headers, method=method, path=target)
    assert r.status in (200, 201, 302, 400, 401, 405), r
    if r.status == 302:
        assert "location" in r.headers
    elif r.status >= 400:
        doc: Any = r.json()
        assert doc["error"] in ERRORS, r
        assert isinstance(doc["error_description"], str)
    else:
        assert isinstance(r.json(), dict)


def test_the_server_still_serves_after_the_fuzz(mock: HttpMock) -> None:
    r = mock.post(b"", {"Content-Type": None}, method="GET", path="/.well-known/oauth-authorization-server")
    assert r.status == 200 and r.json()["issuer"] == mock.url.removesuffix("/mcp")
    assert mock.stop() == 0
    assert "Traceback" not in mock.stderr()
