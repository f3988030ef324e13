"""Command line: ``mockmcp run | check | list | demo | schema | journal | record | proxy | warm``.

Imports are deferred to the subcommand that needs them: ``run`` is on every
test's critical path (suites spawn the mock per test), so it loads trio and the
core but not yaml or cattrs when the scenario is already in the load cache.

``main`` is also where the process meets its shell: a reader that goes away
(``mockmcp list | head -1``) ends the command with status 141 and no
traceback, and Ctrl-C at any moment ends it with status 130 (the statuses a
shell reports for a process killed by SIGPIPE and SIGINT).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeAlias

from mockmcp import __version__
from mockmcp.cli import runoptions as runargs

if TYPE_CHECKING:
    import argparse

EXIT_SIGINT = 130  # 128 + SIGINT
EXIT_SIGPIPE = 141  # 128 + SIGPIPE


def _typed(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """``convert`` as an argparse ``type``: its ``BadValue`` message becomes argparse's error."""

    def typed(text: str) -> Any:
        try:
            return convert(text)
        except runargs.BadValue as exc:
            import argparse  # (already imported: argparse is the caller)

            raise argparse.ArgumentTypeError(str(exc)) from None

    typed.__name__ = convert.__name__
    return typed


_non_negative_float = _typed(runargs.non_negative_float)
_positive_float = _typed(runargs.positive_float)
_path = _typed(runargs.path)  # (an empty path would turn its option off unsaid)


def _command(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help: str, examples: str) -> argparse.ArgumentParser:
    """A subcommand whose ``--help`` ends with examples, laid out as written."""
    import argparse

    return sub.add_parser(
        name,
        help=help,
        description=help[0].upper() + help[1:] + ".",
        epilog="examples:\n" + examples,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


_Sub: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"  # where subcommands are registered


def _run_command(sub: _Sub) -> None:
    run = _command(
        sub, "run", "serve a scenario on stdin/stdout",
        "  mockmcp run default\n"
        "  mockmcp run weather.yaml --time-scale 0.1\n"
        "  mockmcp run mrtr --journal journal.jsonl --report report-{pid}.json --strict\n",
    )
    run.add_argument("scenario", help="a scenario file, or the name of a bundled scenario (see `mockmcp list`)")
    groups: dict[str, Any] = {}
    for option in runargs.RUN_OPTIONS:  # the one table of run's options
        target: Any = run
        if option.group is not None:
            if option.group not in groups:
                groups[option.group] = run.add_argument_group(option.group)
            target = groups[option.group]
        kwargs: dict[str, Any] = {"help": option.help}
        if option.kind == "flag":
            kwargs["action"] = "store_true"
        else:
            if option.kind == "append":
                kwargs["action"] = "append"
            else:
                kwargs["default"] = option.default
            if option.convert is not None:
                kwargs["type"] = _typed(option.convert)
            if option.metavar is not None:
                kwargs["metavar"] = option.metavar
            if option.choices is not None:
                kwargs["choices"] = list(option.choices)
        target.add_argument(option.flag, **kwargs)


def _check_command(sub: _Sub) -> None:
    check = _command(sub, "check", "validate scenario files: errors on stderr, warnings and a verdict per file on stdout",
                     "  mockmcp check weather.yaml\n  mockmcp check scenarios/*.yaml\n"
                     "  mockmcp check --strict weather.yaml   # a warning fails it too (CI)\n")
    check.add_argument("scenarios", nargs="+", metavar="SCENARIO", help="a scenario file or the name of a bundled scenario")
    check.add_argument("--allow-absolute-paths", action="store_true",
                       help="let the scenario reference files outside its folder by absolute path")
    check.add_argument("--strict", action="store_true", help="exit 1 when a scenario has warnings, not only errors")


def _list_command(sub: _Sub) -> None:
    _command(sub, "list", "list the bundled scenarios", "  mockmcp list\n  mockmcp run \"$(mockmcp list | head -1 | cut -d' ' -f1)\"\n")


def _demo_command(sub: _Sub) -> None:
    demo = _command(
        sub, "demo", "spawn the mock, drive it with a small client and print the exchange",
        "  mockmcp demo\n  mockmcp demo mrtr      # every input_required round, answered\n"
        "  mockmcp demo faults    # hangs, crashes, garbage: the demo goes on\n"
        "  mockmcp demo tasks --time-scale 0.1   # every task polled to its end, ten times faster\n"
        "  mockmcp demo mrtr --journal j.jsonl && mockmcp journal j.jsonl --html timeline.html\n",
    )
    demo.add_argument("scenario", nargs="?", default="default",
                      help="a scenario file or the name of a bundled scenario (default: default)")
    demo.add_argument("--timeout", type=_non_negative_float, default=3.0, metavar="S",
                      help="seconds to wait for an answer before cancelling the request (default: 3)")
    demo.add_argument("--journal", type=_path, metavar="FILE", help="have the mock append the exchange to FILE (see `mockmcp journal`)")
    demo.add_argument("--time-scale", type=_non_negative_float, default=1.0, metavar="F",
                      help="multiply the scenario's delays and the waits between a task's polls by F (0.1: ten times faster)")


def _schema_command(sub: _Sub) -> None:
    schema = _command(sub, "schema", "print the JSON Schema of the scenario format (or of a report, a journal record, the control operations)",
                      "  mockmcp schema > mockmcp.schema.json\n  mockmcp schema --indent 0 | wc -c\n"
                      "  mockmcp schema report    # also: journal, control (the TypeScript package's types come from these)\n")
    schema.add_argument("what", nargs="?", default="scenario", choices=["scenario", "report", "journal", "control"],
                        help="which schema (default: scenario)")
    schema.add_argument("--indent", type=_typed(runargs.indent_width), default=2, metavar="N",
                        help="indentation of the printed JSON (default: 2)")


def _record_command(sub: _Sub) -> None:
    import argparse

    record = _command(
        sub, "record", "put a real server behind stdio and write what it did as a cassette (a scenario)",
        "  mockmcp record -o weather.yaml -- python weather_server.py\n"
        "  mockmcp record -o weather.yaml --mode new_episodes -- python weather_server.py\n"
        "  mockmcp record -o legacy.yaml --as 2026-07-28 --redact-key x-session -- node old-server.js\n",
    )
    record.add_argument("-o", "--output", required=True, metavar="CASSETTE", help="the cassette file to write (or replay)")
    record.add_argument("--mode", choices=["once", "new_episodes", "all", "none"], default="once",
                        help="once: record if CASSETTE is missing, else replay (default); new_episodes: replay what is "
                        "recorded, record the rest; all: always record; none: replay only")
    record.add_argument("--redact-key", action="append", metavar="NAME",
                        help="also replace the value of every key NAME (repeatable; secret-looking keys always are)")
    record.add_argument("--redact", action="append", metavar="REGEX",
                        help="replace every match of REGEX in recorded strings (repeatable)")
    record.add_argument("--no-default-redaction", action="store_true",
                        help="do not redact keys that look like secrets (authorization, token, password, ...)")
    record.add_argument("--keep-timing", action="store_true", help="write the observed delays as sleep steps")
    record.add_argument("--as", dest="as_version", choices=["2026-07-28"], default=None,
                        help="write a legacy-era recording as a modern-era scenario")
    record.add_argument("--grace", type=_non_negative_float, default=10.0, metavar="S",
                        help="after the client disconnects, seconds to wait for the answers still due (default: 10)")
    record.add_argument("--startup-wait", type=_non_negative_float, default=0.2, metavar="S",
                        help="a server that exits within S seconds of starting is an error (default: 0.2)")
    record.add_argument("--strict", action="store_true", help="in replay: exit non-zero on an unrecorded request")
    record.add_argument("--journal", type=_path, metavar="FILE", help="in replay: append every message to FILE (JSON Lines)")
    record.add_argument("--report", type=_path, metavar="FILE", help="in replay: write the verification report to FILE")
    record.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error", "quiet"],
                        help="how much to log on stderr in replay (default: warning)")
    record.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]", help="the real server to run")


def _proxy_command(sub: _Sub) -> None:
    import argparse

    prox = _command(
        sub, "proxy", "pass a real server's traffic through, with the faults of a scenario in front of it",
        "  mockmcp proxy -- python my_server.py\n"
        "  mockmcp proxy --faults flaky.yaml --seed 7 -- python my_server.py\n"
        "  mockmcp proxy --faults slow.yaml --journal j.jsonl --strict -- node server.js\n",
    )
    prox.add_argument("--faults", metavar="FAULTS", help="a scenario whose rules aim faults at the traffic (see docs/cookbook.md)")
    prox.add_argument("--seed", type=int, default=None, metavar="N", help="seed for random delays and probabilistic rules")
    prox.add_argument("--time-scale", type=_non_negative_float, default=1.0, metavar="F", help="multiply every scripted delay by F")
    prox.add_argument("--grace", type=_non_negative_float, default=5.0, metavar="S",
                      help="after stdin closes, seconds to wait for the answers still due (default: 5)")
    prox.add_argument("--startup-wait", type=_non_negative_float, default=0.2, metavar="S",
                      help="a server that exits within S seconds of starting is an error (default: 0.2)")
    prox.add_argument("--journal", type=_path, metavar="FILE", help="append every message in both directions to FILE (JSON Lines)")
    prox.add_argument("--report", type=_path, metavar="FILE", help="write the verification report (JSON) to FILE at exit")
    prox.add_argument("--strict", action="store_true", help="exit non-zero if an expectation failed or the client broke a rule")
    prox.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error", "quiet"],
                      help="how much to log on stderr (default: warning)")
    prox.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]", help="the real server to run")


def _ctl_command(sub: _Sub) -> None:
    ctl = _command(
        sub, "ctl", "send one operation to a running mock's control socket and print the JSON response",
        "  mockmcp run default --control /tmp/mock.sock &\n"
        "  mockmcp ctl /tmp/mock.sock emit event=tools/list_changed\n"
        "  mockmcp ctl /tmp/mock.sock add kind=tool 'definition={\"name\": \"wave\"}'\n"
        "  mockmcp ctl /tmp/mock.sock waitFor 'when={\"method\": \"tools/call\"}' timeout=5\n"
        "  mockmcp ctl /tmp/mock.sock setTask taskId=ID status=completed 'result={\"content\": []}'\n"
        "  mockmcp ctl /tmp/mock.sock expireTokens clientId=dyn-abc\n"
        "  mockmcp ctl /tmp/mock.sock approveAuthorization id=authz-1 'scopes=[\"mcp:read\"]'\n"
        "  mockmcp ctl /tmp/mock.sock shutdown mode=crash status=3\n",
    )
    ctl.add_argument("path", metavar="PATH", help="the socket given to `mockmcp run --control PATH`")
    ctl.add_argument("operation", metavar="OPERATION", help="emit, add, replace, remove, getState, setState, counters, "
                     "arm, disarm, pause, resume, journal, waitFor, listTasks, getTask, setTask, shutdown, ping, or with auth: "
                     "expireTokens, revokeTokens, requireScope, listAuthorizations, approveAuthorization, "
                     "denyAuthorization, setAuthMetadata, migrate (see docs/control.md)")
    ctl.add_argument("args", nargs="*", metavar="KEY=VALUE",
                     help="parameters; a VALUE that is JSON is taken as JSON, anything else as a string")
    ctl.add_argument("--connect-timeout", type=_non_negative_float, default=0.0, metavar="S",
                     help="wait up to S seconds for the socket to appear (default: 0)")
    ctl.add_argument("--answer-timeout", type=_positive_float, default=30.0, metavar="S",
                     help="give up (status 2) when no answer comes S seconds beyond the operation's own "
                          "timeout (default: 30)")


def _journal_command(sub: _Sub) -> None:
    journal = _command(
        sub, "journal", "print a journal file as a readable transcript",
        "  mockmcp run default --journal j.jsonl\n  mockmcp journal j.jsonl\n"
        "  mockmcp journal j.jsonl --html timeline.html   # a timeline to open in a browser\n",
    )
    journal.add_argument("file", metavar="FILE", help="a journal written by `mockmcp run --journal FILE`")
    journal.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                         help="color the transcript: auto (only on a terminal, not with NO_COLOR), always or never")
    journal.add_argument("--html", type=_path, metavar="OUT", help="write the exchange as one self-contained HTML timeline to OUT instead")


def _report_command(sub: _Sub) -> None:
    report = _command(
        sub, "report", "judge a session directory: one verdict over all its processes",
        "  mockmcp run tasks --session s/   # the client may restart it, or spawn it twice\n"
        "  mockmcp report s/\n  mockmcp report s/ --per-process --json\n",
    )
    report.add_argument("directory", metavar="DIR", help="a session directory written by `mockmcp run --session DIR`")
    report.add_argument("--per-process", action="store_true", help="also give each process's own verdict")
    report.add_argument("--json", action="store_true", help="print the report as JSON (the shape `run --report` writes)")


def _warm_command(sub: _Sub) -> None:
    from mockmcp.cli.warm import add_parser

    add_parser(sub)


# Every subcommand, in the order `mockmcp --help` lists them.
_COMMANDS = {
    "run": _run_command, "check": _check_command, "list": _list_command, "demo": _demo_command,
    "schema": _schema_command, "record": _record_command, "proxy": _proxy_command, "ctl": _ctl_command,
    "journal": _journal_command, "report": _report_command, "warm": _warm_command,
}


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line; ``only``: register just that subcommand's options.

    A spawn pays for every ``add_argument`` (argparse builds a help formatter for
    each), and building all ten subcommands was a measurable part of a warm spawn
    (docs/performance.md). ``_dispatch`` asks for the one named in ``argv``; anything
    else (``--help``, ``--version``, a typo) gets every subcommand, so help and
    "invalid choice" errors stay whole. ``tests/cli/test_cli.py`` compares both.
    """
    import argparse

    ap = argparse.ArgumentParser(
        prog="mockmcp",
        description="A stdio mock MCP server (revision 2026-07-28) that answers from YAML scenarios.",
        epilog="examples:\n  mockmcp demo\n  mockmcp run default\n  mockmcp COMMAND --help",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--version", action="version", version=f"mockmcp {__version__}", help="print the version and exit")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name, add in _COMMANDS.items():
        if only is None or name == only:
            add(sub)
    return ap


def prime_run_parser() -> None:
    """Read a ``run`` command line once and drop the result, so that what argparse compiles and
    caches on its first use (its patterns, in ``re``'s cache) is already in this process.

    The warm server does this before it forks: each child then reads its own command line
    without compiling them again, a sixth of what a forked ``run`` costs (docs/performance.md)."""
    parse(_parser("run"), ["run", "default"])


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; a closed pipe and Ctrl-C end it quietly with the shell's usual status."""
    if not _standard_streams_open():
        print("mockmcp: stdout is closed, so nothing could be answered or printed "
              "(to drop the output, send it to /dev/null instead)", file=sys.stderr)
        return 2
    _heed_sigint()
    try:
        status = _dispatch(argv)
        sys.stdout.flush()  # a reader that left shows here, not in the interpreter's exit
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_SIGPIPE
    except KeyboardInterrupt:
        _silence_stdout()
        return EXIT_SIGINT
    return status


def _standard_streams_open() -> bool:
    """Put /dev/null on each of fds 0, 1 and 2 the process was started with closed (``2>&-``);
    False when fd 1 was one of them.

    A file opened later takes the lowest free descriptor: with stderr closed, the journal
    became fd 2 and every log line was written into it; with stdout closed, the answers would
    have been. And ``print(file=sys.stderr)`` with ``sys.stderr`` None prints to stdout, the
    protocol's channel. Closed stdin reads as at once at its end, closed stderr as a log no one
    reads, as they did; closed stdout leaves nowhere to answer: the caller stops with status 2."""
    closed = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.append(fd)
    for fd in closed:  # (ascending: each open takes the lowest free descriptor, the one closed)
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
    if sys.stdin is None:
        sys.stdin = open(0, encoding="utf-8", closefd=False)
    if sys.stderr is None:
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
    if sys.stdout is None:
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
    return 1 not in closed


def _heed_sigint() -> None:
    """Make SIGINT raise ``KeyboardInterrupt`` even when this process was started with it ignored.

    A shell without job control starts a background job (``cmd &`` in a script or a CI step) with
    SIGINT ignored, and the disposition survives exec, so Python leaves it ignored. The mock would
    then ignore a client's SIGINT while it loads yet stop on one once it serves (the signal watcher
    installs its own handler either way): one behaviour at every moment, the one a client that
    spawned a server expects, is to stop."""
    import signal  # (`run` imports it anyway)

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null so the interpreter's last flush of stdout cannot fail again."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)


# The commands that speak the protocol on stdout, whose shells own its writes; every other
# command's stdout (help and version included) is for people and pipes (cli/output.py).
_SPEAKING = frozenset({"run", "proxy", "record"})


def _dispatch(argv: Sequence[str] | None) -> int:
    words = sys.argv[1:] if argv is None else argv
    if (words and words[0] in _SPEAKING) or list(words[:2]) == ["warm", "serve"]:
        return _perform(words, argv)
    from mockmcp.cli.output import printed

    return printed(lambda: _perform(words, argv))


def _perform(words: Sequence[str], argv: Sequence[str] | None) -> int:
    parser = _parser(words[0] if words and words[0] in _COMMANDS else None)
    args, command = parse(parser, argv)
    match args.command:
        case "run":
            refused = runargs.refusal(args)
            if refused is not None:
                command.error(refused)
            from mockmcp.launch.run import run

            return run(args)
        case "check":
            return _check(args)
        case "list":
            return _list()
        case "demo":
            from mockmcp.cli.demo import demo

            return demo(args.scenario, journal=args.journal, timeout=args.timeout, time_scale=args.time_scale)
        case "schema":
            import json

            from mockmcp.cli.schema import schema_named

            print(json.dumps(schema_named(args.what), indent=args.indent))
            return 0
        case "journal":
            return _journal(args)
        case "report":
            from mockmcp.verify.report import report_command

            return report_command(args.directory, per_process=args.per_process, as_json=args.json)
        case "record":
            from mockmcp.launch.record import record

            return record(args)
        case "proxy":
            from mockmcp.launch.proxy import proxy

            return proxy(args)
        case "ctl":
            return _ctl(args, command)
        case "warm":
            from mockmcp.cli.warm import warm

            return warm(args, main, prime_run_parser)
    parser.print_help(sys.stderr)  # bare `mockmcp`: the command list, then argparse's usage-error status
    return 2


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> tuple[argparse.Namespace, argparse.ArgumentParser]:
    """``argv`` read by ``parser``, and the parser of the (innermost) subcommand it names (``parser``
    itself when it names none), so that a usage error shows that subcommand's usage.

    argparse's ``parse_args`` hands a subcommand's unknown options back to the whole parser,
    which would answer ``mockmcp demo --bogus`` with the list of commands; every other mistake
    in a subcommand's arguments its own parser already tells."""
    import argparse

    args, extra = parser.parse_known_args(argv)
    command, inner = parser, True
    while inner:  # (down to the innermost subcommand named: a subcommand may have its own)
        inner = False
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction) and getattr(args, action.dest, None) in action.choices:
                command, inner = action.choices[getattr(args, action.dest)], True
                break
    if extra:
        command.error(f"unrecognized arguments: {' '.join(extra)}")
    return args, command


def _ctl(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the response line; 0 for a result, 1 for an error response, 2 if none could be had."""
    import json

    from mockmcp.controlclient import NotAnAnswer, answer_timeout, exchange

    params: dict[str, object] = {}
    for arg in args.args:
        key, eq, value = arg.partition("=")
        if not eq or not key:
            parser.error(f"expected KEY=VALUE, got {arg!r}")
        try:
            params[key] = json.loads(value)
        except ValueError:
            params[key] = value  # not JSON: the text itself
        except RecursionError:
            parser.error(f"{key}=...: nested too deeply to be sent")
    try:
        data = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": args.operation, "params": params}, allow_nan=False)
                + "\n").encode()
    except ValueError:  # (NaN, Infinity or 1e400, which Python's parser reads as infinity)
        parser.error("a value is not a finite number: JSON has no NaN or infinity")
    try:
        line = exchange(args.path, data, args.connect_timeout, answer_timeout(params, args.answer_timeout))
    except NotAnAnswer as exc:
        print(f"mockmcp ctl: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"mockmcp ctl: cannot reach {args.path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if not line:
        print(f"mockmcp ctl: {args.path} closed the connection without answering", file=sys.stderr)
        return 2
    try:
        answer = json.loads(line)
    except (ValueError, RecursionError):
        answer = None
    if type(answer) is not dict or ("result" not in answer and "error" not in answer):
        print(f"mockmcp ctl: {args.path} answered with something that is not a JSON-RPC response: {line[:200]!r}",
              file=sys.stderr)
        return 2
    sys.stdout.write(line.decode("utf-8", "replace"))
    return 1 if "error" in answer else 0


def _journal(args: argparse.Namespace) -> int:
    if args.html:
        from mockmcp.verify.timeline import write_timeline

        return write_timeline(args.file, args.html)
    from mockmcp.verify.journal import print_transcript

    return print_transcript(args.file, color=args.color)


def _check(args: argparse.Namespace) -> int:
    """Errors on stderr; warnings and one verdict line per scenario on stdout; 1 if any has an
    error (or, with ``--strict``, a warning)."""
    from mockmcp.scenario.loader import load
    from mockmcp.scenario.problems import LoadError

    status = 0
    for name in args.scenarios:
        try:
            scenario, warnings = load(name, allow_absolute=args.allow_absolute_paths, use_cache=False)
        except LoadError as exc:
            errors = [p for p in exc.problems if p.level == "error"]
            for problem in errors:
                print(problem, file=sys.stderr)
            for problem in exc.problems:
                if problem.level != "error":
                    print(problem)
            print(f"{name}: {_count(len(errors), 'error')}")
            status = 1
            continue
        warnings = sorted([*warnings, *_warnings(name, scenario)], key=lambda p: (p.line, p.column))
        for shown, warning in enumerate(warnings):
            if shown == MAX_WARNINGS_SHOWN:
                print(f"{name}: {len(warnings) - shown} more warnings not shown")
                break
            print(warning)
        if not warnings:
            print(f"{name}: ok")
        elif args.strict:
            print(f"{name}: {_count(len(warnings), 'warning')} (--strict)")
            status = 1
        else:
            print(f"{name}: ok, {_count(len(warnings), 'warning')}")
    return status


# A generated scenario can repeat one mistake in every rule: the verdict still counts them all.
MAX_WARNINGS_SHOWN = 1000


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _warnings(name: str, scenario: Any) -> list[Any]:
    """``check``'s warnings about names no request carries (``scenario.checkwarn``), located in the
    file, whose text is parsed again for positions only when there is a warning to locate."""
    from mockmcp.scenario import checkwarn

    found = checkwarn.warnings(scenario)
    if not found:
        return []
    from mockmcp.scenario import plainload
    from mockmcp.scenario.loadcache import read_scenario, resolve
    from mockmcp.scenario.problems import Problem

    path = resolve(name)
    try:
        _, positions = plainload.parse_yaml(read_scenario(path).decode("utf-8"), str(path))
    except (OSError, UnicodeDecodeError):  # (gone since it loaded: the warnings are still told, at the file's start)
        positions = {}
    return [Problem(str(path), *plainload.position(positions, f.path), f.message, f.path, f.level) for f in found]


def _list() -> int:
    from mockmcp.scenario.loadcache import bundled_dir, bundled_names

    names = bundled_names()
    width = max(map(len, names), default=0)  # one column however long the names get
    for name in names:
        print(f"{name:<{width}}  {describe(bundled_dir() / f'{name}.yaml')}")
    return 0


def describe(path: os.PathLike[str] | str) -> str:
    """A scenario's one-line description: its ``description`` key, else its first comment."""
    first_comment = ""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("description:"):
                value = line.split(":", 1)[1].strip().strip("'\"")
                if value:
                    return value
            if not first_comment and line.startswith("#"):
                first_comment = line.lstrip("# ").strip()
    return first_comment


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
