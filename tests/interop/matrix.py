"""The interop matrix: every bundled scenario x the official SDK clients -> docs/interop.md.

Usage (from the repository root; the output is committed)::

    .venv/bin/python tests/interop/matrix.py            # all scenarios, all clients
    .venv/bin/python tests/interop/matrix.py --scenarios default,mrtr --out /tmp/m.md
    .venv/bin/python tests/interop/matrix.py --check    # run it all, compare with the page, write nothing

For each scenario in ``scenarios/`` (new ones are picked up automatically) a
generic plan is derived from the scenario itself: list the tools and call each
with example arguments built from its ``inputSchema``, list and get the prompts,
list and read the resources and an instance of each template, and ask for each
completion, and listen to change notifications for 1.5 s when the scenario has
subscription timers or a timeline. Every client runs the same plan through its driver
(``python_driver.py`` under asyncio and trio, ``ts/driver.mjs`` on Node) against
``mockmcp run SCENARIO --journal ... --report ...``, with short timeouts. A cell
records what the client did (``ok``, the JSON-RPC error code it surfaced,
``timeout``, a client-side rejection, a crash, or a fallback to the legacy
handshake) and, from the mock's report, its verdict on the client (the
scenario's ``expectations`` and the client checks). Every cell that is not all
``ok`` gets a note under the table: nothing is skipped silently.

Sections of the page the generator does not write (``## The Tasks extension``, from the
dedicated tests) are hand-written: a regeneration keeps them, word for word, in their place.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import datetime as _dt
import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CLIENTS = ("python-asyncio", "python-trio", "typescript")
# The same clients over Streamable HTTP: the driver spawns `mockmcp run ... --http 0`, reads
# the URL from its first stdout line and connects the SDK's Streamable HTTP transport to it.
HTTP_SUFFIX = "-http"
# fastmcp's client (python_driver.py --client fastmcp) runs over HTTP, on the scenarios with an
# `auth` section only: it is in the matrix for its authorization (its other cells say "not run").
FASTMCP = "fastmcp" + HTTP_SUFFIX
HTTP_CLIENTS = (*(c + HTTP_SUFFIX for c in CLIENTS), FASTMCP)
NOT_RUN = "not run"
# Where the OAuth mode's clients say the user's browser comes back (nobody listens there: the
# driver reads the authorization server's redirect itself).
OAUTH_REDIRECT = "http://127.0.0.1:47005/callback"
DEFAULT_TIMEOUT_MS = 3000
# Connecting spawns the mock (the TypeScript client in auto mode: a probe, then the session);
# with sessions running side by side on a loaded machine that alone can take seconds, and the
# matrix measures what the client does once connected, so the TypeScript driver's connect gets
# this (the Python client has one read timeout for every request, the plan's timeoutMs).
CONNECT_TIMEOUT_MS = 10_000

sys.path.insert(0, str(HERE))
from python_driver import example_from_schema  # noqa: E402  (a sibling script, not a package)
from tsclient import TS_DIR, TS_PACKAGE, ClientUnavailable  # noqa: E402
from tsclient import ensure as ts_ready  # noqa: E402


# ------------------------------------------------------------------ running one client


def installed_versions() -> dict[str, str]:
    from importlib.metadata import version

    out = {"python": f"mcp {version('mcp')} (Python {sys.version.split()[0]})",
           "fastmcp": f"fastmcp {version('fastmcp')}"}
    try:
        ts_ready()
        pkg = json.loads((TS_DIR / "node_modules" / TS_PACKAGE / "package.json").read_text())
        node = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        out["typescript"] = f"{TS_PACKAGE} {pkg['version']} (Node {node})"
    except ClientUnavailable as exc:
        out["typescript"] = f"unavailable: {exc}"
    return out


def driver_argv(client: str) -> list[str]:
    client = client.removesuffix(HTTP_SUFFIX)  # the same driver; the plan says which transport
    if client == "fastmcp":
        return [sys.executable, str(HERE / "python_driver.py"), "--backend", "asyncio", "--client", "fastmcp"]
    if client == "typescript":
        ts_ready()
        return ["node", str(TS_DIR / "driver.mjs")]
    backend = client.split("-", 1)[1]
    return [sys.executable, str(HERE / "python_driver.py"), "--backend", backend]


def run_client(client: str, plan: dict[str, Any]) -> dict[str, Any]:
    """Run one plan in the client's driver process (``driver``); its result (or a ``crash`` record)."""
    return run_batch(client, [plan], 1)[0]


def run_batch(client: str, plans: list[dict[str, Any]], jobs: int) -> list[dict[str, Any]]:
    """Run many plans in the client's driver process (``driver``), ``jobs`` sessions at once; a
    result per plan, in order, or a ``crash`` record each."""
    return driver(client).run(plans, jobs, client)


_DRIVERS: dict[str, Driver] = {}
_DRIVERS_LOCK = threading.Lock()


def driver(client: str) -> Driver:
    """This process's driver for ``client``: started on first use, then kept for every later batch
    of every caller until ``close_drivers`` (the suite calls it at the end of its session). A
    Python driver's start is about 0.85 CPU s, nearly all of it ``import mcp``, and a test run
    asks for one in a dozen places. A client and its HTTP twin (``-http``) share one. One caller
    at a time: tests run one after the other, and ``run_cells`` gives each driver one thread,
    which runs a client's cells, then its twin's."""
    name = client.removesuffix(HTTP_SUFFIX)  # the same process: each plan says its transport
    with _DRIVERS_LOCK:
        return _DRIVERS.setdefault(name, Driver(name))


def close_drivers() -> None:
    """End every driver ``driver`` started (each at the end of its input)."""
    with _DRIVERS_LOCK:
        drivers = list(_DRIVERS.values())
        _DRIVERS.clear()
    for each in drivers:
        each.close()


class Driver:
    """One client's driver process for every round of a run: started with ``--serve``, it reads a
    batch (``{"plans": [...], "jobs": N}``) per line and writes a result line per batch, so a run
    of several rounds pays for the interpreter and the SDK import once, not once a round (a
    Python driver's start is about 0.85 CPU s, nearly all of it ``import mcp``).

    A driver that exits, or overruns a batch's time (generous: as if its plans ran one after the
    other, since the driver's own timeouts bound each plan), is killed; that batch's plans get a
    ``crash`` record each, and the next batch starts a new driver. So does a batch that finds the
    environment changed since the driver started: what a driver spawns inherits the environment
    it was started with, so a kept driver serves only callers that would have started the same
    one. Each result carries the tail of what the driver wrote on stderr during its batch (the
    mocks of every plan share it)."""

    def __init__(self, client: str) -> None:
        self.client = client
        self.proc: subprocess.Popen[str] | None = None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr_path = ""
        self.environ: dict[str, str] = {}

    def __enter__(self) -> Driver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, plans: list[dict[str, Any]], jobs: int, client: str = "") -> list[dict[str, Any]]:
        """A result per plan, each naming ``client`` (the driver's own by default: its HTTP twin
        is the same process, the plan says which transport)."""
        client = client or self.client
        if self.proc is not None and self.environ != _environ():
            self.close()
        try:
            proc = self.proc or self._start()
        except ClientUnavailable as exc:
            return [{"client": client, "crash": f"client unavailable: {exc}"} for _ in plans]
        wall_timeout = 30 + sum(len(p["ops"]) * (p.get("timeoutMs", DEFAULT_TIMEOUT_MS) / 1000 + 3) for p in plans)
        with open(self.stderr_path, "rb") as err:
            err.seek(0, os.SEEK_END)
            assert proc.stdin is not None
            try:
                proc.stdin.write(json.dumps({"plans": plans, "jobs": jobs}) + "\n")
                proc.stdin.flush()
                line = self.lines.get(timeout=wall_timeout)
                crash = None if line is not None else "driver exited {}"
            except OSError:  # the driver is gone (a broken pipe)
                crash = "driver exited {}"
            except queue.Empty:
                crash = f"driver killed after {wall_timeout:.0f}s"
            if crash is not None:
                self.close(kill=True)
            stderr = _tail(err.read())
        if crash is not None:
            return [{"client": client, "crash": crash.format(proc.returncode), "stderr": stderr} for _ in plans]
        results: list[dict[str, Any]] = json.loads(line)["results"]
        for result in results:
            result["client"] = client
            result["stderr"] = stderr
        return results

    def _start(self) -> subprocess.Popen[str]:
        argv = driver_argv(self.client)
        fd, self.stderr_path = tempfile.mkstemp(prefix="mockmcp-driver-", suffix=".stderr")
        self.environ = _environ()
        try:
            self.proc = subprocess.Popen([*argv, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=fd, text=True, cwd=ROOT)
        finally:
            os.close(fd)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc, self.lines), daemon=True).start()
        return self.proc

    @staticmethod
    def _read(proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        """The driver's result lines (what else it prints on stdout is not one), then None at its end."""
        assert proc.stdout is not None
        with proc.stdout:  # closed at the driver's end: nothing else reads it
            for line in proc.stdout:
                if line.startswith("{"):
                    lines.put(line)
        lines.put(None)

    def close(self, kill: bool = False) -> None:
        """End the driver: at the end of its input (it exits once its batch is done), or killed."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if kill:
            proc.kill()
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        with contextlib.suppress(OSError):
            os.unlink(self.stderr_path)


def _environ() -> dict[str, str]:
    """The environment a driver passes on, less pytest's name of the running test (it changes
    with every test and says nothing to a mock)."""
    return {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}


def _tail(text: Any, n: int = 1500) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return (text or "")[-n:]


# ------------------------------------------------------------------ the generic plan


_TEMPLATE_VAR = re.compile(r"\{([+#./;?&]?)([^}]*)\}")


def instantiate(uri_template: str) -> str:
    """A concrete URI for an RFC 6570 template: simple variables become ``example``."""
    return _TEMPLATE_VAR.sub(lambda m: "" if m.group(1) in "?&;" and m.group(1) else "example", uri_template)


def generic_plan(scenario: Any, command: list[str], timeout_ms: int = DEFAULT_TIMEOUT_MS) -> dict[str, Any]:
    """The operations a generic client session performs against ``scenario`` (a model.Scenario)."""
    ops: list[dict[str, Any]] = []
    if scenario.tools:
        ops.append({"op": "listTools"})
        for tool in scenario.tools:
            args = example_from_schema(dict(tool.inputSchema)) or {}
            ops.append({"op": "callTool", "name": tool.name, "arguments": args})
    if scenario.prompts:
        ops.append({"op": "listPrompts"})
        for prompt in scenario.prompts:
            args = {a.name: "example" for a in (prompt.arguments or [])}
            ops.append({"op": "getPrompt", "name": prompt.name, "arguments": args})
    if scenario.resources:
        ops.append({"op": "listResources"})
        ops.extend({"op": "readResource", "uri": r.uri} for r in scenario.resources)
    if scenario.resourceTemplates:
        ops.append({"op": "listResourceTemplates"})
        ops.extend({"op": "readResource", "uri": instantiate(t.uriTemplate)} for t in scenario.resourceTemplates)
    subs = scenario.subscriptions
    if subs.timeline or subs.timers:
        ops.append({"op": "listen", "ms": 1500, "filter": {
            "toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True,
            "resourceSubscriptions": sorted({t.emit.uri for t in subs.timers if t.emit.uri}
                                            | {r.uri for r in scenario.resources}),
        }})
    for c in scenario.completions:
        if c.prompt:
            ref = {"type": "ref/prompt", "name": c.prompt}
        else:
            uri = next((t.uriTemplate for t in scenario.resourceTemplates if t.name == c.resourceTemplate),
                       c.resourceTemplate)
            ref = {"type": "ref/resource", "uri": uri}
        ops.append({"op": "complete", "ref": ref, "argument": {"name": c.argument, "value": ""}})
    return {"command": command, "timeoutMs": timeout_ms, "ops": ops}


def oauth_options(scenario: Any) -> dict[str, Any] | None:
    """The OAuth mode's client configuration for ``scenario`` (None: it has no ``auth``).

    What an application configured with everything the scenario offers it would have, as the
    conformance suite's harness hands its clients: the URL of the scenario's first Client ID
    Metadata Document (the client uses it when the server says it supports them) with that
    document's redirect URI; pre-registered credentials when they are the only way in (no
    dynamic registration, no document); otherwise a client that registers itself."""
    auth = getattr(scenario, "auth", None)
    if auth is None:
        return None
    registration = auth.server.registration
    options: dict[str, Any] = {"redirectUri": OAUTH_REDIRECT}
    if registration.documents:
        document = registration.documents[0]
        options["clientMetadataUrl"] = document.url
        uris = document.document.get("redirect_uris")
        if isinstance(uris, list) and uris and isinstance(uris[0], str):
            options["redirectUri"] = uris[0]
    elif registration.preRegistered and not registration.dynamic:
        client = registration.preRegistered[0]
        options.update(clientId=client.clientId, tokenEndpointAuthMethod=client.tokenEndpointAuthMethod)
        if client.clientSecret is not None:
            options["clientSecret"] = client.clientSecret
        if client.redirectUris:
            options["redirectUri"] = client.redirectUris[0]
    return options


def mock_command(scenario_path: Path, workdir: Path, prefix: list[str] | None = None) -> list[str]:
    # One session directory per cell: every process the client spawns (the TypeScript probe, a
    # restart) shares the journal, and each report judges the whole session so far. ``prefix``
    # stands for ``python -m mockmcp`` (a warm server's launcher, ``mockmcp warm argv``); without
    # one, the run's warm server when it has one (``MOCKMCP_WARM_ARGV``, the suite's default).
    if prefix is None:
        from mockmcp.warm.paths import prefix_from_env

        prefix = prefix_from_env() or [sys.executable, "-m", "mockmcp"]
    return [*prefix, "run", str(scenario_path),
            "--session", str(workdir / "session"), "--report", str(workdir / "report-{pid}.json")]


# ------------------------------------------------------------------ one cell


def session_report(workdir: Path) -> dict[str, Any] | None:
    """The report of the process that served the session (the TS client also spawns a probe).

    The session process is the one that received the most requests, per the journal;
    if it wrote no report (it died, or was killed), there is none, even if the probe wrote one.
    Its report judges every process of the session directory (the probe's discover too).
    """
    from mockmcp.verify.journal import read_journal

    journal = journal_path(workdir)
    requests: dict[int, int] = {}
    if journal.exists():
        for rec in read_journal(journal):
            requests.setdefault(rec["pid"], 0)
            if rec.get("dir") == "in" and "id" in rec.get("message", {}) and "method" in rec["message"]:
                requests[rec["pid"]] += 1
    if not requests:
        return None
    pid = max(requests, key=lambda p: (requests[p], p))
    path = workdir / f"report-{pid}.json"
    return json.loads(path.read_text()) if path.exists() else None


def journal_path(workdir: Path) -> Path:
    """The cell's journal: the session directory's, shared by every process of the cell
    (a workdir whose mock ran with ``--journal`` instead keeps it at the top)."""
    session = workdir / "session" / "journal.jsonl"
    return session if session.exists() else workdir / "journal.jsonl"


def inbound_methods(journal: Path) -> dict[str, int]:
    """How many of each method the mock received (both processes), from its journal."""
    from mockmcp.verify.journal import read_journal

    counts: dict[str, int] = {}
    if journal.exists():
        for rec in read_journal(journal):
            method = rec.get("message", {}).get("method") if rec.get("dir") == "in" else None
            if isinstance(method, str):
                counts[method] = counts.get(method, 0) + 1
            elif rec.get("kind") == "cancelled" and "HTTP stream" in str(rec.get("reason")):
                counts[CLOSED_STREAM] = counts.get(CLOSED_STREAM, 0) + 1
    return counts


# Counted with the inbound methods: over HTTP, a client cancels by closing the request's stream.
CLOSED_STREAM = "(HTTP stream closed by the client)"


def run_cell(scenario_path: Path, client: str, timeout_ms: int = DEFAULT_TIMEOUT_MS,
             op_timeout_ms: dict[str, int] | None = None) -> dict[str, Any]:
    return run_cells([(scenario_path, client)], timeout_ms=timeout_ms, op_timeout_ms=op_timeout_ms)[0]


def run_cells(cells: list[tuple[Path, str]], *, timeout_ms: int = DEFAULT_TIMEOUT_MS,
              jobs: int = 2, op_timeout_ms: dict[str, int] | None = None, prefix: list[str] | None = None,
              env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Run the cells (scenario path, client); a result per cell, in order. ``prefix`` and ``env``:
    what the clients spawn instead of ``python -m mockmcp``, and the variables they add to the
    environment they give it (``mock_command``).

    ``op_timeout_ms`` gives the operations on the named tools, prompts or URIs their own
    timeout (a hanging tool a short one, while the rest keep ``timeout_ms``).

    The cells of one client share its driver process (``driver``): each round, it runs the next
    session of every cell still going (``jobs`` at once), and the clients' drivers run side by
    side (a client's HTTP twin after it, in the same driver). Cells that need no further session
    drop out; a round is one spawn per client.
    """
    from mockmcp.scenario import loader
    from mockmcp.scenario.problems import LoadError

    results: list[dict[str, Any]] = [{} for _ in cells]
    runs: dict[str, list[tuple[int, CellRun]]] = {}
    with tempfile.TemporaryDirectory(prefix="mockmcp-matrix-") as tmp:
        for i, (path, client) in enumerate(cells):
            try:
                scenario, _ = loader.load(str(path), use_cache=False)
            except LoadError as exc:  # a broken bundled scenario is a cell to show, not a reason to stop
                results[i] = {"client": client, "loadError": str(exc)}
                continue
            if client == FASTMCP and scenario.auth is None:
                results[i] = {"client": client, "notRun": "fastmcp's client runs the scenarios with `auth` only"}
                continue
            ops = generic_plan(scenario, [], timeout_ms)["ops"]
            for op in ops:
                own = (op_timeout_ms or {}).get(op.get("name") or op.get("uri") or "")
                if own is not None:
                    op["timeoutMs"] = own
            work = Path(tmp) / f"cell-{i}"
            work.mkdir()
            http = client.endswith(HTTP_SUFFIX)
            runs.setdefault(client, []).append((i, CellRun(path, ops, work, timeout_ms, bool(scenario.expectations),
                                                           http=http, auth=oauth_options(scenario) if http else None,
                                                           prefix=prefix, env=env)))
        by_driver: dict[str, list[str]] = {}  # a client and its HTTP twin share a driver: one thread
        for client in runs:
            by_driver.setdefault(client.removesuffix(HTTP_SUFFIX), []).append(client)
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(by_driver))) as pool:
            futures = [pool.submit(_run_clients, [(client, runs[client]) for client in clients], jobs)
                       for clients in by_driver.values()]
            for fut in futures:
                for i, result in fut.result():
                    results[i] = result
    return results


def _run_clients(groups: list[tuple[str, list[tuple[int, CellRun]]]], jobs: int) -> list[tuple[int, dict[str, Any]]]:
    return [each for client, group in groups for each in _run_rounds(client, group, jobs)]


def _run_rounds(client: str, group: list[tuple[int, CellRun]], jobs: int) -> list[tuple[int, dict[str, Any]]]:
    live = list(group)
    kept = driver(client)  # one process for every round
    while live:
        plans = [(run, run.next_plan()) for _, run in live]
        batch = [(run, plan) for run, plan in plans if plan is not None]
        if batch:
            for (run, _), result in zip(batch, kept.run([plan for _, plan in batch], jobs, client)):
                run.take(result)
        live = [(i, run) for i, run in live if not run.done]
    return [(i, run.result()) for i, run in group]


class CellRun:
    """One cell's sessions: the plan, and after an operation that breaks the session, the
    rest in a new session, so each operation's outcome is its own, not the aftermath of an
    earlier hang or crash. The mock's verdict (report) and the process count come from the
    first session."""

    def __init__(self, scenario_path: Path, ops: list[dict[str, Any]], tmp: Path, timeout_ms: int,
                 has_expectations: bool, *, http: bool = False, auth: dict[str, Any] | None = None,
                 prefix: list[str] | None = None, env: dict[str, str] | None = None) -> None:
        self.scenario_path, self.ops, self.tmp, self.timeout_ms = scenario_path, ops, tmp, timeout_ms
        self.http = http
        self.prefix, self.env = prefix, env
        self.auth = auth  # the OAuth mode's options (oauth_options), over HTTP
        self.has_expectations = has_expectations
        self.remaining = list(ops)
        self.merged: dict[str, Any] = {}
        self.inbound: dict[str, int] = {}
        self.session = 0
        self.done = not ops
        self.work = tmp

    def next_plan(self) -> dict[str, Any] | None:
        """The plan of the next session, or None when the cell is done."""
        if self.done:
            return None
        self.session += 1
        self.work = self.tmp / f"session-{self.session}"
        self.work.mkdir()
        plan = {"command": mock_command(self.scenario_path, self.work, self.prefix), "timeoutMs": self.timeout_ms,
                "connectTimeoutMs": max(CONNECT_TIMEOUT_MS, self.timeout_ms), "ops": self.remaining,
                "stopAfterBreak": True}
        if self.env is not None:
            plan["env"] = self.env
        if self.http:
            plan["command"] = [*plan["command"], "--http", "0"]
            plan["transport"] = "http"
            if self.auth is not None:
                plan["auth"] = self.auth
        return plan

    def take(self, result: dict[str, Any]) -> None:
        """Merge one session's result; decide whether another session is needed."""
        got = result.get("ops", [])
        for method, n in inbound_methods(journal_path(self.work)).items():
            self.inbound[method] = self.inbound.get(method, 0) + n
        merged = self.merged
        if self.session == 1:
            merged = self.merged = result
            merged["ops"] = []
            merged["report"] = session_report(self.work)
            merged["processes"] = len(list(self.work.glob("report-*.json")))
        elif "crash" in result or result.get("connect", {}).get("status") != "ok":
            why = result.get("crash") or _op_text(result.get("connect", {}))
            merged["ops"].extend({**op, "status": "crash", "message": f"session {self.session} failed: {why}"}
                                 for op in self.remaining)
            self.done = True
            return
        else:
            for k, v in (result.get("callbacks") or {}).items():
                merged.setdefault("callbacks", {}).setdefault(k, []).extend(v)
            merged.setdefault("clientErrors", []).extend(result.get("clientErrors", []))
            if not merged["clientErrors"]:
                del merged["clientErrors"]
        if "crash" in merged or merged.get("connect", {}).get("status") != "ok" or not got:
            self.done = True
            return
        cut = next((i + 1 for i, op in enumerate(got) if breaks_session(op)), len(got))
        merged["ops"].extend({**op, "session": self.session} for op in got[:cut])
        self.remaining = self.remaining[cut:]
        self.done = not self.remaining

    def result(self) -> dict[str, Any]:
        return {**self.merged, "sessions": self.session, "inbound": self.inbound, "plan": self.ops,
                "hasExpectations": self.has_expectations}


def breaks_session(op: dict[str, Any]) -> bool:
    """A timeout or a lost connection: later operations of the session would measure that, not themselves."""
    text = f"{op.get('type', '')} {op.get('message', '')}".lower()
    if op["status"] == "timeout":
        return True
    if op["status"] == "error" and op.get("code") == -32000 and "closed" in text:
        return True
    return op["status"] == "client-error" and ("connection_closed" in text or "not connected" in text)


def summarize(cell: dict[str, Any]) -> tuple[str, list[str]]:
    """(short cell text, notes) for a cell result."""
    notes: list[str] = []
    if "loadError" in cell:
        notes.append(f"the scenario does not load: `{_oneline(cell['loadError'], 400)}`")
        return "scenario does not load", notes
    if "notRun" in cell:
        return NOT_RUN, []
    if "crash" in cell:
        notes.append(f"the driver crashed: {cell['crash']}; stderr: `{_oneline(cell.get('stderr', ''))}`")
        return "crash", notes
    conn = cell.get("connect", {})
    if conn.get("status") != "ok":
        notes.append(f"connect failed: {_op_text(conn)}")
        parts = [f"connect {conn.get('status')}"]
        if cell.get("auth") is not None:  # refusing to connect can be what a scenario asks (a wrong iss)
            _auth_parts(cell, parts, notes)
            _report_parts(cell, parts, notes)
        return "; ".join(parts), notes
    counts: dict[str, int] = {}
    cancels = cell.get("inbound", {}).get("notifications/cancelled", 0)
    for op in cell["ops"]:
        key = op["status"] if op["status"] != "error" else f"error {op.get('code')}"
        counts[key] = counts.get(key, 0) + 1
        if op["status"] != "ok":
            target = op.get("name") or op.get("uri") or ""
            text = _op_text(op)
            if op["status"] == "timeout":
                text += f"; the mock received notifications/cancelled ×{cancels} in this cell"
                if cell.get("inbound", {}).get(CLOSED_STREAM):
                    text += f" and saw the client close a request's HTTP stream ×{cell['inbound'][CLOSED_STREAM]}"
            notes.append(f"{op['op']} {target}: {text}".replace("  ", " "))
    parts = [f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: (kv[0] != "ok", kv[0]))]
    if cell.get("sessions", 1) > 1:
        parts.append(f"{cell['sessions']} sessions")
        notes.append(f"after each timeout or lost connection the rest of the plan ran in a new session"
                     f" ({cell['sessions']} sessions; the mock's verdict is from the first)")
    era = conn.get("era") or ("modern" if str(conn.get("protocolVersion", "")) >= "2026" else "legacy")
    if era != "modern":
        parts.insert(0, f"fallback to {conn.get('protocolVersion')}")
        notes.insert(0, f"the client fell back to the legacy handshake ({conn.get('protocolVersion')})")
    if cell.get("shutdown"):
        notes.append(f"close failed: {_op_text(cell['shutdown'])}")
    for op in cell["ops"]:
        if op["op"] == "listen" and op["status"] == "ok":
            if op["result"].get("events"):
                parts.append("listen: events received")
            else:
                parts.append("listen: no events")
                notes.append("listen: the stream was acknowledged but no change notification arrived in the window")
    if cell.get("clientErrors"):
        parts.append(f"client reported {len(cell['clientErrors'])} error(s)")
        notes.extend(f"the client reported (onerror): `{_oneline(e, 300)}`" for e in cell["clientErrors"][:5])
    progress = sum(op.get("progress", 0) for op in cell["ops"])
    if progress:
        parts.append(f"progress×{progress}")
    _auth_parts(cell, parts, notes)
    cbs = cell.get("callbacks") or {}
    if cbs:
        parts.append("callbacks: " + ", ".join(f"{k}×{len(v)}" for k, v in sorted(cbs.items())))
    _report_parts(cell, parts, notes)
    return "; ".join(parts), notes


def _auth_parts(cell: dict[str, Any], parts: list[str], notes: list[str]) -> None:
    """What the client's OAuth mode did: how many authorizations, the scope each asked for."""
    asked = (cell.get("auth") or {}).get("requests") or []
    if asked:
        parts.append(f"authorizations×{len(asked)}")
        notes.append("the client authorized (the OAuth mode) asking for scope "
                     + ", then ".join(f"`{q.get('scope') or '(none)'}`" for q in asked))
    for r in (cell.get("auth") or {}).get("responses") or []:
        if not r.get("code"):
            notes.append(f"an authorization was refused on the redirect: `{r.get('error')}`")


def _report_parts(cell: dict[str, Any], parts: list[str], notes: list[str]) -> None:
    """The mock's verdict on the client: its report's expectations and client findings."""
    report = cell.get("report")
    if report is None:
        notes.append("the mock wrote no report (it did not exit cleanly?)")
        parts.append("mock: no report")
    else:
        exp = report["counts"]["expectations"]
        if cell.get("hasExpectations"):
            verdict = "passed" if exp["failed"] == 0 else f"failed {exp['failed']}"
            parts.append(f"expectations {verdict}")
            for v in report["expectations"]:
                if v["verdict"] != "passed":
                    notes.append(f"expectation failed: {_oneline(json.dumps(v, ensure_ascii=False), 300)}")
        errors = [f for f in report["findings"] if f["level"] == "error"]
        if errors:
            checks = sorted({f["check"] for f in errors})
            parts.append(f"mock found {len(errors)} client error(s): {', '.join(checks)}")
            for f in errors[:5]:
                notes.append(f"mock finding {f['check']}: {_oneline(f.get('text', ''), 200)}")


def _op_text(op: dict[str, Any]) -> str:
    status = op.get("status")
    if status == "error":
        return f"JSON-RPC error {op.get('code')} `{_oneline(op.get('message', ''))}`"
    if status == "timeout":
        return "no answer within the timeout; the client gave up"
    return f"{status} {op.get('type', '')} `{_oneline(op.get('message', ''))}`"


def _oneline(text: str, n: int = 160) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|").replace("`", "'")
    return text if len(text) <= n else text[:n] + "..."


# ------------------------------------------------------------------ the table


# Client behaviours behind differences in the table, each established by a dedicated run
# (not inferred from the table itself).
KNOWN_BEHAVIOURS = [
    "The TypeScript client can drop the last progress notification of a request: when the response"
    " follows it without a pause, the client settles the response first, then reports the notification"
    " through `client.onerror` as \"Received a progress notification for an unknown token\" instead of"
    " calling `onprogress`. With `progress 1, sleep 50ms, progress 2, text` it delivers 1 of 2; with a"
    " sleep before the result, 2 of 2. The Python client delivers all of them. The mock's journal shows"
    " every notification written before the response. Whether it happens depends on timing, so a"
    " `progress` row may differ between runs.",
    "The TypeScript client also calls `onprogress` once per `input_required` round it fulfils (message"
    " \"Fulfilling input required by ...\"; nothing is sent on the wire). The driver counts those apart"
    " (`inputRounds` in the raw results), so `progress×N` counts only notifications from the mock.",
    "The Python client stops reading after a response line that is not valid UTF-8: that request and"
    " every later one on the connection time out (the `lies` tool `bad_utf8`, then `noise`, in one"
    " session). The TypeScript client decodes the line with replacement characters and carries on.",
    "Both clients accept a response whose `id` is the request's numeric id written as a string (`\"7\"`"
    " for 7): the `lies` tool `wrong_id` completes.",
    "Over Streamable HTTP the TypeScript client does not surface a `404 Not Found` whose body is a"
    " JSON-RPC `-32601` error as that error: it throws `SdkError` `CLIENT_HTTP_NOT_IMPLEMENTED` (\"Error"
    " POSTing to endpoint\") and reports it through `onerror` (the `errors` tool `method_not_found`). The"
    " revision answers an unknown method with exactly that status and body; the Python client surfaces"
    " the `-32601`.",
    "Over Streamable HTTP a client cancels by closing the request's stream, not with"
    " `notifications/cancelled` (the revision defines that notification for stdio only): the `stdio-*`"
    " scenarios whose expectations count `notifications/cancelled` fail in the HTTP columns by design,"
    " and the timeout notes count the closed streams instead.",
    "Neither client sets `io.modelcontextprotocol/logLevel` unless asked, so scenarios that log send no"
    " `notifications/message` in this generic session (as the revision requires).",
    # authorization (the OAuth mode over HTTP), each established by tests/interop/test_interop_auth.py
    # and runs of `auth` with one switch changed
    "Authorization, all three clients (Python, TypeScript, fastmcp): at the first `401` each reads the"
    " protected resource metadata at the URL the challenge names, then the authorization server's RFC 8414"
    " metadata, registers (or uses its Client ID Metadata Document URL when the server supports them), and"
    " authorizes with PKCE `S256`, a `state` and `resource` = the MCP URL; each adds `offline_access` to the"
    " scope when the authorization server lists it and the client asks for refresh tokens (the `auth`"
    " scenario: `mcp:read offline_access`). fastmcp's `OAuth` is the Python client's `OAuthClientProvider`"
    " underneath: it asks exactly what the Python client asks.",
    "Authorization, step-up: at a `403 insufficient_scope` each client authorizes again (`prompt=consent`)"
    " asking for the scopes it had plus the challenged ones (never the challenged ones alone), then sends the"
    " request once more. The TypeScript transport runs the step-up itself; when that needs the user it"
    " rejects the request with `UnauthorizedError` and also reports it through `onerror` (the \"client"
    " reported 1 error(s)\" of its `auth` cells); the host (here the driver) calls `finishAuth` with the"
    " callback and sends the request again. It checks the callback's `iss` in `finishAuth` and leaves `state`"
    " to the host.",
    "Authorization, `iss` (RFC 9207): all three compare the authorization response's `iss` with the issuer"
    " exactly and stop: a wrong one, a missing one while the metadata advertises"
    " `authorization_response_iss_parameter_supported`, and one that differs only by a trailing slash are all"
    " refused (TypeScript `IssuerMismatchError` from `finishAuth`, Python `OAuthFlowError`, fastmcp the same"
    " wrapped in `RuntimeError: Client failed to connect`).",
    "Authorization, registration: the Python and TypeScript clients register asking for"
    " `token_endpoint_auth_method: client_secret_basic` unless told otherwise, whatever the server's"
    " `token_endpoint_auth_methods_supported` lists; fastmcp's asks for `none` (a public client) unless given a"
    " secret. As the conformance suite's authorization server does, the mock registers a client asking for a"
    " method its metadata does not list with the first it lists and names it in the response (RFC 7591 3.2.1;"
    " `registration.unsupportedAuthMethod: reject` refuses instead, `400 invalid_client_metadata`), and all"
    " three authenticate at the token endpoint as the response says: a client asking `none` gets a secret and"
    " sends it, one asking `client_secret_basic` of a server taking only `none` sends none, so the"
    " `auth-token-endpoint-auth-*` rows pass for each (a client that kept to the method it asked would be"
    " refused with `invalid_client` and warned of by `auth.registration.ignored`)."
    " The TypeScript client keeps the discovery it made (`discoveryState`, as the SDK asks of a provider) and"
    " leaves forgetting it to the host when a 401 outlives a fresh authorization (a changed authorization"
    " server); the driver, as a host, does that.",
    "Authorization, fastmcp's browser step: its own redirect handler GETs the authorization URL once itself"
    " (a check for a stale client id) before it opens the browser, and its callback handler serves the"
    " redirect URI on a local port; against an authorization server that approves at once, that first GET is"
    " an authorization whose code is never redeemed. The driver replaces both handlers (it plays the browser).",
]


def render(results: dict[str, dict[str, dict[str, Any]]], clients: list[str], versions: dict[str, str],
           date: str, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> str:
    lines = [
        "# Interop matrix",
        "",
        "Every bundled scenario driven by the official SDK clients. Regenerate (and commit) with:",
        "",
        "```sh template",
        ".venv/bin/python tests/interop/matrix.py",
        ".venv/bin/python tests/interop/matrix.py --check    # the same run, compared with this page, nothing written",
        "```",
        "",
        f"Generated {date} with {versions['python']} (asyncio and trio backends) and {versions['typescript']},"
        " spawned with `versionNegotiation: {mode: 'auto'}`. Columns ending in `-http` run the same session over"
        " Streamable HTTP: the driver spawns `mockmcp run SCENARIO --http 0`, reads the endpoint URL from its first"
        " stdout line and connects the SDK's Streamable HTTP client transport (Python `Client(url)`, TypeScript"
        " `StreamableHTTPClientTransport`); the TypeScript probe then goes to the same process."
        f" The `{FASTMCP}` column is {versions.get('fastmcp', 'fastmcp')}'s client (`Client(url)`, its `*_mcp`"
        " methods), over HTTP on the scenarios with an `auth` section only (elsewhere `not run`).",
        "",
        "Over HTTP a scenario with `auth` runs each client in its OAuth mode: the Python client's"
        " `OAuthClientProvider` on its HTTP client, the TypeScript client's `OAuthClientProvider` on its transport"
        " (the host's part, `finishAuth` and a retry, done by the driver), fastmcp's `OAuth` helper. No user: the"
        " driver plays the browser (GETs the authorization URL, follows nothing, hands `code`, `state` and `iss`"
        " from the redirect to the client, which checks them). The client is given what the scenario offers an"
        " application: its first Client ID Metadata Document's URL and redirect URI, else its pre-registered"
        " credentials when they are the only way in, else nothing (it registers itself).",
        "",
        "Each client runs the same generic session per scenario (tests/interop/matrix.py): list and call"
        " every tool with example arguments from its `inputSchema` (its first `examples` entry if it has"
        " one, else values built from `default`, `const`, `enum` and `type`, also per property), list and get every prompt, list and read"
        " every resource and one instance of every template, ask every completion, listen for 1.5 s when the"
        " scenario has subscription events; the elicitation,"
        " sampling and roots callbacks answer, so `input_required` rounds complete. Each operation has a"
        f" {timeout_ms} ms timeout (the TypeScript client's connect, probe included, and fastmcp's,"
        f" {CONNECT_TIMEOUT_MS // 1000} s: a spawn on a loaded machine is not what a cell measures);"
        " scenarios that hang or die on purpose show it. Sessions run side by side, each client's in"
        " one driver process. A cell counts the"
        " operations by outcome (`ok`, `error CODE` = the client surfaced that JSON-RPC error, `timeout`,"
        " `client-error` = the SDK rejected something itself, `crash`) and gives the mock's verdict on the"
        " client (its `expectations` and client checks). Every non-`ok` operation has a note below.",
        "",
        "Regenerating the page runs the whole cross product (every scenario, every client, both transports), so"
        " this page is always a full run's; `--check` runs the same and fails naming each cell whose verdict is"
        " not the one shown here. The README's test command checks a part of it, to keep the suite's CPU"
        " (tests/interop/test_interop_matrix.py): every scenario with one client per transport, `python-trio`"
        " over stdio and `typescript-http` over HTTP (the cheapest of each transport, measured, and each completes"
        " every scenario), plus, in every row, each other outcome the page shows for that transport (with one"
        " client that gave it: those cells are where a client's behaviour matters), and the `default` scenario"
        " with every client on both transports. The whole cross product is opt-in: `pytest -m matrix` (or"
        " `pytest --matrix`) runs it as tests, and `matrix.py --check` as above.",
        "",
        "| scenario | " + " | ".join(clients) + " |",
        "| --- | " + " | ".join("---" for _ in clients) + " |",
    ]
    all_notes: list[str] = []
    for name in sorted(results):
        diffs = differences(results[name], clients)
        row = [f"`{name}`" + (f" ([clients differ](#{_anchor(name + ': the clients differ')}))" if diffs else "")]
        for client in clients:
            text, notes = summarize(results[name][client])
            ref = f"{name}/{client}"
            if notes:
                text += f" ([notes](#{_anchor(ref)}))"
                all_notes.append(f"### {ref}\n\n" + "\n".join(f"- {n}" for n in notes) + "\n")
            row.append(text)
        lines.append("| " + " | ".join(row) + " |")
        if diffs:
            all_notes.append(f"### {name}: the clients differ\n\n" + "\n".join(f"- {d}" for d in diffs) + "\n")
    lines += ["", "## Known client behaviours", ""]
    lines += [f"- {k}" for k in KNOWN_BEHAVIOURS]
    lines += ["", "## Notes", ""]
    lines += all_notes or ["Every operation of every cell was `ok`.", ""]
    return "\n".join(lines).rstrip() + "\n"


def _sections(text: str) -> list[tuple[str, str]]:
    """``text`` cut before each level-2 heading outside code fences: (title, section text), the
    part before the first heading with the title ``""``."""
    out: list[tuple[str, list[str]]] = [("", [])]
    fenced = False
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            out.append((line[3:].strip(), []))
        out[-1][1].append(line)
    return [(title, "".join(lines)) for title, lines in out]


def keep_hand_written(generated: str, previous: str) -> str:
    """``generated`` with the hand-written sections of ``previous`` put back where they were.

    A level-2 section of the previous page that the generator does not write (the Tasks
    extension's, written from tests/interop/test_interop_tasks.py) is hand-written: it is kept word
    for word, after the section it followed there (the nearest earlier one the generator still
    writes; at the top, after the table). Generated sections are replaced as a whole."""
    new = _sections(generated)
    titles = {title for title, _ in new}
    after: dict[str, list[str]] = {}
    anchor = ""
    for title, body in _sections(previous):
        if title in titles:
            anchor = title
        else:
            after.setdefault(anchor, []).append(body if body.endswith("\n\n") else body.rstrip("\n") + "\n\n")
    parts: list[str] = []
    for title, body in new:
        kept = after.get(title, [])
        parts.append(body if not kept or body.endswith("\n\n") else body.rstrip("\n") + "\n\n")
        parts += kept
    return "".join(parts).rstrip("\n") + "\n"


def differences(row: dict[str, dict[str, Any]], clients: list[str]) -> list[str]:
    """Operations whose outcome (status, error code, progress notifications seen) differs between clients."""
    out: list[str] = []
    cells = {c: row[c] for c in clients if "ops" in row.get(c, {})}
    if len(cells) < 2:
        return out
    n = min(len(c["ops"]) for c in cells.values())
    for i in range(n):
        seen = {c: _signature(cell["ops"][i]) for c, cell in cells.items()}
        if len(set(seen.values())) > 1:
            op = next(iter(cells.values()))["ops"][i]
            target = op.get("name") or op.get("uri") or ""
            shown = "; ".join(f"{c}: {sig}" for c, sig in seen.items())
            out.append(f"{op['op']} {target}: {shown}".replace("  ", " "))
    return out


def _signature(op: dict[str, Any]) -> str:
    sig = op["status"] if op["status"] != "error" else f"error {op.get('code')}"
    if op.get("progress"):
        sig += f", {op['progress']} progress notification(s) delivered"
    return sig


def _anchor(title: str) -> str:
    return re.sub(r"[^a-z0-9 _-]", "", title.lower()).replace(" ", "-")


def run_matrix(names: list[str], clients: list[str], *, jobs: int = 2,
               timeout_ms: int = DEFAULT_TIMEOUT_MS) -> dict[str, dict[str, dict[str, Any]]]:
    """Every scenario x client (``jobs`` sessions at once per client, see ``run_cells``)."""
    from mockmcp.scenario import loadcache

    cells = [(n, c) for n in names for c in clients]
    got = run_cells([(loadcache.bundled_dir() / f"{n}.yaml", c) for n, c in cells], timeout_ms=timeout_ms, jobs=jobs)
    results: dict[str, dict[str, dict[str, Any]]] = {n: {} for n in names}
    for (n, c), result in zip(cells, got):
        results[n][c] = result
        print(f"{n} x {c}: {summarize(result)[0]}", file=sys.stderr, flush=True)
    return results


# A second look at a cell whose verdict is not the committed one: every operation gets this long.
RECHECK_TIMEOUT_MS = 20_000


def check_cells(cells: list[tuple[str, str]], committed: dict[tuple[str, str], str], *,
                jobs: int = 2) -> list[str]:
    """Run the (bundled scenario, client) cells and compare the mock's verdicts with ``committed``
    (``verdicts.committed_cells``); one line per cell that differs (none: they all agree).

    With the page's 3 s per operation first; a cell whose verdict is not the committed one is run
    once more, all such cells one at a time with ``RECHECK_TIMEOUT_MS`` per operation: on a busy
    machine a call that is merely slow times out at 3 s (every operation of a cell did under a
    load of 13 on two cores), while a call that hangs on purpose still times out, later. A crash
    or a scenario that does not load is never run again."""
    from mockmcp.scenario import loadcache
    from verdicts import verdicts

    first = run_cells([(loadcache.bundled_dir() / f"{n}.yaml", c) for n, c in cells], jobs=jobs)
    wrong, again = [], []
    for (name, client), cell in zip(cells, first):
        got = summarize(cell)[0]
        if "crash" in got or "does not load" in got:
            wrong.append(f"{name} x {client}: {got}")
        elif verdicts(got) != verdicts(committed[name, client]):
            again.append((name, client))
    rerun = run_cells([(loadcache.bundled_dir() / f"{n}.yaml", c) for n, c in again], jobs=1,
                      timeout_ms=RECHECK_TIMEOUT_MS)
    for (name, client), cell in zip(again, rerun):
        got, want = summarize(cell)[0], committed[name, client]
        if verdicts(got) != verdicts(want):
            wrong.append(f"{name} x {client}: now {got!r}, docs/interop.md says {want!r}")
    return wrong


def main(argv: list[str] | None = None) -> int:
    from mockmcp.scenario import loadcache

    ap = argparse.ArgumentParser(description="Run the interop matrix and write docs/interop.md.")
    ap.add_argument("--scenarios", help="comma-separated bundled names (default: all)")
    ap.add_argument("--clients", default=",".join(CLIENTS + HTTP_CLIENTS))
    ap.add_argument("--out", default=str(ROOT / "docs" / "interop.md"))
    ap.add_argument("--json", help="also write the raw results here")
    ap.add_argument("--jobs", type=int, default=2, help="sessions at once per client (default 2)")
    ap.add_argument("--timeout-ms", type=int, default=DEFAULT_TIMEOUT_MS)
    ap.add_argument("--from-json", help="render earlier raw results (--json) instead of running")
    ap.add_argument("--check", action="store_true",
                    help="run the cells and compare the mock's verdicts with the committed page (--out) instead of"
                         " writing it; exit 1 naming each cell that differs")
    args = ap.parse_args(argv)
    names = args.scenarios.split(",") if args.scenarios else loadcache.bundled_names()
    clients = args.clients.split(",")
    if args.check:
        from verdicts import committed_cells

        committed = committed_cells(Path(args.out).read_text(encoding="utf-8"))
        wrong = check_cells([(n, c) for n in names for c in clients], committed, jobs=args.jobs)
        print("\n".join(wrong) or f"{len(names)} scenarios x {len(clients)} clients: every verdict is the committed one",
              file=sys.stderr)
        return 1 if wrong else 0
    if args.from_json:
        results = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
    else:
        results = run_matrix(names, clients, jobs=args.jobs, timeout_ms=args.timeout_ms)
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d")
    text = render(results, clients, installed_versions(), date, args.timeout_ms)
    out = Path(args.out)
    if out.exists():  # the page's hand-written sections survive a regeneration
        text = keep_hand_written(text, out.read_text(encoding="utf-8"))
    out.write_text(text, encoding="utf-8")
    if args.json and not args.from_json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        close_drivers()
