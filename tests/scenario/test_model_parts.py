"""The model's parts (``scenario/model/*.py``): plain modules, each imported only where its classes are used.

A warm spawn of a scenario whose classes are all in ``model`` itself (``default``) must
import no part (that is their point: creating attrs classes is a real share of a warm
spawn, see docs/performance.md); one that uses a class of a part must import that part
(the cached pickle names each class's own module) and no other; ``model`` imports no
part, and no part writes into another module: the resolved type hints of ``model``'s
classes are the parts' own classes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing

import attrs
from support.paths import ROOT
from support.messages import line, request
from support.messages import call

from mockmcp.scenario.model import base as model
from mockmcp.scenario.model import faults as model_faults
from mockmcp.scenario.model import notify as model_notify
from mockmcp.scenario.model import catalog as model_steps
from mockmcp.scenario.model.faults import EndSubscriptionStep
from mockmcp.scenario.model.catalog import STEP_KEYS, STEP_TYPES, TERMINAL_STEPS, Step

PART_MODULES = {m.__name__ for m in model_steps.PARTS if m is not model} | {"mockmcp.scenario.model.catalog"}

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

PROGRESSING = """\
mockmcp: 1
tools:
  - name: count
    replies:
      - steps: [{loop: {times: 2, steps: [{progress: {progress: "{{ index }}", total: 2}}]}}, {text: counted}]
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


def warm(path: str, cache: str, *requests: dict[str, object]) -> tuple[list[dict[str, object]], set[str]]:
    spawn(path, cache, request(1, "server/discover"))  # cold: the loader imports every part, and fills the cache
    answers, modules = spawn(path, cache, *requests)
    assert "mockmcp.scenario.loader" not in modules  # a hit
    return answers, modules


def test_a_warm_spawn_of_default_imports_no_part_of_the_model(tmp_path):
    answers, modules = warm("default", str(tmp_path), request(1, "server/discover"), call(2, "echo", text="hi"))
    assert modules & PART_MODULES == set()
    assert "mockmcp.scenario.check" not in modules  # (the journal's rule labels once pulled it in, and it every class)
    assert [a["id"] for a in answers] == [1, 2] and answers[1]["result"]["content"][0]["text"] == "hi"  # type: ignore[index]


def test_a_warm_spawn_imports_the_parts_its_scenario_uses(tmp_path):
    faulty = tmp_path / "faulty.yaml"
    faulty.write_text(FAULTY)
    answers, modules = warm(str(faulty), str(tmp_path / "cache"), call(1, "stuck"), call(2, "flip"))
    assert "mockmcp.scenario.model.faults" in modules  # the cache's pickle names its classes
    assert "mockmcp.scenario.model.catalog" not in modules and "mockmcp.scenario.model.tasks" not in modules
    assert [a["id"] for a in answers] == [2]  # the hang never answers; setState ran, then the text
    assert answers[0]["result"]["content"][0]["text"] == "flipped"  # type: ignore[index]

    progressing = tmp_path / "progressing.yaml"
    progressing.write_text(PROGRESSING)
    meta = {"progressToken": "t"}
    answers, modules = warm(str(progressing), str(tmp_path / "cache"), call(1, "count", meta=meta))
    assert modules & PART_MODULES == {"mockmcp.scenario.model.notify"}
    assert [a.get("params", {}).get("progress") for a in answers[:2]] == [1, 2]  # type: ignore[attr-defined]
    assert answers[2]["result"]["content"][0]["text"] == "counted"  # type: ignore[index]


def test_importing_model_alone_imports_no_part_and_a_part_only_itself():
    code = (
        "import sys; from mockmcp.scenario.model import base as model\n"
        "parts = lambda: {m for m in sys.modules if m.startswith('mockmcp.scenario.model.') and m != 'mockmcp.scenario.model.base'}\n"
        "assert parts() == set() and not hasattr(model, 'TaskStep'), parts()\n"
        "from mockmcp.scenario.model.tasks import TaskStep\n"
        "assert parts() == {'mockmcp.scenario.model.tasks'} and not hasattr(model, 'TaskSpec'), parts()\n"
        "from mockmcp.scenario.model.catalog import Step\n"
        f"assert parts() == set({sorted(PART_MODULES)!r}) and not hasattr(model, 'Step'), parts()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60)


def test_every_class_is_named_by_its_own_module_and_the_hints_are_resolved_to_them():
    for part in model_steps.PARTS:
        classes = [v for v in vars(part).values() if isinstance(v, type) and attrs.has(v) and v.__module__ == part.__name__]
        assert classes, part  # (the pickle finds a class by its __module__ and __qualname__)
        for cls in classes:
            assert getattr(part, cls.__qualname__) is cls
            assert cls in model_steps.CLASSES
    assert not hasattr(model, "HangStep") and not hasattr(model, "Step") and not hasattr(model, "__getattr__")
    assert set(STEP_TYPES) == set(typing.get_args(Step))
    hint = attrs.fields(model.Rule).steps.type  # resolved by model_steps, against its NAMESPACE
    assert typing.get_args(typing.get_args(hint)[0])[0] is Step
    assert attrs.fields(model_notify.LoopSpec).steps.type == list[Step]
    assert attrs.fields(model.SleepStep).sleep.type == model.Duration | model_notify.RandomDelay
    assert typing.get_type_hints(model_faults.HangStep, model_steps.NAMESPACE)


def test_key_and_final_say_what_the_step_classes_are():
    for key, cls in STEP_KEYS.items():
        assert cls.KEY == key == attrs.fields(cls)[0].name
    assert {t for t in STEP_TYPES if t.FINAL} == {*TERMINAL_STEPS, EndSubscriptionStep}
    # and only step classes say either
    others = [c for c in model_steps.CLASSES if c not in STEP_TYPES]
    assert others and not [c for c in others if c.KEY or c.FINAL]
