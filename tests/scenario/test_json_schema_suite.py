"""mockmcp.scenario.jsonschema (the JSON Schema validator) against the official JSON-Schema-Test-Suite (json-schema-org).

The suite's required tests of ``tests/draft2020-12`` and ``tests/draft7`` are read
from ``../shared/json-schema-test-suite/`` (found like the MCP schema: conftest's
``support.paths.find_shared``, or ``$MOCKMCP_SHARED``). draft-07 is in scope because the validator
supports it when ``$schema`` names it; the suite's draft-07 schemas carry no
``$schema`` (the folder is their dialect), so they are compiled with draft-07 as the
default dialect. The ``optional/`` folders (formats, ECMA regex corner cases, bignums)
are not part of the required tests and are not run.

Left out, because they need a document that is not in the schema: mockmcp never
fetches a schema (a tool's ``inputSchema`` must be self-contained, and a mock must
not reach the network), so the validator refuses every reference outside the
document with a ``SchemaError``. That is ``refRemote.json`` as a whole, and each case
listed in ``NEEDS_REMOTE``: references to the dialects' metaschemas, to the suite's
``remotes/`` documents (``localhost:1234``), and custom metaschemas that define
vocabularies. ``test_remote_documents_are_refused`` checks that the validator does
refuse each of them rather than silently pass it.

Each case must agree with the suite on every test, twice: through ``validator_for``
(the shared validator a tool gets, compiled checks deciding valid instances where
the schema allows) and through the evaluator alone (``compile_checks=False``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from support.paths import find_shared
from mockmcp.scenario.jsonschema import validator as v

SUITE = find_shared() / "json-schema-test-suite" / "tests"
DIALECTS = {"draft2020-12": v.DIALECT_2020, "draft7": v.DIALECT_07}

NEEDS_REMOTE = {
    ("draft2020-12", "defs.json", "validate definition against metaschema"),
    ("draft2020-12", "ref.json", "remote ref, containing refs itself"),
    ("draft2020-12", "dynamicRef.json", "strict-tree schema, guards against misspelled properties"),
    ("draft2020-12", "dynamicRef.json", "tests for implementation dynamic anchor and reference link"),
    ("draft2020-12", "dynamicRef.json", "$ref and $dynamicAnchor are independent of order - $defs first"),
    ("draft2020-12", "dynamicRef.json", "$ref and $dynamicAnchor are independent of order - $ref first"),
    ("draft2020-12", "dynamicRef.json", "$ref to $dynamicRef finds detached $dynamicAnchor"),
    ("draft2020-12", "vocabulary.json", "schema that uses custom metaschema with with no validation vocabulary"),
    ("draft2020-12", "vocabulary.json", "ignore unrecognized optional vocabulary"),
    ("draft7", "definitions.json", "validate definition against metaschema"),
    ("draft7", "ref.json", "remote ref, containing refs itself"),
}


def _load() -> tuple[list[Any], list[Any]]:
    """Every case of the two folders, read once for the module: (run, refused as remote)."""
    run: list[Any] = []
    remote: list[Any] = []
    for folder in DIALECTS:
        files = sorted((SUITE / folder).glob("*.json"))
        assert files, f"no JSON-Schema-Test-Suite files in {SUITE / folder}"
        for path in files:
            for case in json.loads(path.read_text(encoding="utf-8")):
                where = (folder, path.name, case["description"])
                param = pytest.param(folder, case, id="/".join(where))
                (remote if path.name == "refRemote.json" or where in NEEDS_REMOTE else run).append(param)
    return run, remote


CASES, REMOTE = _load()


def _disagreements(validator: v.Validator, case: dict[str, Any]) -> list[str]:
    out = []
    for test in case["tests"]:
        verdict = validator.errors(test["data"]) == []
        if verdict != test["valid"]:
            out.append(f"{test['description']!r}: suite says valid={test['valid']}, validator says {verdict}")
    return out


@pytest.mark.parametrize("folder, case", CASES)
def test_suite_case(folder: str, case: dict[str, Any]) -> None:
    dialect = DIALECTS[folder]
    shared = v.validator_for(case["schema"], dialect)
    evaluator = v.Validator(case["schema"], dialect, compile_checks=False)
    assert not evaluator.has_compiled_checks
    wrong = [f"shared validator: {d}" for d in _disagreements(shared, case)]
    wrong += [f"evaluator alone: {d}" for d in _disagreements(evaluator, case)]
    assert not wrong, "\n".join(wrong)


def test_the_suite_is_there_and_mostly_compiled() -> None:
    """The differential above means something only if the compiled checks decide most
    cases: those that use unevaluated*, a dynamic $dynamicRef or draft-07 go to the
    evaluator alone."""
    assert len(CASES) > 550, len(CASES)
    compiled = sum(1 for p in CASES if p.values[0] == "draft2020-12" and v.validator_for(p.values[1]["schema"]).has_compiled_checks)
    assert compiled > 250, compiled


@pytest.mark.parametrize("folder, case", REMOTE)
def test_remote_documents_are_refused(folder: str, case: dict[str, Any]) -> None:
    with pytest.raises(v.SchemaError, match="never fetches|not a supported dialect"):
        v.Validator(case["schema"], DIALECTS[folder])
