"""docs/scenarios.md documents every key of the scenario model (so nothing is undocumented); the
keys of the `auth` section (the model part ``scenario/model/auth.py``) are documented, with their
defaults, on their own page, docs/authorization.md, which scenarios.md's `auth` section links to.

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

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _code(page: str) -> str:
    """A page's code: its fenced blocks and its inline code spans."""
    doc = (DOCS / page).read_text(encoding="utf-8")
    return "\n".join(re.findall(r"```.*?```", doc, re.S) + re.findall(r"`[^`\n]+`", re.sub(r"```.*?```", "", doc, flags=re.S)))


CODE = _code("scenarios.md")
AUTH_CODE = _code("authorization.md")
AUTH_PART = "mockmcp.scenario.model.auth"


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


def model_classes() -> set[type]:
    seen: set[type] = set()
    _classes(model.Scenario, seen)
    return seen


def model_keys() -> dict[str, set[str]]:
    keys: dict[str, set[str]] = {}
    for cls in model_classes():
        hints = typing.get_type_hints(cls, model_steps.NAMESPACE)
        for f in attrs.fields(cls):
            assert f.name in hints
            keys.setdefault(f.metadata.get("key", f.name), set()).add(cls.__name__)
    return keys


def _mentioned(key: str, code: str) -> bool:
    return re.search(rf"(?<![\w$]){re.escape(key)}(?!\w)", code) is not None


def test_the_walk_finds_the_model() -> None:
    keys = model_keys()
    assert {"tools", "replies", "when", "steps", "inputRequired", "expectations", "sleep"} <= set(keys)


def test_every_scenario_key_is_documented() -> None:
    auth = {cls.__name__ for cls in model_classes() if cls.__module__ == AUTH_PART}
    assert {"ProtectedResource", "AuthorizationServer", "Tokens"} <= auth  # the walk reaches the part
    missing = sorted(f"{key} (in {', '.join(sorted(owners))})" for key, owners in model_keys().items()
                     if not _mentioned(key, CODE) and not (owners <= auth and _mentioned(key, AUTH_CODE)))
    assert not missing, "docs/scenarios.md (docs/authorization.md for the auth section) does not mention: " + "; ".join(missing)


def test_the_auth_section_is_documented_on_its_own_page_and_linked() -> None:
    """Its keys are not left to scenarios.md's search: each is on docs/authorization.md."""
    auth = {cls for cls in model_classes() if cls.__module__ == AUTH_PART}
    keys = {f.metadata.get("key", f.name) for cls in auth for f in attrs.fields(cls)}
    assert not sorted(k for k in keys if not _mentioned(k, AUTH_CODE))
    assert "authorization.md" in (DOCS / "scenarios.md").read_text(encoding="utf-8")


def test_relative_links_in_the_docs_resolve() -> None:
    """README.md and docs/*.md link to each other; a renamed page must not leave a dead link."""
    root = Path(__file__).resolve().parents[2]
    dead = []
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:\s]+\.md)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if not (page.parent / target).is_file():
                dead.append(f"{page.relative_to(root)} -> {target}")
    assert not dead, dead
