"""The command line, as real subprocesses: run, python -m, check, list, demo, signals, EOF.

Every stdout line of ``mockmcp run`` is validated against the official schema.
Time bounds are generous (the machine is shared); they only guard against hangs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support.paths import SCENARIOS
from support.messages import line, request
from support.process import mockmcp_cmd, run_mock

from mockmcp.cli.main import describe

BROKEN = Path(__file__).parents[1] / "data" / "broken"


def validate_stdout(schema: Any, stdout: bytes, sent: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every stdout line is one protocol message, valid for the method of the request it answers."""
    methods = {m["id"]: m["method"] for m in sent if "id" in m}
    out = []
    for raw in stdout.splitlines(keepends=True):
        msg = schema.check_line(raw)
        if "id" in msg:
            schema.check(msg, methods.get(msg["id"]))
        out.append(msg)
    return out


ALL_DEFAULT = [
    request(1, "server/discover"),
    request(2, "tools/list"),
    request(3, "tools/call", {"name": "echo", "arguments": {"text": "hello"}}),
    request(4, "tools/call", {"name": "add", "arguments": {"a": 40, "b": 2}}),
    request(5, "tools/call", {"name": "get_weather", "arguments": {"city": "Lima"}}),
    request(6, "prompts/list"),
    request(7, "prompts/get", {"name": "code_review", "arguments": {"code": "pass"}}),
    request(8, "resources/list"),
    request(9, "resources/read", {"uri": "file:///project/README.md"}),
    request(10, "resources/read", {"uri": "file:///project/logo.png"}),
    request(11, "resources/templates/list"),
    request(12, "resources/read", {"uri": "weather://forecast/Lima"}),
    request(13, "completion/complete", {"ref": {"type": "ref/prompt", "name": "code_review"}, "argument": {"name": "language", "value": "r"}}),
]


def by_id(messages: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    return {m["id"]: m for m in messages if "id" in m}


def check_default_answers(answers: dict[Any, dict[str, Any]]) -> None:
    assert set(answers) == set(range(1, 14))
    assert all("result" in a for a in answers.values()), answers
    assert answers[3]["result"]["content"][0]["text"] == "hello"
    assert answers[4]["result"]["structuredContent"] == {"sum": 42}
    assert "Lima" in answers[5]["result"]["content"][0]["text"]
    assert answers[12]["result"]["contents"][0]["uri"] == "weather://forecast/Lima"
    assert answers[13]["result"]["completion"]["values"] == ["rust"]


def test_run_default_end_to_end(schema):
    proc = run_mock("run", "default", input=b"".join(line(m) for m in ALL_DEFAULT))
    assert proc.returncode == 0, proc.stderr
    check_default_answers(by_id(validate_stdout(schema, proc.stdout, ALL_DEFAULT)))
    assert b"Traceback" not in proc.stderr


def test_console_script(schema):
    script = Path(sys.executable).parent / "mockmcp"
    assert script.exists(), "the mockmcp console script is installed"
    proc = subprocess.run([str(script), "run", "default"], input=line(ALL_DEFAULT[0]), capture_output=True, timeout=30)
    assert proc.returncode == 0
    (msg,) = validate_stdout(schema, proc.stdout, ALL_DEFAULT[:1])
    assert msg["result"]["supportedVersions"] == ["2026-07-28"]


def test_python_dash_m(schema):
    proc = subprocess.run([sys.executable, "-m", "mockmcp", "run", "default"], input=line(ALL_DEFAULT[0]), capture_output=True, timeout=30)
    assert proc.returncode == 0
    assert validate_stdout(schema, proc.stdout, ALL_DEFAULT[:1])[0]["id"] == 1
    helped = subprocess.run([sys.executable, "-m", "mockmcp", "--help"], capture_output=True, text=True, timeout=30)
    assert helped.returncode == 0 and "run" in helped.stdout and "check" in helped.stdout


def test_run_a_scenario_by_path(schema, tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("mockmcp: 1\ntools: [{name: hi, replies: [{steps: [{text: 'hi {{ arguments.who }}'}]}]}]\n")
    sent = [request(1, "tools/call", {"name": "hi", "arguments": {"who": "there"}})]
    proc = run_mock("run", str(path), input=line(sent[0]))
    assert proc.returncode == 0
    assert validate_stdout(schema, proc.stdout, sent)[0]["result"]["content"][0]["text"] == "hi there"


def test_stdout_has_only_protocol_lines_even_for_garbage(schema):
    sent = [request(1, "tools/call", {"name": "echo", "arguments": {"text": "a"}})]
    data = b"garbage\n\n[1,2]\r\n" + line(sent[0]) + b'{"jsonrpc":"2.0","method":"notifications/whatever"}\n' + b"{"
    proc = run_mock("run", "default", "--log-level", "debug", input=data)
    assert proc.returncode == 0
    out = validate_stdout(schema, proc.stdout, sent)
    assert [m.get("error", {}).get("code") for m in out] == [-32700, -32600, None, -32700]
    assert proc.stderr  # the logs went to stderr


# ---------------------------------------------------------------- check and list


def test_check_valid_scenarios_exit_0():
    paths = [str(p) for p in sorted(SCENARIOS.glob("*.yaml"))]
    proc = run_mock("check", "--strict", *paths)  # --strict: no bundled scenario has a warning either
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr == b""
    assert proc.stdout.decode().splitlines() == [f"{p}: ok" for p in paths]  # the verdicts, on stdout


def test_check_invalid_exit_1_with_exact_lines():
    broken = BROKEN / "duplicate-key.yaml"
    proc = run_mock("check", str(SCENARIOS / "default.yaml"), str(broken))
    assert proc.returncode == 1
    assert proc.stderr.decode().splitlines() == [  # errors on stderr
        f"{broken}:7:3: duplicate key 'name' (first defined at line 5) (at $.server.name)"
    ]
    assert proc.stdout.decode().splitlines() == [f"{SCENARIOS / 'default.yaml'}: ok", f"{broken}: 1 error"]


def test_list_shows_every_bundled_scenario_with_a_description():
    proc = run_mock("list")
    assert proc.returncode == 0
    rows = proc.stdout.decode().splitlines()
    names = sorted(p.stem for p in SCENARIOS.glob("*.yaml"))
    assert [r.split()[0] for r in rows] == names
    for row, name in zip(rows, names):
        text = row[len(name) :].strip()
        assert text and text == describe(SCENARIOS / f"{name}.yaml")
    assert any(r.startswith("default ") for r in rows)


# ---------------------------------------------------------------- invalid scenario: exit 2 before reading stdin


def test_invalid_scenario_exits_2_before_reading_stdin():
    broken = BROKEN / "multiple.yaml"
    check = run_mock("check", str(broken))
    proc = subprocess.Popen(mockmcp_cmd("run", str(broken)), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # stdin stays open and empty: only a process that never reads it can exit here
        status = proc.wait(timeout=30)
        stdout, stderr = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    finally:
        proc.kill()
        proc.stdin.close()  # type: ignore[union-attr]
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    assert status == 2
    assert stdout == b""
    assert stderr.decode().splitlines() == check.stderr.decode().splitlines()  # the errors, as check says them
    assert len(stderr.decode().splitlines()) == 3


def test_unknown_scenario_name_exits_2():
    proc = run_mock("run", "no-such-scenario")
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"no such file or bundled scenario" in proc.stderr


# ---------------------------------------------------------------- EOF and signals


# Starts the rest of its command line with SIGINT's disposition set to argv[1] ("SIG_DFL" or
# "SIG_IGN"): what the mock inherits is then the test's choice, not whatever launched the suite (a
# shell without job control starts a background job with SIGINT ignored, and exec keeps that).
_WITH_SIGINT = "import os, signal, sys; signal.signal(signal.SIGINT, getattr(signal, sys.argv[1])); os.execv(sys.argv[2], sys.argv[2:])"


def spawn(*args: str, sigint: str = "SIG_DFL") -> subprocess.Popen[bytes]:
    """``mockmcp run ARGS`` started with SIGINT's disposition ``sigint``."""
    return subprocess.Popen([sys.executable, "-c", _WITH_SIGINT, sigint, *mockmcp_cmd("run", *args)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.fixture
def reaped() -> Any:
    """Processes a test hands in here are killed and waited for when it ends, passed or failed."""
    procs: list[subprocess.Popen[bytes]] = []
    yield procs.append
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def read_line(proc: subprocess.Popen[bytes], timeout: float = 30) -> bytes:
    fd = proc.stdout.fileno()  # type: ignore[union-attr]
    data = b""
    deadline = time.monotonic() + timeout
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        assert left > 0 and select.select([fd], [], [], left)[0], "no line from the mock"
        chunk = os.read(fd, 1)
        assert chunk, "the mock closed stdout"
        data += chunk
    return data


def test_eof_exits_0_promptly(schema):
    proc = spawn("default")
    proc.stdin.write(line(ALL_DEFAULT[0]))  # type: ignore[union-attr]
    proc.stdin.flush()  # type: ignore[union-attr]
    schema.check_line(read_line(proc), "server/discover")
    start = time.monotonic()
    proc.stdin.close()  # type: ignore[union-attr]
    assert proc.wait(timeout=10) == 0
    assert time.monotonic() - start < 2.0  # clients wait 2 s before SIGTERM
    assert b"Traceback" not in proc.stderr.read()  # type: ignore[union-attr]
    proc.stdout.close()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]


def test_eof_lets_a_pending_scripted_reply_finish(schema):
    sent = [request(1, "tools/call", {"name": "get_weather", "arguments": {"city": "Kyiv"}})]
    proc = run_mock("run", "default", input=line(sent[0]))  # EOF right after the request
    assert proc.returncode == 0
    (msg,) = validate_stdout(schema, proc.stdout, sent)
    assert "Kyiv" in msg["result"]["content"][0]["text"]


@pytest.mark.parametrize(("sig", "inherited"), [(signal.SIGTERM, "SIG_DFL"), (signal.SIGINT, "SIG_DFL"), (signal.SIGINT, "SIG_IGN")],
                         ids=["SIGTERM", "SIGINT", "SIGINT-started-ignored"])
def test_signals_exit_promptly_without_traceback(schema, sig, inherited, tmp_path, reaped):
    path = tmp_path / "hang.yaml"
    path.write_text("mockmcp: 1\ntools: [{name: wait, replies: [{steps: [{hang: true}]}]}, {name: ping}]\n")
    proc = spawn(str(path), sigint=inherited)
    reaped(proc)
    sent = [request(1, "tools/call", {"name": "wait"}), request(2, "tools/call", {"name": "ping"})]
    proc.stdin.write(line(sent[0]) + line(sent[1]))  # type: ignore[union-attr]
    proc.stdin.flush()  # type: ignore[union-attr]
    # once it has answered, the signal handlers are in place; request 1 hangs
    assert schema.check_line(read_line(proc), "tools/call")["id"] == 2
    start = time.monotonic()
    proc.send_signal(sig)
    status = proc.wait(timeout=10)
    elapsed = time.monotonic() - start
    stderr = proc.stderr.read()  # type: ignore[union-attr]
    rest = proc.stdout.read()  # type: ignore[union-attr]
    proc.stdin.close()  # type: ignore[union-attr]
    proc.stdout.close()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]
    assert elapsed < 2.0
    assert b"Traceback" not in stderr and b"KeyboardInterrupt" not in stderr
    assert status in (0, 128 + sig, -sig)
    validate_stdout(schema, rest, sent)


# ---------------------------------------------------------------- demo


def test_demo_prints_the_exchange():
    proc = subprocess.run(mockmcp_cmd("demo"), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    for method in ["server/discover", "tools/list", "tools/call", "prompts/get", "resources/read", "resources/templates/list"]:
        assert re.search(rf"^--> #\d+ {method}", out, re.M), method
    # the tool results, as the mock computed them
    assert '"text": "Hello, mockmcp!"' in out
    assert '"sum": 5' in out
    assert "Sunny, 22°C in Paris" in out
    assert "Please review this python" in out
    assert "weather://forecast/Paris" in out
    assert out.rstrip().endswith("done.")
    assert "Traceback" not in proc.stderr


def test_demo_of_another_scenario():
    """(A broken scenario's demo: tests/cli/test_demo.py.)"""
    ok = subprocess.run(mockmcp_cmd("demo", "prompts"), capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and re.search(r"--> #\d+ prompts/get", ok.stdout)
    assert ok.stdout.rstrip().endswith("done.") and "Traceback" not in ok.stderr


def test_demo_example_values():
    from mockmcp.cli.demo import example_value, expand_template

    schema_ = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "integer"}, "mode": {"enum": ["x", "y"]}, "flag": {"type": "boolean"}}, "required": ["a", "mode"]}
    assert example_value(schema_) == {"a": 2, "mode": "x"}
    assert expand_template("weather://forecast/{city}") == "weather://forecast/Paris"
    assert expand_template("repo://{owner}/files{+path}") == "repo://example owner/filesexample path"
    assert json.loads(json.dumps(example_value({"type": "array", "items": {"type": "string"}}, "text"))) == ["Hello, mockmcp!"]


def test_eof_with_a_hang_and_an_open_subscription_exits_promptly(schema, tmp_path):
    path = tmp_path / "hang.yaml"
    path.write_text("mockmcp: 1\ntools: [{name: wait, replies: [{steps: [{hang: true}]}]}]\n")
    sent = [request(1, "tools/call", {"name": "wait"}), request(2, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})]
    start = time.monotonic()
    proc = run_mock("run", str(path), input=b"".join(line(m) for m in sent))
    assert proc.returncode == 0
    assert time.monotonic() - start < 5  # spawn included; the hang and the stream add nothing
    out = validate_stdout(schema, proc.stdout, sent)
    assert [m.get("method") for m in out] == ["notifications/subscriptions/acknowledged"]


# ---------------------------------------------------------------- option validation, help, pipes, Ctrl-C (issue 11 #11, issue 12)


@pytest.mark.parametrize(
    "args",
    [
        ["--time-scale", "-1"],
        ["--time-scale", "nan"],
        ["--time-scale", "inf"],
        ["--time-scale", "fast"],
        ["--grace", "-1"],
        ["--grace", "nan"],
        ["--max-line-bytes", "0"],
        ["--max-line-bytes", "-5"],
    ],
    ids=lambda a: " ".join(a),
)
def test_bad_option_values_are_rejected_at_parse_time(args):
    proc = run_mock("run", "default", *args, input=line(ALL_DEFAULT[0]))
    assert proc.returncode == 2 and proc.stdout == b""
    err = proc.stderr.decode()
    assert f"argument {args[0]}: expected" in err and "Traceback" not in err


def test_zero_time_scale_and_grace_are_fine():
    proc = run_mock("run", "default", "--time-scale", "0", "--grace", "0", input=line(ALL_DEFAULT[0]))
    assert proc.returncode == 0 and b'"id":1' in proc.stdout.replace(b" ", b"")


def test_version():
    from mockmcp import __version__

    proc = run_mock("--version")
    assert proc.returncode == 0 and proc.stdout.decode().strip() == f"mockmcp {__version__}"


def test_bare_mockmcp_lists_every_command_with_one_line():
    from mockmcp.cli.main import _parser

    proc = run_mock()
    assert proc.returncode == 2
    err = proc.stderr.decode()
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    for choice in sub._choices_actions:
        assert re.search(rf"^\s+{choice.dest}\s+{re.escape(choice.help.split()[0])}", err, re.M), (choice.dest, err)


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    from mockmcp.cli.main import _parser

    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_argument_and_option_has_help_text():
    from mockmcp.cli.main import _parser

    for name, parser in {"mockmcp": _parser(), **_subparsers()}.items():
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            assert action.help, f"{name}: {action.option_strings or action.dest} has no help text"


@pytest.mark.parametrize("command", ["run", "check", "list", "demo", "schema", "journal"])
def test_every_command_help_shows_an_example(command):
    assert command in _subparsers()
    proc = run_mock(command, "--help")
    assert proc.returncode == 0
    out = proc.stdout.decode()
    assert "examples:" in out and f"  mockmcp {command}" in out.split("examples:", 1)[1]


def _journal_file(tmp_path: Path) -> Path:
    path = tmp_path / "j.jsonl"
    proc = run_mock("run", "default", "--journal", str(path), input=b"".join(line(m) for m in ALL_DEFAULT))
    assert proc.returncode == 0
    return path


@pytest.mark.parametrize("command", ["schema", "demo", "journal", "list"])
def test_a_reader_that_leaves_early_gets_no_traceback(command, tmp_path):
    """`mockmcp COMMAND | head -1`: the reader closes the pipe; exit 141 (128 + SIGPIPE), nothing on stderr.

    The reader is gone before the command writes (a reader that first takes a line
    races with outputs small enough to fit in the pipe's buffer, which then exit 0);
    the command meets the same broken pipe either way, at a write or at exit's flush.
    """
    args = [command, str(_journal_file(tmp_path))] if command == "journal" else [command]
    read_end, write_end = os.pipe()
    os.close(read_end)
    proc = subprocess.Popen(mockmcp_cmd(*args), stdout=write_end, stderr=subprocess.PIPE)
    os.close(write_end)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 141, err
    assert b"Traceback" not in err and b"BrokenPipe" not in err


@pytest.mark.parametrize("command", ["schema", "demo", "journal", "list", "check", "report", "--help", "--version"])
def test_an_output_that_refuses_writes_is_one_line_and_status_1(command, tmp_path):
    """`mockmcp COMMAND > /dev/full`: every write fails with ENOSPC, as on a disk that filled up.
    The command says so in one line on stderr and exits 1; no traceback, no line about an
    exception ignored at exit. ``--help`` and ``--version`` said nothing and exited 0: argparse
    drops an OSError from its own writes."""
    args = {"journal": ["journal", str(_journal_file(tmp_path))], "check": ["check", "default"],
            "report": ["report", str(_session_dir(tmp_path))]}.get(command, [command])
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(mockmcp_cmd(*args), stdout=full, stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.decode().splitlines()[-1:] == [
        "mockmcp: cannot write to stdout: No space left on device (the output is lost)"], proc.stderr
    assert b"Traceback" not in proc.stderr and b"Exception ignored" not in proc.stderr


def test_run_on_a_stdout_that_refuses_writes_says_why_not_that_the_client_left() -> None:
    """stdio ``run`` with its answers going to a full disk: as for a client that closed its end,
    the mock drops what follows and ends at EOF, but it said "stdout closed by the client", which
    sends the user looking for a client that did nothing; now an error line names the reason."""
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(mockmcp_cmd("run", "default"), input=b"".join(line(m) for m in ALL_DEFAULT),
                              stdout=full, stderr=subprocess.PIPE, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.decode().splitlines() == [
        "mockmcp: error: stdout refused a write (No space left on device); dropping further output"]


def _session_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "session"
    proc = run_mock("run", "default", "--session", str(folder), input=b"".join(line(m) for m in ALL_DEFAULT))
    assert proc.returncode == 0
    return folder


@pytest.mark.parametrize("inherited", ["SIG_DFL", "SIG_IGN"], ids=["default", "started-ignored"])
def test_sigint_during_start_up_exits_130_without_traceback(tmp_path, inherited, reaped):
    """The scenario is a FIFO nobody writes: the mock is certainly still loading when the signal lands.

    ``started-ignored``: a client started as a background job of a script (``client &``) spawns
    the mock with SIGINT ignored; its SIGINT must stop the mock while it loads too, as it does
    once it serves."""
    fifo = tmp_path / "scenario.yaml"
    os.mkfifo(fifo)
    proc = spawn(str(fifo), "--no-cache", sigint=inherited)
    reaped(proc)
    time.sleep(1.5)  # imports done, blocked opening the FIFO
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert out == b"" and b"Traceback" not in err and b"KeyboardInterrupt" not in err


def test_sigterm_during_start_up_is_quiet(tmp_path, reaped):
    fifo = tmp_path / "scenario.yaml"
    os.mkfifo(fifo)
    proc = subprocess.Popen(mockmcp_cmd("run", str(fifo), "--no-cache"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    reaped(proc)
    time.sleep(1.5)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGTERM and out == b"" and err == b""


# ------------------------------------------------------------------ the parser built for one subcommand

_ARGVS = [
    ["run", "default"],
    ["run", "mrtr", "--journal", "j.jsonl", "--report", "r.json", "--strict", "--seed", "7", "--time-scale", "0.5"],
    ["run", "default", "--http", "0", "--allow-origin", "http://a", "--allow-origin", "http://b", "--sse-keepalive", "0"],
    ["run", "tasks", "--session", "s", "--control", "c.sock", "--log-level", "debug", "--no-cache", "--grace", "2"],
    ["check", "a.yaml", "b.yaml", "--allow-absolute-paths"], ["list"], ["demo"], ["demo", "faults", "--timeout", "1"],
    ["schema", "--indent", "0"], ["record", "-o", "c.yaml", "--mode", "all", "--redact-key", "x", "--", "python", "s.py"],
    ["proxy", "--faults", "f.yaml", "--", "node", "s.js", "--flag"], ["ctl", "p.sock", "emit", "event=tools/list_changed"],
    ["journal", "j.jsonl", "--html", "t.html"], ["report", "s/", "--per-process", "--json"],
]
_BAD = [["run"], ["run", "default", "--time-scale", "-1"], ["record", "--", "x"], ["check"], ["ctl", "p"], ["run", "--help"],
        ["report", "--help"], ["demo", "--nope"]]


def _outcome(parser: argparse.ArgumentParser, argv: list[str], capsys: Any) -> tuple[Any, str, str]:
    from mockmcp.cli.main import parse

    try:
        result: Any = vars(parse(parser, argv)[0])
    except SystemExit as exc:
        result = ("exit", exc.code)
    out = capsys.readouterr()
    return result, out.out, out.err


@pytest.mark.parametrize("argv", _ARGVS + _BAD, ids=lambda a: " ".join(a))
def test_the_one_subcommand_parser_reads_argv_as_the_whole_one(argv, capsys, monkeypatch):
    """A spawn builds only the named subcommand (start-up time); what it parses, the help
    and the errors it prints must be what the parser with every subcommand gives."""
    from mockmcp.cli.main import _parser

    monkeypatch.setenv("COLUMNS", "100")
    assert _outcome(_parser(argv[0]), argv, capsys) == _outcome(_parser(), argv, capsys)


# ------------------------------------------------------------------ a usage error shows the subcommand's own usage


def _least_line(parser: argparse.ArgumentParser) -> tuple[list[str], argparse.ArgumentParser]:
    """What a subcommand's line needs to get past its required arguments (a value for each required
    positional and option; a nested subcommand's first action), and the innermost parser reached."""
    args: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            name, inner = next(iter(action.choices.items()))
            rest, innermost = _least_line(inner)
            return [*args, name, *rest], innermost
        if action.option_strings:
            if action.required:
                args += [action.option_strings[0], "x"]
        elif action.nargs not in ("?", "*", argparse.REMAINDER):
            args.append("x")
    return args, parser


@pytest.mark.parametrize("command", sorted(_subparsers()))  # every subcommand, one registered later too
def test_an_unknown_option_shows_the_subcommands_own_usage(command):
    """argparse hands a subcommand's unknown option back to the top-level parser, whose usage is
    the list of commands: `mockmcp demo --bogus` must say demo's usage, as its other errors do."""
    rest, parser = _least_line(_subparsers()[command])
    proc = run_mock(command, *rest, "--bogus", input=b"")
    err = proc.stderr.decode()
    assert proc.returncode == 2 and proc.stdout == b"", err
    assert err.startswith(f"usage: {parser.prog} "), err
    assert err.endswith(f"{parser.prog}: error: unrecognized arguments: --bogus\n"), err


@pytest.mark.parametrize("argv, said", [
    (["ctl", "p.sock", "ping", "x"], "mockmcp ctl: error: expected KEY=VALUE, got 'x'"),
    (["run", "default", "--session", "d", "--journal", "j"], "mockmcp run: error: --journal cannot be combined with --session (the session keeps its journal in DIR/journal.jsonl)"),
])
def test_a_refusal_after_parsing_shows_the_subcommands_usage(argv, said, capsys):
    from mockmcp.cli.main import main

    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert err.startswith(f"usage: mockmcp {argv[0]} ") and err.endswith(said + "\n"), err


def _started_with(closing: str, cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[bytes]:
    """``cmd`` started with one standard stream closed (``>&-``, ``2>&-``, ``<&-``), as a shell does."""
    return subprocess.run(["sh", "-c", f'exec "$@" {closing}', "sh", *cmd], capture_output=True, timeout=60, **kw)


@pytest.mark.parametrize("spawn", ["launcher", "direct"])
def test_closed_standard_streams_are_never_taken_by_a_file(tmp_path: Path, spawn: str) -> None:
    """With stderr closed, the journal opened next took fd 2 and the log was written into it; with
    stdout closed, commands died with a traceback (and a run's answers could have gone into a
    file). Now: stdout closed is one line and status 2; stderr and stdin closed read as /dev/null."""
    from support.process import direct_cmd

    cmd = mockmcp_cmd if spawn == "launcher" else direct_cmd
    for command in (["run", "default"], ["list"], ["schema"]):
        proc = _started_with(">&-", cmd(*command), input=line(request(1, "server/discover")))
        assert proc.returncode == 2 and b"Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.startswith(b"mockmcp: stdout is closed"), proc.stderr
    journal = tmp_path / "j.jsonl"
    proc = _started_with("2>&-", cmd("run", "default", "--journal", str(journal), "--log-level", "debug"),
                         input=b"not json\n" + line(request(1, "server/discover")))
    assert proc.returncode == 0 and json.loads(proc.stdout.splitlines()[-1])["id"] == 1
    lines = journal.read_bytes().splitlines()
    assert lines and all(json.loads(x)["dir"] for x in lines), lines  # records only: no log line in it
    proc = _started_with("<&-", cmd("run", "default"))
    assert proc.returncode == 0 and proc.stdout == b"" and b"Traceback" not in proc.stderr


ODD_SCENARIO_ARGUMENTS = ["x" * 5000, "x" * 5000 + ".yaml", "/tmp/" + "x" * 300 + "/a.yaml", "a\udcffb", "..", ".", "",
                          "default/", "nothing.yml", "/dev/null", "/", "~", "default\n"]


@pytest.mark.parametrize("command", ["run", "check"])
def test_an_odd_scenario_argument_is_an_error_naming_it(command: str) -> None:
    """Whatever a scenario argument is (a name too long for the file system: before, a
    traceback from looking it up), run and check end with status 2 (check: 1) and no traceback."""
    for arg in ODD_SCENARIO_ARGUMENTS:
        proc = subprocess.run(mockmcp_cmd(command, arg),
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        assert proc.returncode == (2 if command == "run" else 1), (arg[:40], proc.stderr[-500:])
        assert b"Traceback" not in proc.stderr and proc.stdout.strip(b"\n").count(b"\n") <= 1, (arg[:40], proc.stderr[-500:])
