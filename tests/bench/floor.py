"""The floor: the least a trio NDJSON server can do, to measure mockmcp against.

Reads newline-delimited JSON from stdin and writes one fixed result per request
line, echoing only the id (no validation, no scenario). Its spawn time, throughput
and round trip are the cost of the required stack (Python + trio) itself; the
benchmarks report mockmcp's figures as ratios to this program's, measured in the
same run on the same machine.
"""

import json
import os

import trio

RESULT = b'"result":{"resultType":"complete","content":[{"type":"text","text":"hello"}]}}\n'


async def main() -> None:
    stdin = trio.lowlevel.FdStream(os.dup(0))
    stdout = trio.lowlevel.FdStream(os.dup(1))
    buf = b""
    loads = json.loads
    while True:
        data = await stdin.receive_some(65536)
        if not data:
            break
        buf += data
        *lines, buf = buf.split(b"\n")
        out = []
        for line in lines:
            if line.strip():
                rid = loads(line).get("id")
                out.append(b'{"jsonrpc":"2.0","id":%s,%s' % (json.dumps(rid).encode(), RESULT))
        if out:
            await stdout.send_all(b"".join(out))


trio.run(main)
