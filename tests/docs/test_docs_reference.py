"""docs/scenarios.md documents every key of the scenario model (so nothing is undocumented).

The model classes are walked from ``Scenario`` down (the same walk the editor
schema uses); every field's YAML key must appear in the reference's code (an
inline code span or a YAML example), so a key added to the model without a word
in the reference fails here. ``Duration`` is written as a string (``250ms``), so
its field is not a key.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path

import attrs

from mockmcp.scenario.model import base as model
from mockmcp.scenario.model import catalog as model_steps

DOC = (Path(__file__).resolve().parents[2] / "docs" / "scenarios.md").read_text(encoding="utf-8")
CODE = "\n".join(re.findall(r"```.*?```", DOC, re.S) + re.findall(r"`[^`\n]+`", re.sub(r"```.*?```", "", DOC, flags=re.S)))


def _classes(tp: object, seen: set[type]) -> None:
    if isinstance(tp, type) and attrs.has(tp):
        if tp in seen or tp is model.Duration:
            return
        seen.add(tp)
        for f in attrs.fields(tp):
            _classes(f.type if not isinstance(f.type, str) else typing.get_type_hints(tp, model_steps.NAMESPACE)[f.name], seen)
        return
    for arg in typing.get_args(tp):
        _classes(arg, seen)


def model_keys() -> dict[str, set[str]]:
    seen: set[type] = set()
    _classes(model.Scenario, seen)
    keys: dict[str, set[str]] = {}
    for cls in seen:
        hints = typing.get_type_hints(cls, model_steps.NAMESPACE)
        for f in attrs.fields(cls):
            assert f.name in hints
            keys.setdefault(f.metadata.get("key", f.name), set()).add(cls.__name__)
    return keys


def test_the_walk_finds_the_model() -> None:
    keys = model_keys()
    assert {"tools", "replies", "when", "steps", "inputRequired", "expectations", "sleep"} <= set(keys)


def test_every_scenario_key_is_documented() -> None:
    missing = sorted(f"{key} (in {', '.join(sorted(owners))})" for key, owners in model_keys().items() if not re.search(rf"(?<![\w$]){re.escape(key)}(?!\w)", CODE))
    assert not missing, "docs/scenarios.md does not mention: " + "; ".join(missing)


def test_relative_links_in_the_docs_resolve() -> None:
    """README.md and docs/*.md link to each other; a renamed page must not leave a dead link."""
    root = Path(__file__).resolve().parents[2]
    dead = []
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:\s]+\.md)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if not (page.parent / target).is_file():
                dead.append(f"{page.relative_to(root)} -> {target}")
    assert not dead, dead
