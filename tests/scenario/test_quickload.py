"""The fast load path against the plain one (PyYAML with marks, cattrs) over inputs of its own domain.

``quickload`` may only ever say "the same as the plain path" or "I decline": over
generated YAML (valid and invalid, block and flow, tricky scalars, mutated lines)
whatever it reads must equal what PyYAML reads with the core schema, type for
type; and over generated scenarios the loader's result (the model, or the exact
located problems) must equal the plain path's.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from support.paths import SCENARIOS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockmcp.scenario import loader
from mockmcp.scenario import plainload
from mockmcp.scenario import quickload
from mockmcp.scenario.problems import LoadError

TRICKY = " abcnulTrFe0123456789.:#-?,[]{}'\"!&*|>%@`~+_$/\\xu"
texts = st.text(alphabet=TRICKY, max_size=8)
# keys repeat often (duplicates) and include what resolves to another type or needs quotes
keys = st.one_of(st.sampled_from(["a", "b", "a b", "yes", "1", "~", "null", "a:b", "a #c", "-a", "a: b"]), texts)


def render_scalar(draw: Any, text: str) -> str:
    style = draw(st.sampled_from(["plain", "plain", "single", "double"]))
    if style == "single":
        return "'" + text.replace("'", "''") + "'"
    if style == "double":
        return '"' + text + '"'  # backslashes make escapes, valid or not
    return text


@st.composite
def flow(draw: Any, depth: int = 0) -> str:
    kind = draw(st.sampled_from(["scalar", "scalar", "list", "map"] if depth < 3 else ["scalar"]))
    if kind == "scalar":
        return render_scalar(draw, draw(st.one_of(keys, texts)))
    items = draw(st.lists(st.just(None), max_size=3))
    if kind == "list":
        return "[" + ", ".join(draw(flow(depth + 1)) for _ in items) + "]"
    return "{" + ", ".join(f"{render_scalar(draw, draw(keys))}: {draw(flow(depth + 1))}" for _ in items) + "}"


@st.composite
def block(draw: Any, indent: int = 0, depth: int = 0) -> list[str]:
    """Lines of a block node at ``indent``."""
    pad = " " * indent
    kind = draw(st.sampled_from(["map", "map", "seq", "flow"] if depth < 4 else ["flow"]))
    if kind == "flow":
        return [pad + draw(flow())]
    out: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        head = pad + (render_scalar(draw, draw(keys)) + ":" if kind == "map" else "-")
        if draw(st.booleans()):
            out.append(head + " " + draw(flow()) + draw(st.sampled_from(["", "", " # note", "#x"])))
        else:
            out.append(head + draw(st.sampled_from(["", "", " # note"])))
            step = draw(st.sampled_from([2, 2, 4, 1, 0]))
            out += draw(block(indent + step, depth + 1))
    return out


@st.composite
def yaml_texts(draw: Any) -> str:
    lines = draw(block())
    if draw(st.booleans()) and lines:  # a line repeated (the reader caches by line) and trailing spaces
        i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines)))
        lines.insert(j, lines[i])
        k = draw(st.integers(0, len(lines) - 1))
        lines[k] += draw(st.sampled_from([" ", "  ", " # x ", "#"]))
    if draw(st.booleans()) and lines:  # one mutated line: a shifted indent, a stray character, a comment
        i = draw(st.integers(0, len(lines) - 1))
        mutation = draw(st.sampled_from([" ", "\t", "#", "- ", "&a ", "*a", "|", "---"]))
        at = draw(st.integers(0, len(lines[i])))
        lines[i] = lines[i][:at] + mutation + lines[i][at:]
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n# end\n"]))


def typed(value: Any) -> Any:
    """Data with its types spelled out (``1 == 1.0 == True`` must not hide a difference)."""
    if isinstance(value, dict):
        return ("dict", [(k, typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    return (type(value).__name__, value)


def plain_parse(text: str) -> Any:
    try:
        return typed(plainload.parse_yaml(text, "f.yaml")[0])
    except LoadError as exc:
        return [str(p) for p in exc.problems]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(yaml_texts())
def test_what_the_subset_reads_pyyaml_reads_the_same(text):
    """150 random documents a run (not derandomized: each run tries new ones)."""
    fast = quickload.parse(text)
    if fast is not None:
        assert typed(fast) == plain_parse(text)


# ---------------------------------------------------------------- scalars

digits = st.text("0123456789", min_size=1, max_size=6)
signs = st.sampled_from(["", "", "-", "+"])


@st.composite
def core_scalars(draw: Any) -> str:
    """Plain scalars from the core schema's grammar and its near misses: every spelling of
    its booleans and nulls (and YAML 1.1's, which are strings here), decimal, octal and hex
    integers, floats with and without exponents, infinities and NaNs, integers at the
    digit limit and floats past a double, and what only looks like a number."""
    kind = draw(st.sampled_from(["word", "word", "int", "int", "radix", "float", "float", "special", "long", "odd"]))
    if kind == "word":
        word = draw(st.sampled_from(["true", "false", "null", "true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"]))
        case = draw(st.sampled_from(["lower", "title", "upper", "mixed"]))  # true, True, TRUE; tRUE is a string
        if case == "mixed":
            return "".join(c.upper() if draw(st.booleans()) else c for c in word)
        return str(getattr(word, case)())
    if kind == "int":
        return draw(signs) + draw(digits)
    if kind == "radix":  # 0o17 and 0x1F; 0O17, 0b1, -0x1, 0o8 and 0x1g are strings
        prefix, alphabet = draw(st.sampled_from([("0o", "01234567"), ("0x", "0123456789abcdefABCDEF")]))
        number = prefix + draw(st.text(alphabet, min_size=1, max_size=5))
        miss = draw(st.sampled_from(["", "", "", "upper", "0b", "-", "+", "digit", "empty"]))
        if miss == "upper":
            return number.upper()
        if miss in ("0b", "-", "+"):
            return miss + number[len(prefix) if miss == "0b" else 0 :]
        if miss == "digit":
            return number + ("8" if prefix == "0o" else "g")
        return prefix if miss == "empty" else number
    if kind == "float":
        mantissa = draw(st.sampled_from(["{d}.{d}", "{d}.", ".{d}", "{d}"])).format(d=draw(digits))
        exponent = draw(st.sampled_from(["", "", "e", "E"]))
        if exponent:
            exponent += draw(signs) + draw(digits)
        return draw(signs) + mantissa + exponent
    if kind == "special":
        return draw(signs) + "." + draw(st.sampled_from(["inf", "Inf", "INF", "iNf", "nan", "NaN", "NAN", "nAn"]))
    if kind == "long":  # around the digit limit, and floats too large for a double
        n = draw(st.sampled_from([4299, 4300, 4301]))
        return draw(st.sampled_from([draw(signs) + "9" * n, "1" + "0" * (n - 1), "0x" + "f" * (n * 5 // 6), "1e" + "9" * 3, "9" * 400 + ".5"]))
    return draw(st.sampled_from(["2026-07-28", "1_000", "12:30", "0777", "1.2.3", "1e", "e5", ".", "+", "-.", "0x_1", "1,5"]))


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(core_scalars(), st.sampled_from(["a: {}\n", "- {}\n", "a: [{}]\n", "a: {{b: {}}}\n", "a:\n  - {} # note\n"]))
def test_scalars_read_the_same_both_ways(value, form):
    """Each scalar in a block and in a flow collection: the same value type for type, or
    the same refusal. Where PyYAML reads a value the fast path must read it too (were it
    to decline, this comparison would compare nothing), except a ``:`` or ``,`` inside a
    flow collection, which the subset leaves to the plain path."""
    text = form.format(value)
    fast, plain = quickload.parse(text), plain_parse(text)
    if type(plain) is tuple:
        assert fast is not None or (form[3] in "[{" and (":" in value or "," in value)), text
        assert fast is None or typed(fast) == plain
    else:
        assert fast is None, text  # a refused scalar (infinity, NaN, too many digits): the plain path says why


def test_the_plain_path_imports_nothing_from_the_fast_path():
    """The reference must not depend on what it checks: a process that loads a file on the
    plain path alone never imports ``quickload`` (the scalar rules come from ``scalars``)."""
    code = (
        "import sys\nfrom mockmcp.scenario import plainload\n"
        "data, _ = plainload.parse_yaml(open(sys.argv[1]).read(), sys.argv[1])\n"
        "plainload.structure(data, _, sys.argv[1])\n"
        "print(sorted(m for m in sys.modules if m in ('mockmcp.scenario.quickload', 'mockmcp.scenario.scalars')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(SCENARIOS / "default.yaml")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['mockmcp.scenario.scalars']"


# ---------------------------------------------------------------- whole scenarios

steps = st.sampled_from([
    "[{text: 'hi {{ arguments.n }}'}]",
    "[{text: hi}, {text: again}]",
    "[{sleep: 10ms}, {result: {content: [{type: text, text: x}]}}]",
    "[{sleep: 10}, {text: x}]",
    "[{error: {code: -32602, message: nope}}]",
    "[{progress: {progress: 1, total: 2}}, {progress: {progress: 1}}, {text: done}]",
    "[{loop: {times: 3, steps: [{log: {level: info, data: x}}]}}, {text: y}]",
    "[{hang: true}]",
    "[{texts: x}]",
    "[{result: {content: 5}}]",
    "[{stopReading: forever}, {text: x}]",
    "[{sleep: {min: 1ms, max: 2ms}}, {text: x}]",
    "[{text: 5}]", "[{text: hi, sleep: 1ms}]", "[{exit: {status: 3}}]", "[{exit: {}}]",
])
whens = st.sampled_from(["", "{arguments: {n: 1}}", "{arguments: {n: {$regex: '^a'}}}", "{nth: 0}", "{nth: 2}",
                         "{probability: 1.5}", "{state: [a, b]}", "{arguments: {n: {$regexx: a}}}", "{round: x}",
                         # equal, equal in another order, and equal only as Python compares (1 == 1.0 == True)
                         "{arguments: {n: 1.0}}", "{arguments: {n: true}}", "{nth: 2, every: 3}", "{every: 3, nth: 2}"])
tool_extra = st.sampled_from(["", "    inputSchema: {type: object}\n", "    inputSchema: {type: string}\n",
                              "    annotations: {readOnlyHint: true}\n", "    title: 3\n", "    colour: red\n"])


@st.composite
def scenarios(draw: Any) -> str:
    out = [draw(st.sampled_from(["mockmcp: 1", "mockmcp: 2", "mockmcp: '1'", "description: no version"]))]
    out.append("tools:")
    for i in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from([f"t{i}", "t0", "'yes'", "yes", "1"]))
        out.append(f"  - name: {name}")
        extra = draw(tool_extra)
        if extra:
            out.append(extra.rstrip("\n"))
        out.append("    replies:")
        for _ in range(draw(st.integers(1, 3))):
            when = draw(whens)
            out.append(f"      - when: {when}" if when else "      -")
            out.append(f"        steps: {draw(steps)}")
    text = "\n".join(out) + "\n"
    return text.replace("      -\n        steps:", "      - steps:")


def outcome(fn: Any, text: str) -> Any:
    try:
        scenario, warnings = fn(text, "s.yaml", base_dir=None, allow_absolute=False)
    except LoadError as exc:
        return ("error", [str(p) for p in exc.problems])
    return ("ok", repr(scenario), [str(w) for w in warnings], sharing(scenario))  # repr: 1 and 1.0 differ


def sharing(scenario: Any) -> list[int]:
    """Which rules share one ``when`` object: each rule's index of the first rule holding it."""
    whens = [rule.when for tool in scenario.tools for rule in tool.replies]
    return [next(j for j, other in enumerate(whens) if other is w) for w in whens]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_the_loader_gives_what_the_plain_path_gives(text):
    assert outcome(loader._load_text, text) == outcome(loader._plain_load_text, text)


def test_equal_when_blocks_are_shared_as_the_plain_path_shares_them():
    """One Match per block equal type for type, whatever its key order (1, 1.0 and true differ)."""
    blocks = ["{nth: 2, every: 3}", "{every: 3, nth: 2}", "{arguments: {n: 1}}", "{arguments: {n: 1.0}}",
              "{arguments: {n: true}}", "{arguments: {n: 1}}", "{nth: 2, every: 3}"]
    rules = "".join(f"      - when: {w}\n        steps: [{{text: x}}]\n" for w in blocks)
    text = f"mockmcp: 1\ntools:\n  - name: t\n    replies:\n{rules}"
    fast = outcome(loader._load_text, text)
    assert fast[0] == "ok" and fast[3] == [0, 0, 2, 3, 4, 2, 0]
    assert fast == outcome(loader._plain_load_text, text)


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_bundled_scenarios_structure_the_same_both_ways(path):
    data, positions = plainload.parse_yaml(path.read_text(), str(path))
    assert repr(quickload.structure(data)) == repr(plainload.structure(data, positions, str(path)))


def test_repeated_flow_lines_give_separate_data():
    """Flow lines are converted once per text; each copy must still be data of its own."""
    data = quickload.parse("a: {b: [1]}\nc: {b: [1]}\n")
    assert data == {"a": {"b": [1]}, "c": {"b": [1]}}
    assert data["a"] is not data["c"] and data["a"]["b"] is not data["c"]["b"]


def test_the_fast_path_serves_the_default_scenario():
    """A guard that the fast path is not silently dead (a cold spawn then imports yaml again)."""
    data = quickload.parse((SCENARIOS / "default.yaml").read_text())
    assert data is not None and quickload.structure(data) is not None


@pytest.mark.parametrize(
    "text",
    ["a: &x 1\nb: *x\n", "a: |\n  text\n", "a: !tag x\n", "a: b\n  c\n", "a: 1\na: 2\n", "1: x\n", "a: 'x\n  y'\n",
     "a: {b: 1, b: 2}\n", "a: [b, ]\n", "a: \"\\q\"\n", "? a\n: b\n", "---\na: 1\n", "a:\tb\n", "a: b: c\n"],
)
def test_what_the_subset_declines(text):
    assert quickload.parse(text) is None


def test_the_refused_characters_are_exactly_those_outside_yaml_printable_text():
    """``_OUTSIDE`` lists what it refuses; over every code point it must be the complement
    of what the subset accepts: newline, printable ASCII, and the printable BMP and
    astral ranges (no C0/C1 controls, DEL, surrogates, BOM or noncharacters FFFE/FFFF)."""
    accepted = [(0x0A, 0x0A), (0x20, 0x7E), (0xA0, 0xD7FF), (0xE000, 0xFEFE), (0xFF00, 0xFFFD), (0x10000, 0x10FFFF)]
    refused = [c for c in range(0x110000) if not any(lo <= c <= hi for lo, hi in accepted)]
    every = "".join(map(chr, range(0x110000)))
    assert [ord(c) for c in quickload._OUTSIDE.findall(every)] == refused
