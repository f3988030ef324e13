"""mockmcp.scenario.jsonschema (the JSON Schema validator) against the reference implementation (the `jsonschema` package).

The validator has two paths: compiled checks that decide a valid instance, and
the evaluator that explains a failure (and decides alone when a schema uses
unevaluated*). Generated schemas and instances go through both and through
jsonschema's Draft202012Validator: all three must agree on validity (the
official JSON-Schema-Test-Suite goes through both paths in
test_json_schema_suite.py). Then the bounds: a $ref cycle, an exponential
schema, remote references refused; and the compile-once cache (one validator per
distinct schema value, answering like a fresh one).
"""

from __future__ import annotations

import copy
import subprocess
import sys

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mockmcp.scenario.jsonschema import validator as v

PATTERNS = ["^a", "b$", "^[0-9]+$", "x|y"]
KEYS = ["a", "b", "c", "ab", "1"]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from([0.0, 1.0, 1.5, -2.5, 1e300]),
    st.sampled_from(["", "a", "ab", "ba", "b", "12", "xyz", "é"]),
)
instances = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)),
    max_leaves=12,
)

TYPES = ["string", "number", "integer", "boolean", "object", "array", "null"]


def _leaf() -> st.SearchStrategy[object]:
    n = st.integers(-3, 3)
    return st.one_of(
        st.booleans(),
        st.builds(lambda t: {"type": t}, st.sampled_from(TYPES)),
        st.builds(lambda ts: {"type": ts}, st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True)),
        st.builds(lambda x: {"const": x}, scalars),
        st.builds(lambda xs: {"enum": xs}, st.lists(scalars, min_size=1, max_size=3)),
        st.builds(lambda k, x: {k: x}, st.sampled_from(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]), n),
        st.builds(lambda x: {"multipleOf": x}, st.sampled_from([1, 2, 0.5, 1.5])),
        st.builds(lambda k, x: {k: x}, st.sampled_from(["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"]), st.integers(0, 3)),
        st.builds(lambda x: {"pattern": x}, st.sampled_from(PATTERNS)),
        st.builds(lambda ks: {"required": ks}, st.lists(st.sampled_from(KEYS), max_size=2, unique=True)),
        st.builds(lambda k, ks: {"dependentRequired": {k: ks}}, st.sampled_from(KEYS), st.lists(st.sampled_from(KEYS), max_size=2, unique=True)),
        st.just({"uniqueItems": True}),
        st.just({"$ref": "#/$defs/d"}),
    )


def _compound(inner: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    lists = st.lists(inner, min_size=1, max_size=3)
    return st.one_of(
        st.builds(lambda k, xs: {k: xs}, st.sampled_from(["allOf", "anyOf", "oneOf"]), lists),
        st.builds(lambda x: {"not": x}, inner),
        st.builds(lambda a, b, c: {"if": a, "then": b, "else": c}, inner, inner, inner),
        st.builds(lambda a, b: {"if": a, "then": b}, inner, inner),
        st.builds(lambda ps: {"properties": ps}, st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)),
        st.builds(lambda p, x: {"patternProperties": {p: x}}, st.sampled_from(PATTERNS), inner),
        st.builds(lambda x, ps: {"additionalProperties": x, "properties": ps}, inner, st.dictionaries(st.sampled_from(KEYS), inner, max_size=2)),
        st.builds(lambda x: {"propertyNames": x}, inner),
        st.builds(lambda k, x: {"dependentSchemas": {k: x}}, st.sampled_from(KEYS), inner),
        st.builds(lambda xs: {"prefixItems": xs}, lists),
        st.builds(lambda xs, x: {"prefixItems": xs, "items": x}, lists, inner),
        st.builds(lambda x: {"items": x}, inner),
        st.builds(lambda x, lo: {"contains": x, "minContains": lo}, inner, st.integers(0, 2)),
        st.builds(lambda x, hi: {"contains": x, "maxContains": hi}, inner, st.integers(0, 2)),
        st.builds(lambda x, y: {"allOf": [x], "unevaluatedProperties": y}, inner, inner),
        st.builds(lambda x, y: {"anyOf": [x, {"properties": {"a": True}}], "unevaluatedProperties": y}, inner, inner),
        st.builds(lambda x, y: {"prefixItems": [x], "unevaluatedItems": y}, inner, inner),
        st.builds(lambda x, y: {"allOf": [x], "unevaluatedItems": y}, inner, inner),
        st.builds(lambda a, b: {**a, **b} if isinstance(a, dict) and isinstance(b, dict) else a, inner, inner),
    )


schemas = st.recursive(_leaf(), _compound, max_leaves=8)
DEF = st.one_of(st.booleans(), st.builds(lambda t: {"type": t}, st.sampled_from(TYPES)))


def _root(schema: object, d: object) -> dict[str, object]:
    body = schema if isinstance(schema, dict) else {"allOf": [schema]}
    return {**body, "$defs": {"d": d}}


def _float_division_decides(root: object, value: object) -> bool:
    """jsonschema decides ``multipleOf`` by float division, which cannot tell whether 1e300
    is a multiple of 1.5 (ours divides the decimals as written): there the reference is moot."""
    def floats(x: object) -> list[float]:
        if isinstance(x, dict):
            return [f for y in x.values() for f in floats(y)]
        if isinstance(x, list):
            return [f for y in x for f in floats(y)]
        return [x] if isinstance(x, float) else []
    return "'multipleOf': 1.5" in repr(root) and any(abs(f) > 2**53 for f in floats(value))


@settings(max_examples=250, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(schemas, DEF, st.lists(instances, min_size=1, max_size=4))
def test_agrees_with_jsonschema(schema: object, d: object, values: list[object]) -> None:
    root = _root(schema, d)
    reference = jsonschema.Draft202012Validator(root)
    ours = v.Validator(root)
    slow = v.Validator(root, compile_checks=False)  # the evaluator alone
    for value in values:
        assert (ours.errors(value) == []) == (slow.errors(value) == []), (root, value)
        if _float_division_decides(root, value):
            continue
        want = reference.is_valid(value)
        assert (ours.errors(value) == []) == want, (root, value)
        assert (slow.errors(value) == []) == want, (root, value)
        if not want:
            assert ours.errors(value) and all(e.startswith("$") for e in ours.errors(value))


def test_messages_name_the_place() -> None:
    schema = {
        "type": "object",
        "properties": {"item": {"type": "array", "prefixItems": [{"$ref": "#/$defs/sku"}], "items": False}},
        "$defs": {"sku": {"type": "string", "pattern": "^[A-Z]{2}$"}},
        "required": ["item", "channel"],
        "additionalProperties": False,
    }
    errs = v.Validator(schema).errors({"item": ["abc", 2], "extra": 1})
    assert "$.item[0]: 'abc' does not match pattern '^[A-Z]{2}$'" in errs
    assert "$.item[1]: is not allowed (no items past the prefix)" in errs
    assert "$: required property 'channel' is missing" in errs
    assert "$.extra: is not allowed (additionalProperties)" in errs


def test_integers_json_equality_and_draft07() -> None:
    assert v.Validator({"type": "integer"}).errors(2.0) == []
    assert v.Validator({"enum": [1]}).errors(True) != []
    assert v.Validator({"const": {"a": [1]}}).errors({"a": [1.0]}) == []
    d7 = {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}], "additionalItems": False,
          "dependencies": {"a": ["b"]}}
    assert v.Validator(d7).errors(["x"]) == []
    assert v.Validator(d7).errors(["x", 1]) != []
    assert v.Validator(d7).errors({"a": 1}) == ["$: property 'b' is required when 'a' is present"]


@pytest.mark.parametrize(
    "schema, words",
    [
        ({"$ref": "https://schemas.example.com/city.json"}, "never fetches"),
        ({"$ref": "#/$defs/missing"}, "no such place"),
        ({"$ref": "#nowhere"}, "no $anchor"),
        ({"$schema": "http://json-schema.org/draft-04/schema#"}, "not a supported dialect"),
        ({"type": "strings"}, "type must be one of"),
        ({"pattern": "(a+)+$"}, "pattern"),
        ({"minLength": -1}, "non-negative"),
        ({"items": [{"type": "string"}]}, "prefixItems"),
    ],
)
def test_unusable_schemas_are_refused(schema: dict[str, object], words: str) -> None:
    with pytest.raises(v.SchemaError, match=None) as info:
        v.Validator(schema)
    assert words in str(info.value)


def test_refs_by_anchor_and_id() -> None:
    schema = {
        "$id": "https://example.com/root.json",
        "properties": {"a": {"$ref": "#num"}, "b": {"$ref": "https://example.com/root.json#/$defs/s"}, "c": {"$ref": "other.json"}},
        "$defs": {"n": {"$anchor": "num", "type": "number"}, "s": {"type": "string"}, "o": {"$id": "other.json", "const": 1}},
    }
    # "other.json" is an $id of the document (relative, as written): resolved without fetching
    val = v.Validator(schema)
    assert val.errors({"a": 1, "b": "x", "c": 1}) == []
    assert len(val.errors({"a": "x", "b": 1, "c": 2})) == 3


def test_bounds_end_a_validation_with_a_reason() -> None:
    cycle = v.Validator({"$ref": "#"})
    assert "nests deeper" in cycle.errors(1)[0]
    # each level tries both branches: 2**depth evaluations without the step budget
    blowup = {"$defs": {"x": {"anyOf": [{"$ref": "#/$defs/x"}, {"$ref": "#/$defs/x"}]}}, "$ref": "#/$defs/x"}
    assert "validation" in v.Validator(blowup).errors(1)[0]


def test_base_uris_anchors_and_the_dynamic_scope() -> None:
    """A fragment is read in the resource it is written in (an embedded $id starts one),
    anchors belong to their resource, and a bookended $dynamicRef takes the outermost
    $dynamicAnchor of the dynamic scope: on both paths."""
    schema = {
        "$id": "https://example.com/root.json",
        "properties": {"a": {"$ref": "inner.json#/$defs/x"}, "b": {"$ref": "inner.json#n"}},
        "$defs": {"inner": {"$id": "inner.json", "$defs": {"x": {"$ref": "#/$defs/y"}, "y": {"type": "integer"},
                                                           "z": {"$anchor": "n", "type": "string"}}},
                  "z": {"$anchor": "n", "type": "integer"}},
    }
    lists = {
        "$id": "https://example.com/strings", "$dynamicAnchor": "item", "type": "string",
        "$defs": {"generic": {"$id": "list", "type": "array", "items": {"$dynamicRef": "#item"},
                              "$defs": {"any": {"$dynamicAnchor": "item"}}}},
    }
    typed = {"$id": "https://example.com/typed", "$ref": "list", "$defs": {
        "list": {"$id": "list", "type": "array", "items": {"$dynamicRef": "#item"}, "$defs": {"any": {"$dynamicAnchor": "item"}}},
        "item": {"$dynamicAnchor": "item", "type": "string"}}}
    for compiled in (True, False):
        val = v.Validator(schema, compile_checks=compiled)
        assert val.errors({"a": 1, "b": "s"}) == []
        assert len(val.errors({"a": "s", "b": 1})) == 2
        assert v.Validator(lists, compile_checks=compiled).errors("x") == []
        dyn = v.Validator(typed, compile_checks=compiled)
        assert not dyn.has_compiled_checks  # the dynamic scope is the evaluator's
        assert dyn.errors(["a", "b"]) == []
        assert dyn.errors(["a", 1]) != []


def test_unicode_property_escapes_in_patterns() -> None:
    val = v.Validator({"type": "string", "pattern": "^\\p{Letter}+$"})
    assert val.errors("Ἀθῆναι") == [] and val.errors("abc1") != []
    assert v.Validator({"pattern": "^[\\p{Lu}0-9]+$"}).errors("AB9") == []
    assert v.Validator({"pattern": "^\\P{Nd}$"}).errors("5") != []
    with pytest.raises(v.SchemaError, match="not supported"):
        v.Validator({"pattern": "\\p{Script=Greek}"})


# ---------------------------------------------------------------- one validator per distinct schema


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(schemas, DEF, st.lists(instances, min_size=1, max_size=4))
def test_the_shared_validator_answers_like_a_fresh_one(schema: object, d: object, values: list[object]) -> None:
    """validator_for shares one validator among equal schemas (built from whichever came
    first): it must answer, messages included, what a validator of its own would."""
    root = _root(schema, d)
    try:
        shared = v.validator_for(copy.deepcopy(root))
    except v.SchemaError as exc:
        with pytest.raises(v.SchemaError) as fresh_exc:
            v.Validator(root)
        assert str(fresh_exc.value) == str(exc)
        return
    assert v.validator_for(copy.deepcopy(root)) is shared
    fresh = v.Validator(root)
    for value in values:
        assert shared.errors(value) == fresh.errors(value), (root, value)


def test_the_cache_key_tells_apart_what_compiles_differently() -> None:
    pairs = [
        ({"const": True}, {"const": 1}),  # JSON's true is not 1
        ({"enum": [1]}, {"enum": [1.0]}),  # equal in JSON, but the messages quote them
        ({"properties": {"a": False}, "dependentRequired": {"a": ["b"], "b": ["c"]}},
         {"dependentRequired": {"b": ["c"], "a": ["b"]}, "properties": {"a": False}}),  # key order orders the report
    ]
    for a, b in pairs:
        assert v.validator_for(a) is not v.validator_for(b)
    assert v.validator_for({"const": True}).errors(1) != [] and v.validator_for({"const": 1}).errors(1) == []
    v.validator_for({"properties": {"1": {"type": "string"}}})
    with pytest.raises(v.SchemaError, match="keys are strings"):
        v.validator_for({"properties": {1: {"type": "string"}}})  # (YAML reads `1:` as a number)
    items = {"items": [{"type": "string"}]}
    with pytest.raises(v.SchemaError, match="prefixItems"):
        v.validator_for(items)  # a list is prefixItems in 2020-12, the default
    assert v.validator_for(items, v.DIALECT_07).errors([1]) != []  # the default dialect is part of the key
    before = v.validators_built()
    for _ in range(3):
        with pytest.raises(v.SchemaError):
            v.validator_for({"type": "strings"})
    assert v.validators_built() - before == 1  # a refusal is remembered too


TOOL = """  - name: tool{i}
    inputSchema: {{type: object, properties: {{city: {{type: string, pattern: "^[A-Za-z ]+$"}}, days: {{type: integer, minimum: 1}}}}, required: [city], additionalProperties: false}}
    replies: [{{steps: [{{text: ok}}]}}]
"""

COUNT = """
import sys
from mockmcp.cli import main as cli
from mockmcp.scenario.jsonschema import validator
status = cli.main(["check", sys.argv[1]])
print(status, validator.validators_built())  # (after check's verdict line)
"""


def test_ten_thousand_tools_with_one_schema_build_one_validator(tmp_path) -> None:
    """``mockmcp check`` (a cold load: no load cache) of 10,000 tools that share one
    inputSchema, in a process of its own, compiles that schema once."""
    path = tmp_path / "tools.yaml"
    path.write_text("mockmcp: 1\nserver: {name: many, version: 1.0.0}\ntools:\n" + "".join(TOOL.format(i=i) for i in range(10_000)))
    proc = subprocess.run([sys.executable, "-c", COUNT, str(path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == [f"{path}: ok", "0 1"], proc.stdout + proc.stderr[-2000:]
