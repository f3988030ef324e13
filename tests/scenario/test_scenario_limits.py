"""What ``mockmcp check`` accepts, ``mockmcp run`` can do.

Each scenario here passed ``check`` once and then crashed ``run`` (or ``check``
itself): now ``check`` names the problem at its place, and a scenario just
inside each bound loads and is served.
"""

from __future__ import annotations

import json
import os
import re
import time

import pytest
from hypothesis import given, settings, strategies as st
from support.messages import call, discover, line, request
from support.process import run_mock

from mockmcp.scenario.check import MAX_HUGE_BYTES, MAX_REPLY_STEPS
from mockmcp.scenario.uritemplates import compile_uri_template
from mockmcp.scenario.loader import load, load_text
from mockmcp.scenario.problems import LoadError

TOOL = "mockmcp: 1\ntools:\n  - name: t\n    replies:\n      - steps:\n"


def problems(text: str) -> list[str]:
    with pytest.raises(LoadError) as info:
        load_text(text, "s.yaml")
    return [str(p) for p in info.value.problems]


def test_huge_is_bounded():
    assert problems(TOOL + "          - huge: {bytes: 1000000000000}\n") == [
        f"s.yaml:6:20: huge is at most {MAX_HUGE_BYTES} bytes (64 MiB), got 1000000000000 (at $.tools[0].replies[0].steps[0].huge.bytes)"
    ]
    load_text(TOOL + f"          - huge: {{bytes: {MAX_HUGE_BYTES}}}\n", "s.yaml")


def loops(outer: int, inner: int) -> str:
    return TOOL + (
        f"          - loop: {{times: {outer}, steps: [{{loop: {{times: {inner}, steps: [{{log: {{level: info, data: x}}}}]}}}}]}}\n"
        "          - text: done\n"
    )


def test_a_reply_whose_loops_unroll_past_the_bound_is_refused():
    assert problems(loops(100_000, 100_000)) == [
        f"s.yaml:5:9: this reply runs more than {MAX_REPLY_STEPS} steps with its loops unrolled (loop times multiply) (at $.tools[0].replies[0].steps)"
    ]
    # the bound counts every unrolled step: 1000 x 100 logs and the final text is one too many
    assert len(problems(loops(1000, 100))) == 1
    load_text(loops(1000, 99), "s.yaml")


def test_a_template_count_is_left_to_the_run_time_cap():
    load_text(TOOL + "          - loop: {times: '{{ arguments.n }}', steps: [{loop: {times: 99999, steps: [{sleep: 1ms}]}}]}\n          - text: x\n", "s.yaml")


def template(uri: str) -> str:
    return f"mockmcp: 1\nresourceTemplates:\n  - uriTemplate: {json.dumps(uri)}\n    name: r\n"


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("x://{a.b}", "URI template variable 'a.b' in '{a.b}' is not supported: use letters, digits and _, not starting with a digit"),
        ("x://{1}", "URI template variable '1' in '{1}' is not supported: use letters, digits and _, not starting with a digit"),
        ("x://{a}/{a}", "URI template variable 'a' appears twice; give each place its own name"),
        ("x://{a,}", "URI template variable '' in '{a,}' is not supported: use letters, digits and _, not starting with a digit"),
        ("x://{?q,q}", "URI template variable 'q' appears twice; give each place its own name"),
    ],
)
def test_uri_templates_that_cannot_compile_are_refused_where_they_are(uri, message):
    assert problems(template(uri)) == [f"s.yaml:3:5: {message} (at $.resourceTemplates[0].uriTemplate)"]


def test_supported_uri_templates_match():
    assert compile_uri_template("x://{a}/{+rest}").match("x://1/b/c") == {"a": "1", "rest": "b/c"}
    assert compile_uri_template("x://p{#frag}").match("x://p#f") == {"frag": "f"}
    assert compile_uri_template("x://{a:3},{b*}").match("x://ab,c") == {"a": "ab", "b": "c"}
    assert compile_uri_template("x://fixed").match("x://fixed") == {}  # no variable: a match all the same


@pytest.mark.parametrize(
    ("tpl", "uri", "groups"),
    [
        # level 3: several variables, the . / ; ? & operators
        ("map{?lat,lon}", "map?lat=1&lon=2", {"lat": "1", "lon": "2"}),
        ("map{?lat,lon}", "map?lon=2", {"lat": None, "lon": "2"}),  # named variables are optional
        ("map{?lat}{&lon}", "map?lat=1&lon=2", {"lat": "1", "lon": "2"}),
        ("a{/seg,id}", "a/x/9", {"seg": "x", "id": "9"}),
        ("h{.fmt}", "h.json", {"fmt": "json"}),
        ("p{;v,w}", "p;v=1", {"v": "1", "w": None}),
        # level 4: prefix and explode
        ("n{var:3}", "nabc", {"var": "abc"}),
        ("n{var:3}", "nabcd", None),
        ("a{/path*}", "a/x/y/z", {"path": "x/y/z"}),
        ("q{?q*}", "q?x=1&y=2", {"q": "x=1&y=2"}),
        ("file:///{+path}{?rev}", "file:///a/b.txt?rev=3", {"path": "a/b.txt", "rev": "3"}),
    ],
)
def test_rfc6570_levels_3_and_4_match(tpl, uri, groups):
    assert compile_uri_template(tpl).match(uri) == groups


# What templates matched before the matcher became linear: a regex for re, kept here as the
# reference the matcher must agree with.
EXPR = re.compile(r"\{([+#./;?&]?)([A-Za-z0-9_.,*:%]*)\}")
# a variable that can name a match group, with an optional prefix (``:3``) or explode (``*``) modifier
VARSPEC = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?::([1-9][0-9]{0,3})|(\*))?\Z")
# RFC 6570 section 3.2: per operator, the text before the first value, between values,
# whether values are named (name=value), and the characters one value may hold when matching
OPERATORS: dict[str, tuple[str, str, bool, str]] = {
    "": ("", ",", False, "[^/?#,]"),
    "+": ("", ",", False, "."),
    "#": ("#", ",", False, "."),
    ".": (".", ".", False, "[^/?#.]"),
    "/": ("/", "/", False, "[^/?#]"),
    ";": (";", ";", True, "[^;/?#]"),
    "?": ("?", "&", True, "[^&#]"),
    "&": ("&", "&", True, "[^&#]"),
}


def regex_of_template(template: str) -> re.Pattern[str]:
    out: list[str] = []
    seen: set[str] = set()
    pos = 0
    for m in EXPR.finditer(template):
        out.append(re.escape(template[pos : m.start()]))
        op, names = m.group(1), m.group(2).split(",")
        first, sep, named, char = OPERATORS[op]
        for i, spec in enumerate(names):
            var = VARSPEC.match(spec)
            if var is None:
                raise ValueError(f"URI template variable {spec!r} in {m.group(0)!r} is not supported: use letters, digits and _, not starting with a digit")
            name, prefix, explode = var.group(1), var.group(2), var.group(3)
            if name in seen:
                raise ValueError(f"URI template variable {name!r} appears twice; give each place its own name")
            seen.add(name)
            lead = re.escape(first if i == 0 else sep)
            if explode:
                value = f"(?P<{name}>{'[^#]' if named or op in ('+', '#') else '[^?#]'}*)"
            elif prefix:
                value = f"(?P<{name}>{char}{{1,{prefix}}})"
            else:
                # reserved expansion may hold anything: shortest first, so a following {?q} can match
                value = f"(?P<{name}>{char}{'*' if named or op == '/' else '+?' if op in ('+', '#') else '+'})"
            if op in ("?", "&"):
                # any of the query's names may come first: '?' or '&' before each
                out.append(f"(?:[?&]{value})?" if explode else f"(?:[?&]{re.escape(name)}={value})?")
            elif op == ";":
                out.append(f"(?:;{value})?" if explode else f"(?:;{re.escape(name)}(?:={value})?)?")
            else:
                out.append(lead + value)
        pos = m.end()
    out.append(re.escape(template[pos:]))
    return re.compile("".join(out) + r"\Z")


pieces = st.sampled_from(["x://", "/", ".", "a", "=", "?", "&", ";", ",", "#"])
expressions = st.builds(
    lambda op, specs: "{" + op + ",".join(specs) + "}",
    st.sampled_from(["", "+", "#", ".", "/", ";", "?", "&"]),
    st.lists(st.sampled_from(["v", "w", "p:2", "e*"]), min_size=1, max_size=2, unique_by=lambda s: s[0]),
)


@st.composite
def templates(draw):
    """Templates of a few literals and expressions, each variable named once."""
    out, count = [], 0
    for kind in draw(st.lists(st.booleans(), max_size=5)):
        if kind:
            out.append(draw(pieces))
        else:
            expr = draw(expressions)
            out.append(re.sub(r"[vwpe](?=[:*,}])", lambda m: f"{m.group(0)}{count}", expr))
            count += 1
    return "".join(out)


@settings(max_examples=400, deadline=None)
@given(tpl=templates(), uri=st.text(alphabet="x:/.a=?&;,#b\n", max_size=12))
def test_the_linear_matcher_agrees_with_the_regex_it_replaced(tpl, uri):
    m = regex_of_template(tpl).match(uri)
    assert compile_uri_template(tpl).match(uri) == (m.groupdict() if m else None), tpl


@pytest.mark.parametrize(
    ("tpl", "uri", "hit"),
    [
        ("t://{a}{b}{c}{d}x", "t://" + "a" * 3000, False),  # the regex backtracked for ever (n**4)
        ("file:///{name}.{ext}", "file:///" + "a." * 50_000 + "/", False),  # minutes (n**2)
        ("q{?a,b,c}", "q?a=" + "?b=?c=" * 20_000 + "#", False),
        ("x://{+path}{?rev}", "x://" + "?rev=" * 20_000 + "#", True),  # path is all of it
    ],
)
def test_a_hostile_uri_is_answered_at_once(tmp_path, tpl, uri, hit):
    """A resources/read of a long URI built to make the template's regex backtrack is
    answered, fast, by the real server (and the next request too)."""
    path = tmp_path / "s.yaml"
    path.write_text(template(tpl) + "    replies: [{steps: [{text: hit}]}]\n")
    started = time.monotonic()
    proc = run_mock("run", str(path), input=line(request(1, "resources/read", {"uri": uri})) + line(discover(2)))
    answers = [json.loads(x) for x in proc.stdout.splitlines()]
    assert time.monotonic() - started < 10
    assert [a["id"] for a in answers] == [1, 2]
    if hit:
        assert answers[0]["result"]["contents"][0]["text"] == "hit"
    else:
        assert answers[0]["error"]["message"].startswith("Resource not found")


def test_long_uris_still_match_as_before(tmp_path):
    tpl = compile_uri_template("file:///{name}.{ext}")
    assert tpl.match("file:///a.b.c") == {"name": "a.b", "ext": "c"}  # the longest name that leaves an ext
    long = "a." * 50_000 + "txt"
    assert tpl.match("file:///" + long) == {"name": long[:-4], "ext": "txt"}


@pytest.mark.parametrize("where", ["exit", "exitAfter"])
def test_exit_statuses_are_what_a_process_can_have(where):
    if where == "exit":
        text, at = TOOL + "          - exit: {status: 1099511627776}\n", "$.tools[0].replies[0].steps[0].exit.status"
    else:
        text, at = "mockmcp: 1\nprotocol: {exitAfter: {messages: 1, status: -1}}\n", "$.protocol.exitAfter.status"
    (msg,) = problems(text)
    assert "an exit status is 0 to 255, got" in msg and msg.endswith(f"(at {at})")


def test_a_file_reference_with_nul_is_a_located_error(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text('mockmcp: 1\nresources:\n  - uri: file:///x\n    name: x\n    file: "a\\0b"\n')
    proc = run_mock("check", str(path))
    assert proc.returncode == 1 and proc.stdout.decode() == f"{path}: 1 error\n"
    assert proc.stderr.decode() == f"{path}:5:5: a file reference cannot contain a NUL character (at $.resources[0].file)\n"


def test_a_fifo_is_not_read(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    path = tmp_path / "s.yaml"
    path.write_text("mockmcp: 1\nresources:\n  - uri: file:///x\n    name: x\n    file: pipe\n")
    with pytest.raises(LoadError) as info:
        load(str(path), use_cache=False)  # returns at once: opening the FIFO does not wait for a writer
    assert [str(p) for p in info.value.problems] == [f"{path}:5:5: 'pipe' is not a regular file (a FIFO) (at $.resources[0].file)"]


def test_check_survives_a_5000_digit_integer_and_run_serves_the_longest_allowed(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(TOOL + "          - result: {content: [], structuredContent: {n: " + "7" * 5000 + "}}\n")
    proc = run_mock("check", str(bad))
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr
    assert b"has more than 4300 digits (at $.tools[0].replies[0].steps[0].result.structuredContent.n)" in proc.stderr
    good = tmp_path / "good.yaml"
    good.write_text(TOOL + "          - result: {content: [], structuredContent: {n: " + "7" * 4300 + "}}\n")
    assert run_mock("check", str(good)).returncode == 0
    call = line(request(1, "tools/call", {"name": "t", "arguments": {}}))
    served = run_mock("run", str(good), input=call)
    assert served.returncode == 0, served.stderr
    assert json.loads(served.stdout)["result"]["structuredContent"]["n"] == int("7" * 4300)


def test_check_refuses_infinity_that_would_crash_run(tmp_path):
    path = tmp_path / "inf.yaml"
    path.write_text(TOOL + "          - result: {content: [], structuredContent: 1e999}\n")
    proc = run_mock("check", str(path))
    assert proc.returncode == 1
    assert proc.stderr.decode() == f"{path}:6:54: 1e999 is too large for a JSON number (it would be infinity) (at $.tools[0].replies[0].steps[0].result.structuredContent)\n"


VERBOSE = "(?x)(a+#)\n)+$"  # under x, '#)' is a comment: re compiles (a+)+$, exponential


@pytest.mark.parametrize(
    ("where", "at", "label"),
    [
        ("    replies:\n      - when: {arguments: {q: {$regex: %s}}}\n        steps: [{text: hit}]\n", "5:32", "$regex"),
        ("    inputSchema: {type: object, properties: {q: {type: string, pattern: %s}}}\n", "4:46", "pattern"),
    ],
)
def test_a_verbose_regex_is_refused_by_check_and_never_hangs_run(tmp_path, where, at, label):
    """The scanner that bounds a regex's cost reads the pattern as written; verbose mode's
    comments hid a ')' from it, so check passed a pattern that then blocked run for ever."""
    path = tmp_path / "s.yaml"
    path.write_text("mockmcp: 1\ntools:\n  - name: t\n" + where % json.dumps(VERBOSE))
    checked = run_mock("check", str(path))
    assert checked.returncode == 1
    assert checked.stderr.decode().startswith(f"{path}:{at}: {label} {json.dumps(VERBOSE)} sets verbose mode (the x flag")
    ran = run_mock("run", str(path), input=line(request(1, "tools/call", {"name": "t", "arguments": {"q": "a" * 40 + "b"}})), timeout=20)
    assert ran.returncode != 0 and b"sets verbose mode" in ran.stderr


@pytest.mark.parametrize("pattern", ["(?x:a+)", "(?ix)^a", "(?s-i:a)(?x:b)"])
def test_verbose_mode_is_refused_wherever_it_is_set(pattern):
    rule = "mockmcp: 1\ntools:\n  - name: t\n    replies:\n      - when: {arguments: {q: {$regex: %s}}}\n        steps: [{text: hit}]\n"
    (msg,) = problems(rule % json.dumps(pattern))
    assert "sets verbose mode" in msg
    load_text(rule % json.dumps("(?i:a)(?-x:b)"), "s.yaml")  # other flags, and x turned off, are fine


@pytest.mark.parametrize(
    "tool",
    [
        "    replies:\n      - when: {arguments: {tags: {$contains: {$regex: '.*.*=.*x'}}}}\n        steps: [{text: hit}]\n      - steps: [{text: miss}]\n",
        "    inputSchema: {type: object, properties: {tags: {type: array, items: {type: string, pattern: '.*.*=.*x'}}}}\n    replies: [{steps: [{text: hit}]}]\n",
    ],
)
def test_the_regex_work_of_one_request_is_bounded(tmp_path, tool):
    """Each search is bounded, but one request held 12,000 strings to search (tens of
    seconds); now the searches of a request share a budget, and past it the request is
    answered Invalid params at once. A request of a few such strings is served as before."""
    path = tmp_path / "s.yaml"
    path.write_text("mockmcp: 1\ntools:\n  - name: t\n" + tool)
    few = ["=" * 62 + "x"] * 9
    started = time.monotonic()
    proc = run_mock("run", str(path), input=line(call(1, "t", tags=["=" * 64] * 12_000)) + line(call(2, "t", tags=few)) + line(discover(3)))
    assert time.monotonic() - started < 10
    hostile, served, _ = (json.loads(x) for x in proc.stdout.splitlines())
    assert hostile["error"]["code"] == -32602 and "per-request budget" in hostile["error"]["message"]
    assert served["result"]["content"][0]["text"] == "hit"
