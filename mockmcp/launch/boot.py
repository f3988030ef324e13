"""The one bootstrap every process kind is built from: ``run`` (stdio and HTTP), ``proxy``, ``record``.

Each piece is what a process needs before its shell serves, built here and nowhere else: the
scenario (with its problems said on stderr), the log, the engine with what only a process owns
handed in (an HMAC key, a seeded random generator, the clock), the observers (journal,
verifier), the control core, and the real server's command line. The process kinds
(``launch.run``, ``launch.proxy``, ``launch.record``) compose them and hand each shell or
recorder what it needs through its arguments; the shells and recorders import none of this.

Every import is deferred to the piece that needs it: ``run`` is on every test's critical path.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    import argparse
    from types import SimpleNamespace

    from mockmcp.core.auth.site import AuthSite
    from mockmcp.core.connection import ShellConnection
    from mockmcp.core.control import Control
    from mockmcp.core.engine import Engine
    from mockmcp.scenario.model.base import Scenario
    from mockmcp.scenario.problems import Problem
    from mockmcp.shells.log import StderrLog
    from mockmcp.verify.verifier import Hooks, LineConnection


def load_scenario(path: str, *, allow_absolute: bool = False, use_cache: bool = True) -> tuple[Scenario, list[Problem]] | None:
    """The scenario and its warnings, or ``None`` once its problems were said on stderr (exit 2).

    With ``use_cache`` a cache hit skips yaml and cattrs entirely (they are imported on a miss only)."""
    if use_cache:
        from mockmcp.scenario.loadcache import load_cached

        hit: tuple[Scenario, list[Problem]] | None = load_cached(path, allow_absolute=allow_absolute)
        if hit is not None:
            return hit
    from mockmcp.scenario.loader import load
    from mockmcp.scenario.problems import LoadError

    try:
        return load(path, allow_absolute=allow_absolute, use_cache=use_cache)
    except LoadError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return None


def open_log(level: str, warnings: Sequence[Problem] = ()) -> StderrLog:
    """The process's stderr log, with the scenario's warnings said on it."""
    from mockmcp.shells.log import StderrLog

    log = StderrLog(level)
    for w in warnings:
        log("warning", str(w))
    return log


def new_engine(
    scenario: Scenario,
    *,
    seed: int | None = None,
    time_scale: float = 1.0,
    state_key: bytes | None = None,
    compile_replies: bool = True,
    clock: Callable[[], float] | None = None,
    shared_ids: bool = False,
    track_unknown: bool = False,
    task_lookup: Callable[[str], str | None] | None = None,
    task_archived_ids: Callable[[], list[str]] | None = None,
) -> Engine:
    """An engine with what the shell owns handed in: a random HMAC key for ``requestState``
    (unless given), a random generator seeded with ``seed`` (random delays, probabilities)
    and the wall clock tasks are timed by (unless given: tests hand in trio's); and what the
    process kind decides: ids shared by several clients (HTTP), unknown requests kept for the
    verifier, a session directory's archive of ended tasks."""
    import random
    import time

    from mockmcp.core.engine import Engine

    return Engine(
        scenario,
        state_key=state_key if state_key is not None else os.urandom(32),
        rng=random.Random(seed),
        time_scale=time_scale,
        compile_replies=compile_replies,
        clock=clock if clock is not None else time.time,
        shared_ids=shared_ids,
        track_unknown=track_unknown,
        task_lookup=task_lookup,
        task_archived_ids=task_archived_ids,
    )


def verifying(args: argparse.Namespace | SimpleNamespace) -> bool:
    """Whether the verifier runs (a journal, a report, ``--strict``, or a session, which keeps a journal)."""
    return bool(args.journal or args.report or args.strict or getattr(args, "session", None))


def attach_observers(
    args: argparse.Namespace | SimpleNamespace, engine: Engine, conn: ShellConnection | LineConnection, log: StderrLog,
    *, journal: str | None = None,
) -> Hooks | None:
    """Hook the journal and the verifier in only when asked for (they cost start-up time): a mock's
    connection or the proxy's. ``journal``: where to write it, when not ``--journal`` (a session
    directory's). The observers by name (``output``, ``event``, ``finish``, ...), or ``None``
    once said why the journal or the report cannot be written (exit 2: a folder, a path that does
    not exist: said at start-up, not when the report is due)."""
    if not verifying(args):
        return {}
    from mockmcp.verify.journal import JournalWriter
    from mockmcp.verify.verifier import attach

    report = None
    if args.report:
        from mockmcp.verify.journal import process_pid

        report = args.report.replace("{pid}", str(process_pid()))
        why = cannot_write(report)
        if why is not None:
            log("error", f"--report: cannot write {report}: {why}")
            return None
    path = journal or args.journal
    writer = None
    if path:
        try:
            writer = JournalWriter(path)
        except OSError as exc:
            log("error", f"--journal: cannot write {path}: {exc.strerror or exc}")
            return None
    return attach(engine, conn, log, journal=writer, report=report, strict=args.strict,
                  session=getattr(args, "session", None))


def cannot_write(path: str, *, make_folder: bool = False) -> str | None:
    """Why a file could not be written at ``path`` at the end of the run, or None: asked at
    start-up, so an output the run exists to produce (a cassette, a report) is not lost at its
    end to a typo. With ``make_folder`` a missing folder is made (as that writer would make it).
    A file is created in the folder and removed: the one answer permissions, read-only mounts
    and full inode tables all give alike."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        return "it is a folder"
    if make_folder:
        try:
            os.makedirs(folder, exist_ok=True)
        except FileExistsError:
            return f"{folder} is not a folder"
        except OSError as exc:
            return f"cannot make its folder {folder}: {exc.strerror or exc}"
    elif not os.path.isdir(folder):
        return f"its folder {folder} does not exist" if not os.path.exists(folder) else f"{folder} is not a folder"
    probe = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.probe")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    except OSError as exc:
        return f"cannot write in {folder}: {exc.strerror or exc}"
    os.unlink(probe)
    return None


def finished(observers: Hooks, status: int) -> int:
    """The exit status once the report is written (``--strict`` may turn a 0 into a 1)."""
    finish = observers.get("finish")
    return finish(status) if finish is not None else status


def new_auth(args: argparse.Namespace | SimpleNamespace, engine: Engine) -> AuthSite | None:
    """For a scenario with ``auth`` served over HTTP: the authorization core, made here so the HTTP
    shell serves it and the control channel steers the same one."""
    auth = engine.scenario.auth
    if auth is None or getattr(args, "http", None) is None:
        return None
    from mockmcp.shells.http.auth import new_site

    return new_site(auth, engine.services.steps.time_scale)


def new_control(args: argparse.Namespace | SimpleNamespace, engine: Engine, conn: ShellConnection,
                auth: AuthSite | None = None) -> Control | None:
    """With ``--control PATH``: the control core, hooked to what the connection reads (the control
    server hooks what the shell writes); ``auth``: the authorization core it steers too."""
    if not getattr(args, "control", None):
        return None
    from mockmcp.core.control import Control
    from mockmcp.scenario import fragments

    steering = None
    if auth is not None:
        from mockmcp.core.auth.steering import AuthSteering

        steering = AuthSteering(auth)
    control = Control(engine, fragments, auth=steering)
    conn.observers.append(control.inbound)
    return control


def server_command(words: Sequence[str], prog: str) -> list[str] | None:
    """The real server's command line (what follows ``--``), or ``None`` once said why it cannot run."""
    from mockmcp.record import relay

    cmd = list(words)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    try:
        relay.check_command(cmd)
    except relay.CommandError as exc:
        print(f"mockmcp {prog}: {exc}", file=sys.stderr)
        return None
    return cmd


__all__ = ["attach_observers", "cannot_write", "verifying", "finished", "load_scenario", "new_auth", "new_control", "new_engine", "open_log", "server_command"]
