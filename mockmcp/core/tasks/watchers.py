"""The listen streams that watch tasks, and the ``notifications/tasks`` each is owed.

A listen request with ``taskIds`` watches those tasks: each stream is sent a task's full state
whenever it changes to one the stream has not seen (``seen_key``). Notifications go out with
a request's own answer (``notifications``), when the control channel asks (``announce``), and
when a stream wakes (``notify``: the one place they are made outside a request's answer).
Sans-I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator

from mockmcp.core.actions import Action, Send, WaitTasks
from mockmcp.core.tasks.records import TaskRecord, seen_key
from mockmcp.core.tasks.script import TaskScript
from mockmcp.core.tasks.shapes import TaskShapes

if TYPE_CHECKING:  # (aliases for annotations only: a spawn does not pay for building them)
    Live = Callable[[Any], bool]  # is this subscription (a listen stream) still open?
    Find = Callable[[str], TaskRecord | None]  # a task id -> its record (None: unknown, forgotten or corrupt)


class TaskWatchers:
    """Which stream watches which task, and the state it last saw.

    ``peek`` finds a record as it is; ``current`` finds it brought up to date (its clock,
    and what the session store read from other processes) and saved if that moved it."""

    def __init__(self, script: TaskScript, shapes: TaskShapes, peek: Find, current: Find) -> None:
        self.script = script
        self.shapes = shapes
        self.peek = peek
        self.current = current
        # task id -> {subscription id: the state last sent (seen_key)}: the streams listening for it
        self.watchers: dict[str, dict[Any, tuple[Any, ...] | None]] = {}

    def watch(self, subscription_id: Any, task_ids: list[str]) -> None:
        for tid in task_ids:
            rec = self.peek(tid)
            self.watchers.setdefault(tid, {})[subscription_id] = None if rec is None else seen_key(rec)

    def unwatch(self, subscription_id: Any) -> None:
        for tid in list(self.watchers):
            subs = self.watchers[tid]
            subs.pop(subscription_id, None)
            if not subs:
                del self.watchers[tid]

    def notifications(self, rec: TaskRecord, live: Live) -> list[Send]:
        """``notifications/tasks`` for every stream watching ``rec`` that has not seen its state."""
        subs = self.watchers.get(rec.id)
        if not subs:
            return []
        return self._owed(rec, subs, live, None)

    def announce(self, rec: TaskRecord, live: Live) -> list[Send]:
        """``notifications/tasks`` with ``rec``'s state to every live stream watching it, whether or not
        it has seen this version (the control channel's ``emit``: a repeat is what was asked for)."""
        subs = self.watchers.get(rec.id)
        if subs:
            for sid in subs:
                subs[sid] = None  # never a state: every stream is sent the state once more
        return self.notifications(rec, live)

    def mark_seen(self, rec: TaskRecord) -> None:
        """Every stream watching ``rec`` counts its state as seen (the control channel changed it
        with ``notify: false``: the streams are not told of this version, now or later)."""
        subs = self.watchers.get(rec.id, {})
        for sid in subs:
            subs[sid] = seen_key(rec)

    def notify(self, live: Live, subscription_id: Any = None) -> list[Send]:
        """``notifications/tasks`` for every watched task whose state a stream has not seen yet.

        Each watched task is brought up to date first, then every live stream
        watching it (or only ``subscription_id``'s) that last saw another state
        gets the full state. A stream's rest calls it when it wakes; so can
        anything else that changed tasks behind the streams' back (the control
        channel), writing what it returns."""
        out: list[Send] = []
        for tid in list(self.watchers):
            subs = self.watchers.get(tid)
            if not subs or (subscription_id is not None and subscription_id not in subs):
                continue
            rec = self.current(tid)
            if rec is None:
                continue  # forgotten (past the bound) by another process, or corrupt: nothing to say
            out += self._owed(rec, subs, live, subscription_id)
            if not subs:
                del self.watchers[tid]
        return out

    def _owed(self, rec: TaskRecord, subs: dict[Any, tuple[Any, ...] | None], live: Live, only: Any) -> list[Send]:
        """The notifications of ``rec``'s state to the streams in ``subs`` (or only ``only``) that have
        not seen it, each marked as having seen it; streams no longer open are dropped."""
        out = []
        key = seen_key(rec)
        for sid, seen in list(subs.items()):
            if only is not None and sid != only:
                continue
            if not live(sid):
                del subs[sid]
            elif seen != key:
                subs[sid] = key
                out.append(self.shapes.notification(rec, sid))
        return out

    def stream(self, subscription_id: Any, task_ids: list[str], live: Live) -> Iterator[Action | None]:
        """The rest of a listen stream that watches tasks: a notification whenever one changes.

        It waits (``WaitTasks``) until the next moment time alone changes a
        watched task, or until the shell says tasks changed (a request, or the
        session store reading another process's change), then sends what
        changed (``notify``)."""
        try:
            while live(subscription_id):
                yield from self.notify(live, subscription_id)
                deadlines = []
                for tid in task_ids:
                    rec = self.peek(tid)
                    due = None if rec is None else self.script.next_deadline(rec)
                    if due is not None:
                        deadlines.append(due)
                wait = None if not deadlines else max(0.0, min(deadlines) - self.script.clock())
                yield WaitTasks(wait)
        finally:
            self.unwatch(subscription_id)
