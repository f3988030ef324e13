"""A first look at the core and the shell over the fake link."""

import threading

import pytest
from support.fakelink import FakeLink, close_links  # noqa: F401  (autouse: no link outlives its test)
from support.engines import bundled
from support.messages import call, request


def default_link() -> FakeLink:
    return FakeLink(bundled("default"))


def test_echo_and_discover(schema):
    link = default_link()
    out = link.send(request(1, "server/discover"), call(2, "echo", text="hi"))
    schema.check(out[0], "server/discover")
    schema.check(out[1], "tools/call")
    assert out[1]["result"]["content"] == [{"type": "text", "text": "hi"}]


def test_weather_is_delayed():
    link = default_link()
    link.send(call(1, "get_weather", city="Paris"))
    at, data = link.timeline[-1]
    assert at == 0.05 and b"Sunny" in data


def test_a_bug_below_the_link_is_raised_by_send_not_hidden():
    """The link runs the real shell in a thread: an exception there (a bug: not a ClientError)
    must fail the test that caused it, and the thread must still end."""
    link = default_link()

    def broken(message):
        raise RuntimeError("bug in the core")

    link.engine.handle_request = broken  # (the connection's entry point for requests)
    with pytest.raises(RuntimeError, match="bug in the core"):
        link.send(request(1, "tools/list"))
    link.close()
    assert not [t for t in threading.enumerate() if t.name == "FakeLink"]
