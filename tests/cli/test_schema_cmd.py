"""The editor schema (``mockmcp schema``) agrees with the loader.

Every bundled scenario validates; every file in tests/data/schema_broken/ is
rejected by both the schema and the loader (so the schema is neither looser nor
stricter than mockmcp on those mistakes); the command prints the same schema the
module builds; and the generator follows the model, not a list of known classes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any, Literal, Union

import attrs
import jsonschema
import pytest

from mockmcp.scenario import loader
from mockmcp.scenario.model import base as model
from mockmcp.scenario.model import catalog as model_steps
from mockmcp.scenario import plainload
from mockmcp.scenario.model.catalog import STEP_TYPES
from mockmcp.scenario.problems import LoadError
from mockmcp.cli.schema import DURATION_PATTERN, _Generator, scenario_schema
from support.process import mockmcp_prefix

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = sorted((ROOT / "scenarios").glob("*.yaml"))
BROKEN = sorted((ROOT / "tests" / "data" / "schema_broken").glob("*.yaml"))


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = scenario_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _errors(validator: jsonschema.Draft202012Validator, path: Path) -> list[str]:
    data, _ = plainload.parse_yaml(path.read_text(encoding="utf-8"), str(path))
    return [f"{e.json_path}: {e.message[:300]}" for e in validator.iter_errors(data)]


def test_there_are_bundled_and_broken_files() -> None:
    assert len(BUNDLED) >= 5
    assert len(BROKEN) >= 5


@pytest.mark.parametrize("path", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_bundled_scenario_validates(validator: jsonschema.Draft202012Validator, path: Path) -> None:
    assert _errors(validator, path) == []


@pytest.mark.parametrize("path", BROKEN, ids=[p.stem for p in BROKEN])
def test_broken_file_rejected_by_schema_and_loader(validator: jsonschema.Draft202012Validator, path: Path) -> None:
    assert _errors(validator, path), f"{path.name} validates against the schema but should not"
    with pytest.raises(LoadError):
        loader.load_text(path.read_text(encoding="utf-8"), str(path))


def test_schema_command_prints_the_schema() -> None:
    proc = subprocess.run(
        [*mockmcp_prefix(), "schema"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    printed = json.loads(proc.stdout)
    jsonschema.Draft202012Validator.check_schema(printed)
    assert printed == scenario_schema()
    assert printed["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_every_model_class_and_field_is_described() -> None:
    """Walk the model independently: every attrs class reachable from Scenario has a
    definition whose properties are exactly its YAML keys."""
    defs = scenario_schema()["$defs"]
    seen: set[type] = set()
    todo: list[Any] = [model.Scenario]
    while todo:
        tp = todo.pop()
        if attrs.has(tp) and tp not in seen:
            seen.add(tp)
            if tp is model.Duration:
                continue
            hints = typing.get_type_hints(tp, model_steps.NAMESPACE)  # (every name of the model and its parts)
            fields = attrs.fields(tp)
            assert set(defs[tp.__name__]["properties"]) == {f.metadata.get("key", f.name) for f in fields}
            assert defs[tp.__name__]["additionalProperties"] is False
            todo.extend(hints.values())
        else:
            todo.extend(getattr(tp, "__args__", ()))
    assert set(STEP_TYPES) <= seen
    step_refs = {one["$ref"].rsplit("/", 1)[1] for one in defs["Step"]["oneOf"]}
    assert step_refs == {t.__name__ for t in STEP_TYPES}


def test_meta_key_and_duration_and_required() -> None:
    defs = scenario_schema()["$defs"]
    assert "_meta" in defs["Tool"]["properties"] and "meta" not in defs["Tool"]["properties"]
    assert defs["Tool"]["required"] == ["name"]
    assert defs["Duration"]["pattern"] == DURATION_PATTERN
    assert defs["Scenario"]["properties"]["mockmcp"] == {"enum": [1]}
    assert defs["LogSpec"]["properties"]["level"]["enum"][0] == "debug"


# A class that is not in model.py: the generator handles whatever it is given.
@attrs.frozen
class _NewSpec:
    """A step someone adds later."""

    level: Literal["a", "b"]
    every: model.Duration | None = None
    meta: dict[str, Any] | None = attrs.field(default=None, metadata={"key": "_meta", "doc": "extra"})


@attrs.frozen
class _NewStep:
    brandNew: _NewSpec


def test_generator_is_generic() -> None:
    gen = _Generator()
    out = gen.type(list[Union[_NewStep, model.SleepStep]])
    assert out["type"] == "array" and len(out["items"]["oneOf"]) == 2
    new = gen.defs["_NewSpec"]
    assert new["required"] == ["level"]
    assert new["properties"]["_meta"]["description"] == "extra"
    assert new["properties"]["every"]["anyOf"][0] == {"$ref": "#/$defs/Duration"}
    assert gen.defs["_NewStep"]["required"] == ["brandNew"]
    v = jsonschema.Draft202012Validator({**out, "$defs": gen.defs})
    assert v.is_valid([{"brandNew": {"level": "a", "every": "2s"}}, {"sleep": "10ms"}])
    assert not v.is_valid([{"brandNew": {"level": "c"}}])
    assert not v.is_valid([{"brandNew": {"level": "a"}, "sleep": "10ms"}])


def test_schema_is_not_on_the_run_path() -> None:
    code = "import sys, mockmcp.launch.run, mockmcp.cli.main; print('mockmcp.cli.schema' in sys.modules, 'jsonschema' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False"]
