"""Authorization over HTTP (``mockmcp run auth --http 0``) against the same scenario without ``auth``.

- sequential: ``tools/call`` of ``echo`` round trips on one kept-alive connection (bench_http's
  raw socket client), each carrying ``Authorization: Bearer`` with a token the mock issued,
  against the same scenario with its ``auth`` section taken out; both servers run at once and
  short rounds of the two alternate, best round of each: requests per second; target >= 0.9x
  the unprotected mock.
- flow: what a client does the first time, on one kept-alive connection: the ``401``, the
  Protected Resource Metadata, the authorization server metadata, dynamic registration, the
  authorization request (PKCE S256, state, resource; the ``302`` read, not followed), the token
  request, and the first ``tools/call`` with the token: the median of FLOWS flows against one
  process (after a few unmeasured); target < 50 ms.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import yaml

from _common import META, PY, ROOT, median, scenario_file
from bench_http import Conn, HttpServer

BATCH = 300  # requests per round
ROUNDS = 40  # of each, alternating
WARM = 200
FLOWS = 40
WARM_FLOWS = 5
REDIRECT = "http://127.0.0.1:47200/callback"


def unprotected() -> str:
    """The bundled ``auth`` scenario with its ``auth`` section taken out (same tools, same replies)."""
    doc = yaml.safe_load((ROOT / "scenarios" / "auth.yaml").read_text())
    del doc["auth"]
    return scenario_file("auth-unprotected.yaml", yaml.safe_dump(doc, sort_keys=False))


def mcp(rid: int, method: str, params: dict[str, Any], token: str | None, name: str | None = None) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": META}},
                      separators=(",", ":")).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
            f"Mcp-Method: {method}\r\n" + (f"Mcp-Name: {name}\r\n" if name else "") +
            (f"Authorization: Bearer {token}\r\n" if token else "") + f"Content-Length: {len(body)}\r\n\r\n")
    return head.encode() + body


def echo(rid: int, token: str | None) -> bytes:
    return mcp(rid, "tools/call", {"name": "echo", "arguments": {"text": f"hello {rid}"}}, token, "echo")


def get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n".encode()


def post(path: str, ctype: str, body: bytes) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\nAccept: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


class Client(Conn):
    """bench_http's connection, also reading each answer's status and headers (the flow needs them),
    and connecting again after an answer that closes the connection (the 401 refuses a request by
    its head, before its body is read), as an HTTP client library does."""

    def exchange(self, data: bytes) -> tuple[int, dict[str, str], bytes]:
        self.s.sendall(data)
        while b"\r\n\r\n" not in self.buf:
            self._more()
        head = self.buf.split(b"\r\n\r\n", 1)[0].decode("latin-1")
        status_line, *lines = head.split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
        body = self._body()
        if headers.get("connection", "").lower() == "close":  # (a refusal before the body: a new connection)
            addr = self.s.getpeername()
            self.close()
            Conn.__init__(self, addr)
        return int(status_line.split()[1]), headers, body

    def _body(self) -> bytes:
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        i = head.lower().find(b"content-length:")
        length = int(head[i + 15:].split(b"\r\n", 1)[0])
        while len(rest) < length:
            self.buf = rest
            self._more()
            rest = self.buf
        self.buf = rest[length:]
        return rest[:length]


def flow(addr: tuple[str, int], rid: int) -> tuple[float, str]:
    """One first-time client's whole flow; (seconds, the access token)."""
    t = time.perf_counter()
    c = Client(addr)
    status, headers, _ = c.exchange(mcp(rid, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}, None, "echo"))
    assert status == 401, status
    challenge = headers["www-authenticate"]
    prm_url = challenge.split('resource_metadata="', 1)[1].split('"', 1)[0]
    status, _, body = c.exchange(get(urlsplit(prm_url).path))
    assert status == 200, status
    issuer = json.loads(body)["authorization_servers"][0]
    status, _, body = c.exchange(get("/.well-known/oauth-authorization-server" + urlsplit(issuer).path.rstrip("/")))
    assert status == 200, status
    meta = json.loads(body)
    registration = {"client_name": "bench", "redirect_uris": [REDIRECT], "application_type": "native",
                    "grant_types": ["authorization_code", "refresh_token"], "token_endpoint_auth_method": "none"}
    status, _, body = c.exchange(post(urlsplit(meta["registration_endpoint"]).path, "application/json",
                                      json.dumps(registration).encode()))
    assert status == 201, (status, body)
    client_id = json.loads(body)["client_id"]
    verifier = secrets.token_urlsafe(48)
    code_challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    state = secrets.token_urlsafe(16)
    mcp_url = "http://127.0.0.1/mcp"  # the resource: the Host the requests name, and /mcp
    query = urlencode({"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": state,
                       "code_challenge": code_challenge, "code_challenge_method": "S256", "scope": "mcp:read",
                       "resource": mcp_url})
    status, headers, _ = c.exchange(get(urlsplit(meta["authorization_endpoint"]).path + "?" + query))
    assert status == 302, status
    got = {k: v[0] for k, v in parse_qs(urlsplit(headers["location"]).query).items()}
    assert got["state"] == state and got["iss"] == meta["issuer"], got
    form = urlencode({"grant_type": "authorization_code", "code": got["code"], "code_verifier": verifier,
                      "redirect_uri": REDIRECT, "client_id": client_id, "resource": mcp_url}).encode()
    status, _, body = c.exchange(post(urlsplit(meta["token_endpoint"]).path, "application/x-www-form-urlencoded", form))
    assert status == 200, (status, body)
    token = json.loads(body)["access_token"]
    status, _, body = c.exchange(echo(rid, token))
    assert status == 200 and json.loads(body)["result"]["content"][0]["text"] == f"hello {rid}", (status, body)
    took = time.perf_counter() - t
    c.close()
    return took, token


def cpu_ns(pid: int) -> int:
    """The CPU time a process's main thread has run so far, in nanoseconds (/proc/PID/schedstat:
    the scheduler's own count, fine enough to time one round)."""
    with open(f"/proc/{pid}/schedstat") as fh:
        return int(fh.read().split()[0])


def sequential(plain_cmd: list[str], protected_cmd: list[str]) -> tuple[list[float], list[float]]:
    """For the server without auth and the one with (a token on every request): (the best round's
    requests per second, the median round's server CPU microseconds per request). Both servers run
    at once and their rounds alternate (which goes first alternates too), so a busy moment of the
    machine falls on both; CPU time is what the server itself spent, whatever else ran."""
    servers = [HttpServer(plain_cmd), HttpServer(protected_cmd)]
    token = flow(servers[1].addr, 0)[1]
    conns = [Conn(s.addr) for s in servers]
    msgs = [[echo(i, None) for i in range(BATCH)], [echo(i, token) for i in range(BATCH)]]
    for c, batch in zip(conns, msgs):
        for m in batch[:WARM]:
            c.ask(m)
    rates: list[list[float]] = [[], []]
    cpu: list[list[float]] = [[], []]
    for r in range(ROUNDS):
        for k in ((0, 1) if r % 2 == 0 else (1, 0)):
            pid = servers[k].proc.pid
            c0, t = cpu_ns(pid), time.perf_counter()
            for m in msgs[k]:
                conns[k].ask(m)
            rates[k].append(BATCH / (time.perf_counter() - t))
            cpu[k].append((cpu_ns(pid) - c0) / BATCH / 1000)
    for c in conns:
        c.close()
    for s in servers:
        s.close()
    return [max(rates[0]), median(cpu[0])], [max(rates[1]), median(cpu[1])]


def flows(cmd: list[str]) -> list[float]:
    server = HttpServer(cmd)
    for i in range(WARM_FLOWS):
        flow(server.addr, i)
    took = [flow(server.addr, WARM_FLOWS + i)[0] for i in range(FLOWS)]
    server.close()
    return took


def bench() -> list[dict]:
    protected = [PY, "-m", "mockmcp", "run", "auth", "--http", "0"]
    plain = [PY, "-m", "mockmcp", "run", unprotected(), "--http", "0"]
    (p_rate, p_cpu), (a_rate, a_cpu) = sequential(plain, protected)
    took = flows(protected)
    flow_ms = median(took) * 1000
    return [
        dict(name="HTTP sequential tools/call, no auth (same scenario)", value=p_rate, unit="req/s"),
        dict(name="HTTP sequential tools/call with a bearer token", value=a_rate, unit="req/s", ratio=a_rate / p_rate,
             target=">= 0.9x no auth", ok=a_rate / p_rate >= 0.9),
        dict(name="  server CPU per request, no auth (median round)", value=p_cpu, unit="us"),
        dict(name="  server CPU per request, with a bearer token", value=a_cpu, unit="us", ratio=p_cpu / a_cpu,
             target=">= 0.9x no auth", ok=p_cpu / a_cpu >= 0.9),
        dict(name=f"OAuth flow: 401 to first call (median of {FLOWS}, max {max(took) * 1000:.1f})", value=flow_ms,
             unit="ms", target="< 50 ms", ok=flow_ms < 50),
    ]
