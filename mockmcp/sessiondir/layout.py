"""A session directory's format (``mockmcp run SCENARIO --session DIR``): one session over many processes.

A client may kill and restart the mock, or spawn it twice (the TypeScript
client's discover probe), or run several at once; with the same ``DIR`` they
all share the tasks, the named state, the rule counters and the journal.

What is in ``DIR``:

- ``VERSION``: ``mockmcp session 2``. Another text (another mockmcp's format)
  is refused at start-up, and nothing in the directory is touched.
- ``session.json``: the scenario the session belongs to (another scenario is
  refused: stored tasks name their script by its place in the file).
- ``state.log``: the shared state, one line per change, appended: ``T ID JSON``
  (a task record), ``D ID JSON`` (the record of an ended task: completed, failed
  or cancelled), ``E JSON`` (named state, counters, the task serial), ``F ID``
  (a task forgotten past the bound). A process reads what others appended
  since it last looked, so no process ever rewrites what it has not read.
  When the log grows past one and a half times what it must keep (and
  ``COMPACT_MIN``), it is compacted: the ended tasks' latest lines (and the
  ``F`` lines) are appended to ``ended.log``, then the rest is written aside and
  renamed over, so a reader sees the old file or the new one (it notices the
  new one by its inode). So the log a process reads at start-up holds the
  tasks still going and the recent changes, not every task the session ever had.
- ``ended.log``: the archive of ended tasks, ``mockmcp ended 2 BASE`` then
  ``T``/``D``/``F`` lines, appended only under the lock; a later line for an
  id wins, and the log wins over it (whatever it holds was moved from an
  older log). It is read only when a request asks for a task the log does not
  know (the index of ids to offsets is built then, once, and followed as it
  grows; a record is read with one ``pread`` and parsed when asked for). When
  it grows past twice ``BASE`` (its size when last rewritten) it is rewritten
  with each id's latest line, at most ``tasks.MAX_RECORDS`` of them (the
  oldest ended tasks are forgotten), written aside and renamed over. A torn
  last line (a process killed while appending) is cut off before the next
  append: its content is still in the log, which was not yet replaced (a torn
  last line of ``state.log`` is cut off the same way: ``files.cut_torn_tail``).
- ``lock``: every input chunk is handled under ``fcntl.flock`` on it: read the
  log's new lines, handle, append the changes, unlock. So no update is lost
  whatever the number of processes.
- ``journal.jsonl``: the journal of every process (``mockmcp report DIR``
  judges the session from it). Bounded: every ``JOURNAL_CHECK`` bytes a
  process wrote, it looks (under the lock) whether the file is past
  ``JOURNAL_ROTATE`` (or ``JOURNAL_JUDGE`` of it not yet judged: then the
  verdict is carried on, so a rotation reads little); then the verdict so far is saved (``judged.json``: the
  aggregates a verdict needs and how far each file was read), the file is
  renamed ``journal.1.jsonl`` (the one before is dropped: the saved verdict
  has counted it) and a ``J N`` line in the state log tells every process
  to reopen ``journal.jsonl`` when it next reads the log (records written
  before that land in ``journal.1.jsonl``, which the next verdict reads too).
- ``judged.json``: the session's verdict so far (``verify.report``), saved at
  every process's exit, every ``JOURNAL_JUDGE`` bytes of journal and before a rotation.

Every one of these files is opened without following a symbolic link
(``O_NOFOLLOW``; files written aside are made with ``O_EXCL``), and at start-up
a link, a folder or anything else that is not a regular file at one of these
names is refused (``SessionError``: one line, exit status 2) before anything
is read or written: a link planted in the directory can never make a mock
append to, or replace, a file outside it, and a FIFO can never make it wait.

This module owns those names, the format's constants and the start-up checks: the
version marker, the owning scenario, and no link or non-regular file at any of the names.
"""

from __future__ import annotations

import json
import os
import stat

from mockmcp.scenario.filekinds import file_kind
from mockmcp.sessiondir.files import open_file, read_file, write_aside
from mockmcp.sessiondir.lock import SessionLock

MARKER = "VERSION"
MARKER_TEXT = "mockmcp session 2\n"
META = "session.json"
LOG = "state.log"
ARCHIVE = "ended.log"
ARCHIVE_HEAD = "mockmcp ended 2 "  # then BASE (its size when it was last written whole) and a newline
LOCK = "lock"
JOURNAL = "journal.jsonl"
OLDER_JOURNAL = "journal.1.jsonl"
JUDGED = "judged.json"
# Bytes of log before compaction is considered, and the archive's slack before it is rewritten
# (read as ``layout.COMPACT_MIN`` at each use, so a test can make it small).
COMPACT_MIN = 1 << 20
# Every file a session directory holds (start-up refuses any of them that is a link or not a regular file).
FILES = (MARKER, META, LOG, ARCHIVE, LOCK, JOURNAL, OLDER_JOURNAL, JUDGED)
MAX_META = 64 * 1024  # bytes of session.json read (it names a scenario)


class SessionError(Exception):
    """A session directory that cannot be used; the message says why (nothing was changed)."""


def open_directory(directory: str, scenario: str) -> SessionLock:
    """Check ``directory`` is a session of ``scenario`` (making it when empty) and open its lock.

    Refused (``SessionError``) before anything in it is written: a link or a
    non-regular file at one of its names, another mockmcp's format, another
    scenario's session, a folder that is not a session at all."""
    try:
        os.makedirs(directory, exist_ok=True)
        entries = os.listdir(directory)
    except (FileExistsError, NotADirectoryError):  # (a file where a folder must be: it or a folder above it)
        raise SessionError(f"{directory}: cannot use as a session directory: {_not_a_directory(directory)}") from None
    except OSError as exc:
        raise SessionError(f"{directory}: cannot use as a session directory: {exc.strerror}") from None
    check_files(directory)
    lock: SessionLock | None = None
    if MARKER not in entries:
        if not all(_made_by_us(name) for name in entries):
            raise SessionError(
                f"{directory}: not a mockmcp session directory (no {MARKER} file, and not empty); nothing in it was changed"
            )
        # Empty, or another process is making the session right now (processes started at
        # once): make it under the lock, or find it made, so no process sees it half made.
        lock = SessionLock(open_named(directory, LOCK, os.O_RDWR | os.O_CREAT))
        with lock.locked():
            if not os.path.exists(os.path.join(directory, MARKER)):
                _create(directory, scenario)
    _check_owner(directory, scenario)
    return lock or SessionLock(open_named(directory, LOCK, os.O_RDWR | os.O_CREAT))


def open_named(directory: str, name: str, flags: int, what: str = "open") -> int:
    """``open_file`` of the session file ``name``; a failure is a ``SessionError`` naming it."""
    path = os.path.join(directory, name)
    try:
        return open_file(path, flags)
    except OSError as exc:
        raise SessionError(f"{path}: cannot {what}: {exc.strerror}") from None


def check_files(directory: str) -> None:
    """Refuse a link, a folder or anything else that is not a regular file at a session file's
    name, before anything is opened (a FIFO would block a read; a link would be written through)."""
    for name in FILES:
        path = os.path.join(directory, name)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise SessionError(f"{path}: cannot look at: {exc.strerror}") from None
        if stat.S_ISLNK(st.st_mode):
            raise SessionError(
                f"{path}: is a symbolic link, and files in a session directory are never followed through links; nothing was changed"
            )
        if not stat.S_ISREG(st.st_mode):
            raise SessionError(f"{path}: is {file_kind(st.st_mode)}, not a regular file; nothing was changed")


def _check_owner(directory: str, scenario: str) -> None:
    """The marker is this format's, and ``session.json`` names ``scenario``."""
    marker_path = os.path.join(directory, MARKER)
    try:
        marker = read_file(marker_path, 200).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SessionError(f"{marker_path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    if marker != MARKER_TEXT:
        raise SessionError(
            f"{directory}: written by another mockmcp version ({marker.strip()[:60]!r}; this one reads "
            f"{MARKER_TEXT.strip()!r}); nothing in it was changed"
        )
    meta_path = os.path.join(directory, META)
    try:
        meta = json.loads(read_file(meta_path, MAX_META))
    except (OSError, ValueError, RecursionError) as exc:
        why = getattr(exc, "strerror", None) or ("nested too deeply" if isinstance(exc, RecursionError) else exc)
        raise SessionError(f"{meta_path}: unreadable or corrupt ({why}); nothing was changed") from None
    if type(meta) is not dict or meta.get("scenario") != scenario:
        owner = meta.get("scenario") if type(meta) is dict else None
        raise SessionError(f"{directory}: belongs to scenario {owner!r}, not {scenario!r}; use another directory")


def _create(directory: str, scenario: str) -> None:
    """Write ``session.json`` then ``VERSION`` (the lock is held). A ``session.json`` already
    there is a session made halfway by a process that died; anything else in it is not ours."""
    meta_path = os.path.join(directory, META)
    try:
        old = json.loads(read_file(meta_path, MAX_META))
    except FileNotFoundError:
        old = {"mockmcp": 1}
    except (OSError, ValueError, RecursionError):
        old = None
    if type(old) is not dict or old.get("mockmcp") != 1:
        raise SessionError(f"{directory}: not a mockmcp session directory (a {META} that is not one); nothing in it was changed")
    for name, text in ((META, json.dumps({"mockmcp": 1, "scenario": scenario}) + "\n"), (MARKER, MARKER_TEXT)):
        path = os.path.join(directory, name)
        try:
            if name == MARKER and os.path.lexists(path):
                continue  # another process created the session first: keep its files
            write_aside(path, text.encode("utf-8"))
        except OSError as exc:
            raise SessionError(f"{path}: cannot write: {exc.strerror}") from None


def _not_a_directory(directory: str) -> str:
    """Which of ``directory`` and the folders above it is not one, in words ("DIR is a file, not
    a directory"): the error number alone said "File exists", which reads as if nothing were wrong."""
    path = os.path.abspath(directory)
    while True:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            mode = None
        if mode is not None and not stat.S_ISDIR(mode):
            kind = "a file" if stat.S_ISREG(mode) else file_kind(mode)
            where = "it" if path == os.path.abspath(directory) else path
            return f"{where} is {kind}, not a directory; give --session a directory (it is made if missing)"
        parent = os.path.dirname(path)
        if parent == path:
            return "not a directory"
        path = parent


def _made_by_us(name: str) -> bool:
    """Is this a file a process making a session writes before ``VERSION`` (so: one being made)?"""
    return name in (LOCK, META) or (name.startswith(".") and name.endswith(".tmp"))


def scenario_ref(scenario: str) -> str:
    """How session.json names the scenario: a file's absolute path, or the bundled name."""
    return os.path.abspath(scenario) if os.path.isfile(scenario) else scenario


__all__ = ["FILES", "JOURNAL", "SessionError", "check_files", "open_directory", "open_named", "scenario_ref"]
