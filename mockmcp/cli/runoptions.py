"""The options of ``mockmcp run``, declared once.

``RUN_OPTIONS`` is the one table of ``run``'s options, from which ``cli`` builds
the argparse parser (values, help, errors), and ``refusal`` says what ``cli``
refuses after parsing. argparse reads every command line: a hand-written reader
of a spawn's usual lines beside it saved too small a share of a warm spawn to be
worth a second path (the measurement is in docs/performance.md).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

LOG_LEVELS = ("debug", "info", "warning", "error", "quiet")
HTTP_GROUP = "Streamable HTTP (see docs/http.md)"


class BadValue(ValueError):
    """An option value its converter rejects; the message is what the user is told."""


def non_negative_float(text: str) -> float:
    """A finite number >= 0 (``nan``, ``inf`` and negative values would only fail later, mid-session)."""
    try:
        value = float(text)
    except ValueError:
        raise BadValue(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise BadValue(f"expected a finite number >= 0, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0 (a time limit of 0 would refuse everything)."""
    value = non_negative_float(text)
    if value == 0:
        raise BadValue(f"expected a finite number > 0, got {text!r}")
    return value


def _whole_number(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise BadValue(f"expected a whole number, got {text!r}") from None
    if value < low:
        raise BadValue(f"expected a whole number >= {low}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    return _whole_number(text, 1)


MAX_INDENT = 16


def indent_width(text: str) -> int:
    """``schema --indent N``: 0 to ``MAX_INDENT`` (a width of billions was a MemoryError)."""
    value = _whole_number(text, 0)
    if value > MAX_INDENT:
        raise BadValue(f"expected a whole number from 0 to {MAX_INDENT}, got {text!r}")
    return value


def whole_number(text: str) -> int:
    """``int`` as argparse's ``type=int`` reads it (its error names the type ``int``)."""
    return int(text)


whole_number.__name__ = "int"  # argparse's message for a bad value: "invalid int value: 'x'"


def path(text: str) -> str:
    """A file's or a folder's path, never empty: ``--session ""`` (a variable left unset in a script)
    served with the option silently off (no session, socket, report or journal), the mistake
    surfacing later far from its cause."""
    if not text:
        raise BadValue("expected a path, got an empty one (leave the option out to go without it)")
    return text


def http_address(text: str) -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[V6]:PORT`` -> (host, port); the host defaults to 127.0.0.1."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or int(port) > 65535:
        raise BadValue(f"expected [HOST:]PORT with PORT 0..65535 (0: any free port), got {text!r}")
    return host, int(port)


class Option:
    """One option of ``mockmcp run``: ``kind`` is ``store`` (takes a value), ``flag`` or ``append``."""

    __slots__ = ("flag", "dest", "kind", "convert", "default", "metavar", "choices", "help", "group")

    def __init__(
        self,
        flag: str,
        help: str,
        *,
        kind: str = "store",
        convert: Callable[[str], Any] | None = None,
        default: Any = None,
        metavar: str | None = None,
        choices: Sequence[str] | None = None,
        group: str | None = None,
    ) -> None:
        self.flag = flag
        self.dest = flag[2:].replace("-", "_")
        self.kind = kind
        self.convert = convert
        self.default = False if kind == "flag" else default
        self.metavar = metavar
        self.choices = choices
        self.help = help
        self.group = group  # the argument group its help is listed under (None: the main list)


RUN_OPTIONS = (
    Option("--log-level", "how much to log on stderr (default: warning)", default="warning", choices=LOG_LEVELS),
    Option("--time-scale", "multiply every scripted delay by F >= 0 (0.1 runs ten times faster)",
           convert=non_negative_float, default=1.0, metavar="F"),
    Option("--seed", "seed for random delays and probabilistic rules", convert=whole_number, metavar="N"),
    Option("--grace", "seconds to finish scripted replies after stdin closes (default: 1)",
           convert=non_negative_float, default=1.0, metavar="S"),
    Option("--max-line-bytes", "longest accepted input line in bytes (default: 4 MiB)", convert=positive_int, metavar="N"),
    Option("--journal", "append every message in both directions to FILE (JSON Lines)", convert=path, metavar="FILE"),
    Option("--report", "write the verification report (JSON) to FILE at exit", convert=path, metavar="FILE"),
    Option("--strict", "exit non-zero if an expectation failed or the client broke a rule", kind="flag"),
    Option("--session", "keep tasks, named state, counters and the journal in DIR, shared by every process "
           "started with it (one after another or at once); --report/--strict then judge the whole session", convert=path, metavar="DIR"),
    Option("--allow-absolute-paths", "let the scenario reference files outside its folder by absolute path", kind="flag"),
    Option("--no-cache", "do not use or write the scenario load cache", kind="flag"),
    Option("--control", "listen for control requests on a Unix socket at PATH, mode 0600 (see docs/control.md)", convert=path, metavar="PATH"),
    Option("--http", "serve on http://HOST:PORT/mcp instead of stdio (HOST defaults to 127.0.0.1; PORT 0 picks"
           " a free one); the first stdout line is the URL; EOF on stdin or SIGTERM stops it",
           convert=http_address, metavar="[HOST:]PORT", group=HTTP_GROUP),
    Option("--http-any-host", "allow --http to listen on an address that is not loopback (e.g. 0.0.0.0)",
           kind="flag", group=HTTP_GROUP),
    Option("--allow-origin", "accept requests with this Origin header (repeatable; loopback origins always are)",
           kind="append", metavar="ORIGIN", group=HTTP_GROUP),
    Option("--sse-keepalive", "seconds between SSE keep-alive comments on a quiet stream (default: 15; 0: none)",
           convert=non_negative_float, default=15.0, metavar="S", group=HTTP_GROUP),
    Option("--allow-host", "on loopback, also accept requests whose Host header names NAME (repeatable; any port;"
           " its own address and localhost always are; '*': any)", kind="append", metavar="NAME", group=HTTP_GROUP),
    Option("--http-request-timeout", "seconds a request's head and body may take from its first byte (default: 30;"
           " then 408)", convert=positive_float, default=30.0, metavar="S", group=HTTP_GROUP),
)


def refusal(args: Any) -> str | None:
    """What ``cli`` refuses in parsed ``run`` options (argparse cannot say it), or ``None``."""
    if args.session and args.journal:
        return "--journal cannot be combined with --session (the session keeps its journal in DIR/journal.jsonl)"
    if args.http is not None and not args.http_any_host:
        from mockmcp.core.httprules import loopback  # (only with --http: a stdio spawn never needs the HTTP rules)

        if not loopback(args.http[0]):
            return f"--http {args.http[0]}: not a loopback address; add --http-any-host to listen there"
    return None

