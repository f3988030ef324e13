"""Servers as ``python -c`` programs, for tests of what the proxy and the recorder do with a
server that breaks the protocol."""

# Answers every request, after two lines that are not JSON-RPC (one not even UTF-8).
GARBAGE_SERVER = r"""
import json, sys
for raw in sys.stdin:
    msg = json.loads(raw)
    # (all through the binary buffer: text written to sys.stdout waits in its own buffer unless
    # PYTHONUNBUFFERED is set, and would come out after the bytes)
    sys.stdout.buffer.write(b"garbage \x01 not json\n")
    sys.stdout.buffer.write(b"\xff\xfe\n")
    sys.stdout.buffer.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"resultType": "complete", "content": []}}).encode() + b"\n")
    sys.stdout.buffer.flush()
"""
