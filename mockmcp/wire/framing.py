"""Newline-delimited framing: bytes in, complete lines out.

Pure and synchronous (sans-I/O). Tolerates ``\\r\\n``, bounds the length of one
line so that a client that never sends a newline cannot grow our memory, and
reports an over-long line once so the connection can answer it and recover on
the next line.
"""

from __future__ import annotations

DEFAULT_MAX_LINE = 4 * 1024 * 1024  # 4 MiB; `mockmcp run --max-line-bytes` changes it


class Oversized:
    """Marker for a line that exceeded the limit (its bytes were dropped)."""

    __slots__ = ("length",)

    def __init__(self, length: int) -> None:
        self.length = length

    def __repr__(self) -> str:
        return f"Oversized({self.length})"


class LineFramer:
    """Split a byte stream into lines without their terminators."""

    def __init__(self, max_line: int = DEFAULT_MAX_LINE) -> None:
        self.max_line = max_line
        self._buf = bytearray()
        self._discarding = 0  # > 0 while skipping the rest of an over-long line

    def feed(self, data: bytes) -> list[bytes | Oversized]:
        out: list[bytes | Oversized] = []
        if self._discarding:
            nl = data.find(b"\n")
            if nl < 0:
                self._discarding += len(data)
                return out
            out.append(Oversized(self._discarding + nl))
            self._discarding = 0
            data = data[nl + 1 :]
        buf = self._buf
        last = data.rfind(b"\n")
        if last < 0:  # no line ends in this chunk: keep it (within the limit)
            buf += data
            if len(buf) > self.max_line:
                self._discarding = len(buf)
                buf.clear()
            return out
        head = data[:last]
        if buf:
            buf += head
            head = bytes(buf)
            buf.clear()
        raw = head.split(b"\n")
        lines: list[bytes | Oversized]
        if len(head) > self.max_line:  # only then can a line be over the limit
            limit = self.max_line
            lines = [Oversized(len(line)) if len(line) > limit else line for line in raw]
        else:
            lines = raw  # type: ignore[assignment]  # a list of bytes is read as one of bytes | Oversized
        if b"\r" in head:
            lines = [_strip_cr(line) if type(line) is bytes else line for line in lines]
        if out:
            out += lines
        else:
            out = lines
        rest = data[last + 1 :]
        if rest:
            buf += rest
            if len(buf) > self.max_line:
                self._discarding = len(buf)
                buf.clear()
        return out

    def close(self) -> list[bytes | Oversized]:
        """End of input: a final line without a newline still counts."""
        out: list[bytes | Oversized] = []
        if self._discarding:
            out.append(Oversized(self._discarding))
            self._discarding = 0
        elif self._buf:
            out.append(_strip_cr(bytes(self._buf)))
        self._buf.clear()
        return out


def _strip_cr(line: bytes) -> bytes:
    return line[:-1] if line.endswith(b"\r") else line


PASS_THROUGH_MAX = 16 * 1024 * 1024  # a longer unterminated line is passed on in pieces (never held whole)


class LineSplitter:
    """Bytes in, complete lines out (newline kept, a lone ``\\r`` does not cut); an over-long line
    is let through in pieces, since a pass-through must not lose or hold what it cannot parse.

    Only the new bytes are searched for a newline, and a line in the making grows in place: a
    long line costs its length once, not once per piece it arrives in."""

    __slots__ = ("buf", "max_line")

    def __init__(self, max_line: int = PASS_THROUGH_MAX) -> None:
        self.buf = bytearray()
        self.max_line = max_line

    def feed(self, data: bytes) -> list[bytes]:
        buf = self.buf
        end = data.rfind(b"\n")
        if end < 0:
            buf += data
            if len(buf) > self.max_line:
                piece = bytes(buf)
                buf.clear()
                return [piece]
            return []
        if buf:
            buf += memoryview(data)[:end]
            head = bytes(buf)
            buf.clear()
        else:
            head = data[:end]
        lines = [part + b"\n" for part in head.split(b"\n")]
        rest = data[end + 1 :]
        if len(rest) > self.max_line:
            lines.append(rest)
        else:
            buf += rest
        return lines

    def close(self) -> list[bytes]:
        rest = bytes(self.buf)
        self.buf.clear()
        return [rest] if rest else []
