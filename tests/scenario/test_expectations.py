"""Unit tests of expectations (every form), their load-time checks, and near misses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.fakelink import FakeLink, close_links  # noqa: F401  (autouse: no link outlives its test)
from support.messages import call
from support.engines import engine_for

from mockmcp.scenario.expectations import ExpectationTracker, failure_message
from mockmcp.scenario.loader import load_text
from mockmcp.scenario.problems import LoadError
from mockmcp.scenario.model.options import Expectation


def verdicts(expectations: list[Expectation], *requests: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    tracker = ExpectationTracker(expectations)
    for i, (method, params) in enumerate(requests, 1):
        tracker.observe(i, method, params)
    return tracker.verdicts()


def echo(text: str = "hi") -> tuple[str, dict[str, Any]]:
    return ("tools/call", {"name": "echo", "arguments": {"text": text}})


LIST = ("tools/list", {})


def E(**kw: Any) -> Expectation:
    return Expectation(**{"method": "tools/call", **kw})


def test_default_is_at_least_once() -> None:
    assert verdicts([E(name="echo")])[0]["verdict"] == "failed"
    v = verdicts([E(name="echo")], echo())[0]
    assert v["verdict"] == "passed" and v["count"] == 1 and v["ids"] == [1] and v["wanted"] == "at least 1 time"


@pytest.mark.parametrize(
    ("kw", "calls", "ok"),
    [
        ({"atLeast": 2}, 1, False),
        ({"atLeast": 2}, 2, True),
        ({"atMost": 1}, 1, True),
        ({"atMost": 1}, 2, False),
        ({"atMost": 1}, 0, True),
        ({"exactly": 2}, 2, True),
        ({"exactly": 2}, 3, False),
        ({"exactly": 0}, 0, True),
        ({"never": True}, 0, True),
        ({"never": True}, 1, False),
        ({"atLeast": 1, "atMost": 2}, 3, False),
        ({"atLeast": 1, "atMost": 2}, 2, True),
    ],
)
def test_counts(kw: dict[str, Any], calls: int, ok: bool) -> None:
    v = verdicts([E(name="echo", **kw)], *[echo()] * calls, LIST)[0]
    assert v["count"] == calls
    assert v["verdict"] == ("passed" if ok else "failed")
    if not ok:
        assert f"seen {calls} time" in v["why"]


def test_argument_and_param_matchers() -> None:
    exp = [
        E(name="echo", arguments={"text": {"$regex": "^he"}}),
        E(name="echo", arguments={"text": "bye"}, never=True),
        E(params={"arguments": {"text": {"$type": "string"}}}, exactly=2),
        Expectation(method="resources/read", uri="file:///a", exactly=1),
    ]
    v = verdicts(exp, echo("hello"), echo("xyz"), ("resources/read", {"uri": "file:///a"}), ("resources/read", {"uri": "file:///b"}))
    assert [x["count"] for x in v] == [1, 0, 2, 1]
    assert all(x["verdict"] == "passed" for x in v)


def test_name_must_match() -> None:
    assert verdicts([E(name="add")], echo())[0]["count"] == 0


def test_retries_count_only_when_asked() -> None:
    retry = ("tools/call", {"name": "echo", "arguments": {}, "inputResponses": {"a": {}}, "requestState": "s"})
    assert verdicts([E(name="echo", exactly=1)], echo(), retry)[0]["verdict"] == "passed"
    assert verdicts([E(name="echo", exactly=2, retries=True)], echo(), retry)[0]["verdict"] == "passed"


RETRY = ("tools/call", {"name": "echo", "arguments": {"text": "hi"}, "inputResponses": {"a": {}}, "requestState": "s"})


def test_a_count_too_low_says_how_many_retries_were_left_out_and_how_to_count_them() -> None:
    v = verdicts([E(name="echo", exactly=2)], echo(), RETRY)[0]
    assert v["verdict"] == "failed" and v["count"] == 1 and v["retriesNotCounted"] == 1
    assert v["why"] == ("seen 1 time, expected exactly 2 (1 more matching request was an input_required retry,"
                        " not counted; add `retries: true` to count retries)")
    v = verdicts([E(name="echo", atLeast=3)], echo(), RETRY, RETRY, LIST)[0]
    assert v["why"] == ("seen 1 time, expected at least 3 (2 more matching requests were input_required retries,"
                        " not counted; add `retries: true` to count retries)")
    # a retry that would not match anyway (other arguments, another tool) is not mentioned
    other = ("tools/call", {**RETRY[1], "arguments": {"text": "bye"}})
    v = verdicts([E(name="echo", arguments={"text": "hi"}, exactly=2)], echo(), other)[0]
    assert "retries" not in v["why"] and "retriesNotCounted" not in v
    # too many is never explained by retries left out
    v = verdicts([E(name="echo", atMost=0)], echo(), RETRY)[0]
    assert v["why"] == "seen 1 time, expected at most 0"
    v = verdicts([E(name="echo", exactly=0)], echo(), RETRY)[0]
    assert v["why"] == "seen 1 time, expected exactly 0"


def test_retries_left_out_survive_export_and_restore() -> None:
    tracker = ExpectationTracker([E(name="echo", exactly=2)])
    tracker.observe(1, *echo())
    tracker.observe(2, *RETRY)
    again = ExpectationTracker([E(name="echo", exactly=2)])
    again.restore(json.loads(json.dumps(tracker.export())))
    assert again.verdicts() == tracker.verdicts()
    old = {k: v for k, v in tracker.export().items() if k != "retries"}  # saved before retries were kept apart
    again.restore(old)
    assert again.verdicts()[0]["why"] == "seen 1 time, expected exactly 2"


def test_order_before_and_after() -> None:
    exp = [Expectation(method="tools/list", id="list", before="call"), E(name="echo", id="call"), E(name="echo", id="late", after="list")]
    good = verdicts(exp, LIST, echo())
    assert [x["verdict"] for x in good] == ["passed", "passed", "passed"]
    bad = verdicts(exp, echo(), LIST)
    assert [x["verdict"] for x in bad] == ["failed", "passed", "failed"]
    assert "after call" in bad[0]["why"] and "#2" in bad[0]["why"]
    assert "before list" in bad[2]["why"]


def test_order_when_only_the_other_was_seen() -> None:
    exp = [Expectation(method="tools/list", id="list", atMost=5, before="call"), E(name="echo", id="call")]
    v = verdicts(exp, echo())
    assert v[0]["verdict"] == "failed" and "only that one was seen" in v[0]["why"]
    # neither seen: the order holds vacuously, counts decide
    v = verdicts(exp)
    assert v[0]["verdict"] == "passed" and v[1]["verdict"] == "failed"


def test_failure_message_is_readable() -> None:
    v = verdicts([E(name="echo", id="echo-once", exactly=1), E(name="add")], echo(), echo())
    text = failure_message(v)
    assert text.splitlines()[0] == "2 of 2 expectations failed:"
    assert "echo-once: tools/call echo exactly 1 time: seen 2 times, expected exactly 1" in text
    assert "expectations[1]: tools/call add at least 1 time: seen 0 times, expected at least 1" in text


SCENARIO = """\
mockmcp: 1
tools:
  - name: echo
    inputSchema: {type: object}
expectations:
"""


def test_loader_accepts_expectations() -> None:
    s, _ = load_text(SCENARIO + "  - {method: tools/call, name: echo, atLeast: 1, id: a}\n  - {method: tools/list, before: a}\n", "<t>")
    assert s.expectations[0] == Expectation(method="tools/call", name="echo", atLeast=1, id="a")
    assert s.expectations[1].before == "a"


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ("  - {method: tools/list, before: nope}\n", "before names unknown expectation id 'nope'"),
        ("  - {method: tools/list, exactly: 1, atLeast: 1}\n", "give either exactly or atLeast/atMost"),
        ("  - {method: tools/list, never: true, atMost: 1}\n", "never: true cannot be combined with a count"),
        ("  - {method: tools/list, atLeast: 3, atMost: 1}\n", "atLeast (3) is more than atMost (1)"),
        ("  - {method: tools/list, atLeast: -1}\n", "atLeast must be 0 or more"),
        ("  - {method: tools/list, name: echo}\n", "name applies only to tools/call and prompts/get"),
        ("  - {method: tools/list, id: a}\n  - {method: tools/call, id: a}\n", "duplicate expectation id 'a'"),
        ("  - {method: tools/list, tiems: 2}\n", "tiems"),
    ],
)
def test_loader_rejects_bad_expectations(entries: str, message: str) -> None:
    with pytest.raises(LoadError) as info:
        load_text(SCENARIO + entries, "<t>")
    assert message in str(info.value)
    assert "<t>:" in str(info.value)  # located by file and line


NEAR = """\
mockmcp: 1
tools:
  - name: weather
    inputSchema: {type: object}
    replies:
      - name: london-metric
        when: {arguments: {city: London, units: metric}}
        steps: [{text: "rain"}]
      - name: paris-metric
        when: {arguments: {city: Paris, units: metric}}
        steps: [{text: "20C"}]
"""


def test_near_miss_names_the_closest_rule_and_the_part_that_did_not_match() -> None:
    link = FakeLink(engine_for(NEAR))
    out = link.send(call(1, "weather", city="Paris", units="imperial"))
    err = out[0]["error"]
    assert err["data"]["nearMiss"]["rule"] == "paris-metric"  # one part off; the first rule is two parts off
    assert "argument 'units' is \"imperial\", rule wants \"metric\"" in err["data"]["nearMiss"]["reason"]
    assert link.engine.unmatched == [
        {"id": 1, "method": "tools/call", "what": "tool 'weather'", "nearMiss": err["data"]["nearMiss"]}
    ]


def test_yaml_examples_in_the_verification_docs_load() -> None:
    import re
    from pathlib import Path

    docs = Path(__file__).resolve().parents[2] / "docs"
    blocks = []
    for name in ("verification.md", "api.md"):
        blocks += re.findall(r"```yaml\n(.*?)```", (docs / name).read_text(), re.S)
    assert blocks
    for text in blocks:
        scenario, _ = load_text(text, "<docs>")
        assert scenario.expectations or scenario.tools
