"""Rule targeting: nth, every k-th, first n, after n and seeded probability, counted per process per rule.

Engine level over the fake link, and once through a real process to show the
count is per process (a new process starts over) and ``--seed`` is honoured there.
"""

from __future__ import annotations

import json
from typing import Any

from support.process import run_mock
from support.fakelink import FakeLink, close_links  # noqa: F401  (autouse: no link outlives its test)
from support.messages import call, line
from support.engines import engine_for


def scenario(when: str) -> str:
    return f"""
mockmcp: 1
tools:
  - name: t
    replies:
      - when: {when}
        steps: [{{error: {{code: -32603, message: targeted}}}}]
      - steps: [{{text: normal}}]
  - name: other
    replies: [{{steps: [{{text: other}}]}}]
"""


def pattern(when: str, n: int = 10, **kw: Any) -> str:
    """'E' for each call the targeted rule answered, '.' for the others."""
    link = FakeLink(engine_for(scenario(when), **kw))
    out = ""
    for i in range(1, n + 1):
        link.send(call(100 + i, "other"))  # calls to other tools never count
        (msg,) = link.send(call(i, "t"))
        out += "E" if "error" in msg else "."
    return out


def test_nth():
    assert pattern("{nth: 3}") == "..E......."


def test_every_kth():
    assert pattern("{every: 3}") == "..E..E..E."


def test_first_n():
    assert pattern("{first: 2}") == "EE........"


def test_after_n():
    assert pattern("{after: 7}") == ".......EEE"


def test_targeting_counts_only_requests_that_match_the_rest_of_when():
    when = "{arguments: {x: 1}, nth: 2}"
    link = FakeLink(engine_for(scenario(when)))
    got = []
    for i, x in enumerate([2, 1, 2, 1, 1]):
        (msg,) = link.send(call(i, "t", x=x))
        got.append("E" if "error" in msg else ".")
    assert "".join(got) == "...E."  # the 2nd call with x=1 is the 4th call overall


def test_probability_is_seeded_and_reproducible():
    a = pattern("{probability: 0.5}", 60, seed=1)
    assert a == pattern("{probability: 0.5}", 60, seed=1)
    assert a != pattern("{probability: 0.5}", 60, seed=2)
    assert 15 <= a.count("E") <= 45
    assert pattern("{probability: 0}", 20, seed=1) == "." * 20
    assert pattern("{probability: 1}", 20, seed=1) == "E" * 20


def test_combined_after_and_every():
    assert pattern("{after: 2, every: 2}") == "...E.E.E.E"


def test_counted_per_process_and_seeded_end_to_end(tmp_path, schema):
    path = tmp_path / "t.yaml"
    path.write_text(scenario("{probability: 0.5}").replace("probability: 0.5", "probability: 0.5, after: 1"))
    data = b"".join(line(call(i, "t")) for i in range(1, 31))

    def run(seed: str) -> str:
        proc = run_mock("run", str(path), "--seed", seed, input=data)
        assert proc.returncode == 0, proc.stderr
        msgs = [json.loads(x) for x in proc.stdout.splitlines()]
        for m in msgs:
            schema.check(m, "tools/call")
        return "".join("E" if "error" in m else "." for m in sorted(msgs, key=lambda m: m["id"]))

    a, b = run("5"), run("5")
    assert a == b  # a new process starts counting over, and the seed fixes the draws
    assert a[0] == "."  # after: 1
    assert "E" in a and "." in a[1:]
    assert run("6") != a
