"""A first look at the core over the fake link."""

from conftest import META, request
from fakelink import FakeLink, engine_for

from mockmcp.loader import load


def default_link() -> FakeLink:
    from mockmcp.run import new_engine

    scenario, _ = load("default", use_cache=False)
    return FakeLink(new_engine(scenario))


def test_echo_and_discover(schema):
    link = default_link()
    out = link.send(request(1, "server/discover"), request(2, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}))
    schema.check(out[0], "server/discover")
    schema.check(out[1], "tools/call")
    assert out[1]["result"]["content"] == [{"type": "text", "text": "hi"}]


def test_weather_is_delayed():
    link = default_link()
    link.send(request(1, "tools/call", {"name": "get_weather", "arguments": {"city": "Paris"}}))
    at, data = link.timeline[-1]
    assert at == 0.05 and b"Sunny" in data
