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


def _engine(**kw):
    import random

    from support.paths import SCENARIOS

    from mockmcp.core.engine import Engine
    from mockmcp.scenario.loader import load

    scenario, _ = load(str(SCENARIOS / "default.yaml"), use_cache=False)
    return Engine(scenario, state_key=b"k" * 32, rng=random.Random(1), **kw)


def test_what_shells_ask_of_the_engine_is_handed_to_its_constructor():
    """An id in flight reused (HTTP), unknown names noted (the verifier), the task archive's
    lookup (a session directory): each a constructor argument, passed on to its owner."""
    from support.engines import plan_for

    from mockmcp.core.actions import Plan

    def lookup(task_id: str) -> str | None:
        return None

    def archived() -> list[str]:
        return []

    shared = _engine(shared_ids=True, track_unknown=True, task_lookup=lookup, task_archived_ids=archived)
    assert shared.services.track_unknown and shared.tasks.lookup is lookup and shared.tasks.archived_ids is archived
    for _ in range(2):  # the weather is delayed: the first request is still in flight
        plan = plan_for(shared, call(1, "get_weather", city="Paris"))
        assert isinstance(plan, Plan) and plan.actions and "error" not in getattr(plan.actions[-1], "message", {})
    plan_for(shared, call(2, "echoo", text="hi"))
    assert shared.unmatched[-1]["undefined"] and "echo" in shared.unmatched[-1]["nearMiss"]["reason"]

    plain = _engine()
    assert not plain.services.track_unknown and plain.tasks.lookup is None and plain.tasks.archived_ids is None
    plan_for(plain, call(1, "get_weather", city="Paris"))
    refused = plan_for(plain, call(1, "get_weather", city="Paris"))
    assert isinstance(refused, Plan) and refused.actions[0].message["error"]["code"] == -32600
    plan_for(plain, call(2, "echoo", text="hi"))
    assert plain.unmatched == []
