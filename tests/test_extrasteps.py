"""The model's second module, ``extrasteps``: defined only for scenarios that use its steps.

A warm spawn of a scenario without fault, HTTP, forward, request, ``setState`` or
``endSubscription`` steps must not import it (that is its whole point: twenty attrs
classes fewer to create), one that has such a step must, and in both the names read
as ``model.X`` and the type hints of ``model``'s classes are the same objects.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing

import attrs
from conftest import ROOT, line, request
from helpers import call

from mockmcp import extrasteps, model

FAULTY = """\
mockmcp: 1
tools:
  - name: stuck
    replies:
      - steps: [{hang: true}]
  - name: flip
    replies:
      - steps: [{setState: two}, {text: flipped}]
"""


def spawn(scenario: str, cache: str, *requests: dict[str, object]) -> tuple[list[dict[str, object]], set[str]]:
    """Run ``mockmcp run SCENARIO`` on these requests; its answers and the modules it imported."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mockmcp", "run", scenario],
        input=b"".join(line(r) for r in requests), capture_output=True, timeout=60, cwd=ROOT,
        env={**os.environ, "XDG_CACHE_HOME": cache},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    answers = [json.loads(x) for x in proc.stdout.splitlines()]
    return answers, {row.split("|")[-1].strip() for row in proc.stderr.decode().splitlines() if row.startswith("import time:")}


def test_a_warm_spawn_imports_extrasteps_only_for_a_scenario_that_uses_them(tmp_path):
    cache = str(tmp_path / "cache")
    asks = (request(1, "server/discover"), call(2, "echo", text="hi"))
    spawn("default", cache, *asks)  # cold: the loader imports every class, and fills the cache
    answers, modules = spawn("default", cache, *asks)
    assert "mockmcp.loader" not in modules  # a hit
    assert "mockmcp.extrasteps" not in modules
    assert "mockmcp.check" not in modules  # (the journal's rule labels once pulled it in, and it every class)
    assert [a["id"] for a in answers] == [1, 2] and answers[1]["result"]["content"][0]["text"] == "hi"  # type: ignore[index]

    faulty = tmp_path / "faulty.yaml"
    faulty.write_text(FAULTY)
    spawn(str(faulty), cache, request(1, "server/discover"))
    answers, modules = spawn(str(faulty), cache, call(1, "stuck"), call(2, "flip"))
    assert "mockmcp.loader" not in modules and "mockmcp.extrasteps" in modules  # the cache's pickle names them
    assert [a["id"] for a in answers] == [2]  # the hang never answers; setState ran, then the text
    assert answers[0]["result"]["content"][0]["text"] == "flipped"  # type: ignore[index]


def test_importing_model_alone_defines_none_of_them_until_one_is_named():
    code = (
        "import sys; from mockmcp import model\n"
        "assert 'mockmcp.extrasteps' not in sys.modules and 'HangStep' not in vars(model)\n"
        "model.HangStep\n"
        "assert 'mockmcp.extrasteps' in sys.modules and 'Step' in vars(model)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60)


def test_every_name_of_extrasteps_is_the_same_object_through_model():
    assert len(extrasteps.__all__) == 24
    for name in extrasteps.__all__:
        assert getattr(model, name) is getattr(extrasteps, name), name
    assert set(model.STEP_TYPES) == set(typing.get_args(model.Step))
    hint = typing.get_type_hints(model.Rule)["steps"]
    assert typing.get_args(typing.get_args(hint)[0])[0] is model.Step


def test_final_marks_the_terminal_steps_and_the_end_of_a_subscription():
    final = {t for t in model.STEP_TYPES if t.FINAL}
    assert final == {*model.TERMINAL_STEPS, model.EndSubscriptionStep}
    # and only step classes say so
    assert not [c for m in (model, extrasteps) for c in vars(m).values()
                if isinstance(c, type) and attrs.has(c) and c.FINAL and c not in model.STEP_TYPES]
