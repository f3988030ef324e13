"""Run a command with its stdin and stdout recorded line by line (``tee`` for both directions).

``python interop_tee.py RECORD -- COMMAND...``: what this process receives on
stdin goes to the child, what the child writes goes to our stdout, and every
line in either direction is appended to RECORD as ``{"dir": "in"|"out",
"line": "..."}``. Tests spawn the mock through it from SDK clients, so they can
check every line the mock wrote against the schema without the mock's own
``--journal`` (an independent witness). SIGTERM is passed on to the child; EOF
on stdin closes the child's stdin.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading


def main() -> int:
    record_path, sep, *command = sys.argv[1:]
    assert sep == "--" and command, "usage: interop_tee.py RECORD -- COMMAND..."
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    lock = threading.Lock()
    record = open(record_path, "a", encoding="utf-8")

    def note(direction: str, data: bytes) -> None:
        with lock:
            record.write(json.dumps({"dir": direction, "line": data.decode("utf-8", "replace")}) + "\n")
            record.flush()

    def pump_in() -> None:
        assert child.stdin is not None
        stdin = sys.stdin.buffer
        try:
            for data in iter(stdin.readline, b""):
                note("in", data)
                child.stdin.write(data)
                child.stdin.flush()
        except BrokenPipeError:
            pass
        finally:
            try:
                child.stdin.close()
            except BrokenPipeError:
                pass

    signal.signal(signal.SIGTERM, lambda *_: child.send_signal(signal.SIGTERM))
    threading.Thread(target=pump_in, daemon=True).start()
    assert child.stdout is not None
    out = sys.stdout.buffer
    for data in iter(child.stdout.readline, b""):
        note("out", data)
        try:
            out.write(data)
            out.flush()
        except BrokenPipeError:
            pass
    status = child.wait()
    record.close()
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    os._exit(main())
