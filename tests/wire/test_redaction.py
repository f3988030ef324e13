"""The one redaction vocabulary (``wire/redaction.py``): which names are secret, how a header's
value is kept, the fingerprint; and the recorder's ``Redactor`` answering by the same rules."""

from __future__ import annotations

import pytest

from mockmcp.record.redact import Redactor
from mockmcp.wire.redaction import PLACEHOLDER, fingerprint, redact_header, redact_headers, secret_name

NAMES = {"Authorization": True, "proxy-authorization": True, "Cookie": True, "X-Api-Key": True, "api_key": True,
         "client_secret": True, "refresh_token": True, "password": True, "progressToken": False, "maxTokens": False,
         "content-type": False, "mcp-session-id": False, "state": False}


@pytest.mark.parametrize("name", sorted(NAMES))
def test_secret_names_are_the_recorders(name: str) -> None:
    assert secret_name(name) is NAMES[name]
    assert Redactor().secret_key(name) is NAMES[name]


def test_a_header_keeps_its_scheme_not_its_credential() -> None:
    assert redact_header("Authorization", "Bearer abc.def") == f"Bearer {PLACEHOLDER}"
    assert redact_header("authorization", "basic  dXNlcjpwYXNz ") == f"basic {PLACEHOLDER}"
    assert redact_header("authorization", "abc") == PLACEHOLDER  # no scheme: all of it
    assert redact_header("authorization", "Bearer") == PLACEHOLDER
    assert redact_header("cookie", "Bearer x") == f"Bearer {PLACEHOLDER}"
    assert redact_header("accept", "application/json") == "application/json"
    plain = {"accept": "*/*", "host": "h"}
    assert redact_headers(plain) is plain  # nothing secret: not copied
    both = {"accept": "*/*", "authorization": "Bearer t"}
    assert redact_headers(both) == {"accept": "*/*", "authorization": f"Bearer {PLACEHOLDER}"}
    assert both["authorization"] == "Bearer t"  # the caller's mapping is left alone


def test_fingerprint_is_stable_short_and_not_the_secret() -> None:
    a = fingerprint("tok-1")
    assert a == fingerprint("tok-1") != fingerprint("tok-2")
    assert len(a) == 12 and int(a, 16) >= 0 and "tok" not in a


def test_the_recorder_learns_a_bearer_credential() -> None:
    """A ``Bearer`` value under a secret key: the bare credential is redacted wherever else it is."""
    redactor = Redactor()
    sent = {"_meta": {"authorization": "Bearer tok-abcdef"}, "text": "your token is tok-abcdef"}
    redactor.learn(sent)
    assert redactor.value(sent) == {"_meta": {"authorization": PLACEHOLDER}, "text": f"your token is {PLACEHOLDER}"}
    short = Redactor()  # a credential too short to search for is not learned (false hits)
    short.learn({"authorization": "Bearer abc"})
    assert short.value({"text": "abc"}) == {"text": "abc"}
