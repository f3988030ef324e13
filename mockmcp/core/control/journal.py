"""The recent-traffic journal: the MCP lines read and written, numbered, for ``journal`` and ``waitFor``.

Each record keeps the line's own JSON text, so a ``journal`` answer is built by splicing the
lines in rather than decoding and encoding each message again: that is most of what a
``journal`` costs, and a test may ask 1,000 times a second beside the MCP stream
(``tests/core/test_control_core.py`` compares the answer with the decoded records). The
oldest records go first past ``JOURNAL_RECORDS``. Sans-I/O.
"""

from __future__ import annotations

import collections
import itertools
from typing import Any, Iterator

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.wire.framing import Oversized

JOURNAL_RECORDS = 10_000  # recent MCP messages kept for `journal` and `waitFor` (the oldest go first)
MAX_JOURNAL_PAGE = 1_000  # records one `journal` answer carries at most
MAX_JOURNAL_CHARS = 16 * 1024 * 1024  # and its records' text at most (past it: the rest on the next page)

# (position, "in" | "out", a decoded message read (or what was wrong with the line) or None
# for a line written, the JSON text of the line as read or written (None: not JSON))
Record = tuple[int, str, Any, bytes | None]


class Journal:
    """The numbered records of the MCP lines read (``inbound``) and written (``outbound``)."""

    __slots__ = ("records", "position")

    def __init__(self, size: int = JOURNAL_RECORDS) -> None:
        self.records: collections.deque[Record] = collections.deque(maxlen=size)
        self.position = 0  # the position the next record gets

    def inbound(self, line: bytes | Oversized, msg: jsonrpc.Message | None, exc: errors.ClientError | None) -> int:
        """Record a line read (decoded, or what was wrong with it); its position."""
        pos = self.position
        self.position = pos + 1
        raw: bytes | None = None
        if msg is not None:
            record = msg.message
            raw = line if isinstance(line, bytes) else None  # (its JSON text, for the journal)
        elif isinstance(line, Oversized):
            record = {"oversized": line.length}
        else:
            record = {"raw": line.rstrip(b"\r\n").decode("utf-8", "replace"), "error": exc.message if exc else None}
        self.records.append((pos, "in", record, raw))
        return pos

    def outbound(self, data: bytes) -> None:
        """Record a line written to stdout (decoded only when read)."""
        pos = self.position
        self.position = pos + 1
        self.records.append((pos, "out", None, data))

    def since(self, since: int) -> Iterator[Record]:
        """The records kept from position ``since`` on, oldest first."""
        records = self.records
        if not records or since >= self.position:
            return iter(())
        return itertools.islice(records, max(0, since - records[0][0]), None)

    def requests_since(self, since: int) -> Iterator[tuple[int, dict[str, Any]]]:
        """The requests and notifications read from ``since`` on (what a wait compares)."""
        for pos, direction, record, _ in self.since(since):
            if direction == "in" and "method" in record:
                yield pos, record

    def page(self, rid: Any, since: int, limit: int) -> bytes:
        """The ``journal`` answer to request ``rid``: the records from ``since`` (at most ``limit``,
        and their text at most ``MAX_JOURNAL_CHARS``), as one line built from the lines kept."""
        oldest = self.records[0][0] if self.records else self.position
        parts: list[bytes] = []
        last = -1
        size = 0
        for rec in self.since(since):
            if len(parts) >= limit or size >= MAX_JOURNAL_CHARS:
                break  # (one record at least: a line is at most 4 MiB)
            text = record_text(rec)
            parts.append(text)
            size += len(text)
            last = rec[0]
        nxt = last + 1 if parts else max(since, oldest)
        head = b'{"jsonrpc":"2.0","id":%b,"result":{"records":[' % jsonrpc.encode_text(rid).encode("utf-8", "surrogatepass")
        tail = b'],"next":%d,"dropped":%d}}\n' % (nxt, max(0, oldest - since))
        return head + b",".join(parts) + tail


def record_text(rec: Record) -> bytes:
    """One journal record as JSON text (UTF-8): ``{position, dir, message}``, the message spliced
    in as the line's own JSON text (a line read that decoded, or one the shell wrote: the mock's
    own encoder's), or ``{position, dir, raw, error}`` / ``{..., oversized}`` for a line that was
    not. Built as bytes in one formatting step (the lines are bytes, and so is the answer); text
    that is not ASCII is passed through UTF-8 decoding with replacement, so it is valid UTF-8."""
    pos, direction, record, raw = rec
    if raw is not None:
        message = raw.strip(b" \t\r\n")
        if not message.isascii():
            message = message.decode("utf-8", "replace").encode("utf-8")
        return b'{"position":%d,"dir":"%b","message":%b}' % (pos, _DIRECTIONS[direction], message)
    return jsonrpc.encode_text({"position": pos, "dir": direction, **record}).encode("utf-8", "surrogatepass")


_DIRECTIONS = {"in": b"in", "out": b"out"}
