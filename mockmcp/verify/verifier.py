"""Client verification wired into ``mockmcp run``: journal, checks, expectations, report.

``attach`` is called by ``run`` only when ``--journal``, ``--report`` or
``--strict`` is given (so plain runs pay nothing). It hooks the sans-I/O
pieces (``checks``, ``expectations``, ``journal``) to the connection's inbound
observers and the shell's output/event callbacks, and returns the callbacks
``run`` passes on. ``finish`` writes the report and the stderr summary and
applies ``--strict``.

An ``exit`` fault ends the process with ``os._exit`` from the shell's writer:
the journal is complete up to that point (one write per record), but no
report is written then (docs/verification.md says so).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Protocol, TypedDict, runtime_checkable

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.verify.checks import ClientChecker, Finding
from mockmcp.scenario.expectations import ExpectationTracker, failure_message
from mockmcp.wire.framing import Oversized
from mockmcp.wire.redaction import redact_headers
from mockmcp.verify.journal import JournalWriter, process_pid, raw_text
from mockmcp.verify.reportshape import report_of, report_text

if TYPE_CHECKING:
    from mockmcp.core.actions import Plan
    from mockmcp.core.connection import ShellConnection
    from mockmcp.core.engine import Engine
    from mockmcp.scenario.model.options import Expectation

MAX_PER_CHECK = 100  # findings kept per check id (the rest are only counted)
# Events of a request answered by a fault instead of its response (an HTTP status, a reset, a stream
# ended early, the connection dropped): the request is over, its id free again.
_ENDS_A_REQUEST = frozenset({"httpStatus", "httpReset", "httpEndStream", "closeStdout"})


class Log(Protocol):
    """Where findings and the summary go (``shells.log.StderrLog`` fits); ``level`` is its
    threshold (100: ``--log-level quiet``, no summary)."""

    @property
    def level(self) -> int: ...

    def __call__(self, level: str, text: str) -> None: ...

    def raw(self, text: str) -> None: ...


class LineConnection(Protocol):
    """A connection whose observers see whole lines only, never an ``Oversized`` one (the proxy's
    ``ProxyConnection``); a mock's is a ``connection.ShellConnection``."""

    @property
    def observers(self) -> list[Callable[[bytes, jsonrpc.Message | None, errors.ClientError | None], None]]: ...

    @property
    def plan_observers(self) -> list[Callable[[Plan], None]]: ...


@runtime_checkable
class BoundsJournal(Protocol):
    """A session directory's connection: it keeps the journal it is handed bounded (rotating it)."""

    def attach_journal(self, writer: JournalWriter, expectations: list[Expectation]) -> None: ...


class Hooks(TypedDict, total=False):
    """What ``attach`` hands the composition root, by name: the shells' output and event
    callbacks, the HTTP shell's request and finding callbacks, and ``finish`` (the report and
    ``--strict``'s status). Empty when nothing is verified."""

    output: Callable[[Any, bytes], None]
    event: Callable[[str, dict[str, Any]], None]
    finish: Callable[[int], int]
    verifier: Verifier
    httpRequest: Callable[[dict[str, str]], None]
    httpFinding: Callable[..., None]  # (check, text[, message, request id])


class Verifier:
    def __init__(self, engine: Engine, log: Log, *, journal: JournalWriter | None, report: str | None, strict: bool,
                 session: str | None = None) -> None:
        self.engine = engine
        self.session = session  # a session directory: the report judges all its processes
        self.log = log
        self.strict = strict
        self.report_path = report.replace("{pid}", str(process_pid())) if report else None
        self.journal = journal
        self.checker = ClientChecker(modern_only=engine.protocol.era == "modern")
        self.tracker = ExpectationTracker(engine.scenario.expectations)
        self.tasks = None
        if engine.tasks.specs or any(e.method.startswith("tasks/") for e in engine.scenario.expectations):
            from mockmcp.verify.task_checks import TaskChecker

            self.tasks = TaskChecker(engine.services.steps.time_scale)
        self.auth = None
        if engine.scenario.auth is not None:  # its checks judge the journal's auth events (HTTP only)
            from mockmcp.verify.auth_checks import AuthChecker

            self.auth = AuthChecker(engine.scenario.auth.expect.registration)
        self.findings: list[Finding] = []
        self.per_check: dict[str, int] = {}
        self.counts = {"requests": 0, "notifications": 0, "clientResponses": 0, "invalid": 0, "sent": 0, "rawWrites": 0, "cancelled": 0}
        self.rules: dict[Any, str] = {}
        self._unmatched_seen = 0
        self._headers: dict[str, str] | None = None  # the HTTP request whose body comes next
        self._unresumed: dict[str, Any] = {}  # event id -> request id: streams closed for a resume, not yet resumed
        if self.journal is not None:
            self.journal.write("start", scenario=engine.scenario.description or "", argv=sys.argv[1:], versions=list(engine.protocol.versions))

    # ------------------------------------------------------------ hooks

    def inbound(self, line: bytes | Oversized, msg: jsonrpc.Message | None, error: errors.ClientError | None) -> None:
        if isinstance(line, Oversized):
            self.counts["invalid"] += 1
            if self.journal is not None:
                self.journal.write("in", oversized=line.length, error=str(error) if error else None)
            self._found(self.checker.oversized(line.length))
            return
        if msg is None:
            self.counts["invalid"] += 1
            text = error.message if error is not None else "not a JSON-RPC message"
            if self.journal is not None:
                self.journal.write("in", raw=raw_text(line.rstrip(b"\r\n")), error=text)
            self._found(self.checker.invalid_line(line, text))
            return
        headers, self._headers = self._headers, None
        if self.journal is not None:
            if headers is None:
                self.journal.write("in", message=msg.message)
            else:  # over HTTP: the request's headers too (a session's verdict is judged from the journal),
                # their secrets redacted (a bearer token, a cookie, an API key: wire/redaction.py)
                self.journal.write("in", message=msg.message, headers=redact_headers(headers))
        if type(msg) is jsonrpc.Request:
            self.counts["requests"] += 1
            self.tracker.observe(msg.id, msg.method, msg.params, headers)
            found = self.checker.request(msg.id, msg.method, msg.params, msg.message)
            if headers is not None:
                # Over HTTP a connection carries one request at a time, so an id in flight is another
                # connection's: ids are unique per sender, and two clients of one mock may share one.
                found = [f for f in found if f.check != "id.reused"]
            self._found(found)
            if self.auth is not None:
                self._found(self.auth.passed(msg.method, msg.params, None if headers is None else headers.get("authorization")))
            if self.tasks is not None:
                self._found(self.tasks.request(msg.id, msg.method, msg.params, msg.message, time.monotonic()))
        elif type(msg) is jsonrpc.Notification:
            self.counts["notifications"] += 1
            # expectations can ask for notifications too (e.g. notifications/cancelled after a timeout)
            self.tracker.observe(None, msg.method, msg.params, headers)
            self._found(self.checker.notification(msg.method, msg.params, msg.message))
            if self.tasks is not None:
                self._found(self.tasks.notification(msg.method, msg.params, msg.message))
        else:
            self.counts["clientResponses"] += 1
            self._found(self.checker.response(msg.message))

    def http_request(self, headers: dict[str, str]) -> None:
        """The HTTP shell's request headers (names lower-cased), for the body it hands in next."""
        self._headers = headers

    def http_finding(self, check: str, text: str, message: Any = None, request_id: Any = None) -> None:
        """A client check the HTTP shell's rules found (headers, Accept, method, Retry-After)."""
        self._found([Finding(check, text, message, request_id)])

    def plan(self, plan: Plan) -> None:
        if plan.rule is not None:
            self.rules[plan.request_id] = plan.rule

    def output(self, message: Any, data: bytes) -> None:
        self._drain_unmatched()
        if message is None:
            self.counts["rawWrites"] += 1
            if self.journal is not None:
                self.journal.write("out", raw=raw_text(data), fault=True)
            return
        self.counts["sent"] += 1
        rule = None
        if type(message) is dict and "id" in message and "method" not in message:
            rule = self.rules.pop(message["id"], None)
        if self.journal is not None:
            if rule is not None:
                self.journal.write("out", message=message, rule=rule)
            else:
                self.journal.write("out", message=message)
        self.checker.server_message(message)
        if self.tasks is not None:
            self.tasks.server_message(message, time.monotonic())

    def event(self, kind: str, info: dict[str, Any]) -> None:
        if kind == "cancelled":
            self.counts["cancelled"] += 1
            self._ended(info.get("id"))
        elif kind in _ENDS_A_REQUEST and info.get("id") is not None:
            self._ended(info["id"])
        elif kind == "httpRetry":
            self._unresumed[info["eventId"]] = info.get("id")
        elif kind == "httpResumed":
            self._unresumed.pop(info["eventId"], None)
        if self.journal is not None:
            self.journal.write("event", kind=kind, **info)
        if kind == "auth" and self.auth is not None:
            self._found(self.auth.exchange(info))

    def _ended(self, rid: Any) -> None:
        """A request ended without a response (cancelled, or answered by an HTTP fault): not in flight."""
        self.checker.ended(rid)
        self.rules.pop(rid, None)

    # ------------------------------------------------------------ findings

    def _drain_unmatched(self) -> None:
        unmatched = self.engine.unmatched
        while self._unmatched_seen < len(unmatched):
            u = unmatched[self._unmatched_seen]
            self._unmatched_seen += 1
            miss = u.get("nearMiss")
            if "invalidArguments" in u:
                text = f"{u['method']} id {u['id']!r} of {u['what']} has arguments that break its inputSchema: " + "; ".join(u["invalidArguments"])
                self._found([Finding("tools.arguments.invalid", text, None, u["id"])])
                continue
            if u.get("answer"):  # a legacy request step's expect (a cassette's recorded answer; its reason is the miss's)
                text = f"{u['method']} id {u['id']!r}: the client's answer differs from the recorded one ({u['what']}): {u['nearMiss']['reason']}"
                self._found([Finding("expect.answer", text, None, u["id"], {"nearMiss": miss})])
                continue
            if u.get("undefined"):
                text = f"{u['method']} id {u['id']!r} asks for {u['what']}, which the scenario does not define"
                if miss:
                    text += f"; closest: {miss['rule']!r}"
            else:
                text = f"no rule of {u['what']} matched {u['method']} id {u['id']!r}"
                if miss:
                    text += f"; closest: {miss['rule']} ({miss['reason']})"
            self._found([Finding("expect.unmatched", text, None, u["id"], {"nearMiss": miss} if miss else None)])

    def _found(self, findings: list[Finding]) -> None:
        for f in findings:
            n = self.per_check.get(f.check, 0) + 1
            self.per_check[f.check] = n
            if n <= MAX_PER_CHECK:
                self.findings.append(f)
            if self.journal is not None:
                self.journal.write("finding", finding=f.to_json())
            self.log("info", f"client check {f.check} ({f.level}): {f.text}")

    # ------------------------------------------------------------ end

    def report(self) -> dict[str, Any]:
        self._drain_unmatched()
        for event_id, rid in self._unresumed.items():
            self._found([Finding("http.resume.missing", f"the mock closed the SSE stream of request {rid!r} before its"
                                 f" answer (last event id {event_id!r}, with retry); the client never resumed it with GET",
                                 None, rid)])
        self._unresumed.clear()
        verdicts = self.tracker.verdicts()
        findings = [f.to_json() for f in self.findings]
        return report_of({"pid": process_pid()}, self.counts, self.per_check, verdicts, findings)

    def finish(self, status: int) -> int:
        report = self.report()
        if self.session is not None:
            from mockmcp.verify.report import session_report

            own = report
            try:
                report = session_report(self.session, self.engine.scenario.expectations, save=True)
            except OSError as exc:  # (a full disk: the journal still holds what the verdict would have saved)
                self.log("error", f"{self.session}: cannot save the session's verdict so far: {exc.strerror or exc}; "
                         "the next verdict judges the journal from where the last saved one stopped")
                report = session_report(self.session, self.engine.scenario.expectations)
            report["pid"] = own["pid"]
            report["counts"] = {**own["counts"], **report["counts"]}
        if self.report_path:
            tmp = f"{self.report_path}.{os.getpid()}.tmp"
            try:
                with open(tmp, "w", encoding="utf-8") as fh:
                    fh.write(report_text(report) + "\n")
                os.replace(tmp, self.report_path)
            except OSError as exc:  # (checked at start-up: a disk that filled, a folder removed since)
                self.log("error", f"cannot write the report {self.report_path}: {exc}")
                with contextlib.suppress(OSError):
                    os.unlink(tmp)  # (a half-written or unrenamed temporary file is not left beside it)
        self._summary(report)
        if self.journal is not None:
            for verdict in report["expectations"]:  # the journal alone then tells why a test failed (the timeline shows it)
                if verdict["verdict"] == "failed":
                    self.journal.write("verdict", verdict=verdict)
            self.journal.close()
        if self.strict and not report["ok"] and status == 0:
            return 1
        return status

    def _summary(self, report: dict[str, Any]) -> None:
        if self.log.level >= 100:  # --log-level quiet
            return
        c = report["counts"]
        f = c["findings"]
        e = c["expectations"]
        lines = [
            f"mockmcp: verification: {c['requests']} requests, {c['notifications']} notifications; "
            f"findings: {f['error']} errors, {f['warning']} warnings, {f['note']} notes; "
            f"expectations: {e['passed']} passed, {e['failed']} failed"
        ]
        shown = [x for x in report["findings"] if x["level"] != "note"][:10]
        for x in shown:
            lines.append(f"mockmcp:   {x['level']} {x['check']}: {x['text']}")
        if e["failed"]:
            lines += ["mockmcp:   " + line for line in failure_message(report["expectations"]).splitlines()]
        if self.strict and not report["ok"]:
            lines.append("mockmcp: --strict: exiting with status 1")
        self.log.raw("\n".join(lines) + "\n")


def attach(engine: Engine, conn: ShellConnection | LineConnection, log: Log, *, journal: JournalWriter | None = None,
           report: str | None = None, strict: bool = False, session: str | None = None) -> Hooks:
    """A verifier watching ``conn`` (its inbound lines and its plans); its callbacks by name.
    ``journal``: opened by the caller, which says why when it cannot be (``launch.boot``)."""
    v = Verifier(engine, log, journal=journal, report=report, strict=strict, session=session)
    conn.observers.append(v.inbound)
    if isinstance(conn, BoundsJournal) and v.journal is not None:
        conn.attach_journal(v.journal, engine.scenario.expectations)
    conn.plan_observers.append(v.plan)
    return {"output": v.output, "event": v.event, "finish": v.finish, "verifier": v,
            "httpRequest": v.http_request, "httpFinding": v.http_finding}
