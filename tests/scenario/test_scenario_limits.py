"""What ``mockmcp check`` accepts, ``mockmcp run`` can do.

Each scenario here passed ``check`` once and then crashed ``run`` (or ``check``
itself): now ``check`` names the problem at its place, and a scenario just
inside each bound loads and is served.
"""

from __future__ import annotations

import json
import os

import pytest
from support.messages import line, request
from support.process import run_mock

from mockmcp.scenario.check import MAX_HUGE_BYTES, MAX_REPLY_STEPS
from mockmcp.scenario.definitions import compile_uri_template
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
    assert compile_uri_template("x://{a}/{+rest}").match("x://1/b/c").groupdict() == {"a": "1", "rest": "b/c"}
    assert compile_uri_template("x://p{#frag}").match("x://p#f").groupdict() == {"frag": "f"}
    assert compile_uri_template("x://{a:3},{b*}").match("x://ab,c").groupdict() == {"a": "ab", "b": "c"}


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
    m = compile_uri_template(tpl).match(uri)
    assert (m and m.groupdict()) == groups


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
