"""What the HTML timeline draws, worked out from the journal before any HTML is written.

The page (``verify.timeline``) needs, besides one row per record: the lanes
(one per mock process) and where each lifeline starts and ends, which
request pairs with which response and which ``input_required`` rounds belong
together, and the two kinds of trouble the header counts apart. A *client
finding* (a ``finding`` record) or a failed expectation (``verdict``) is
something the client did wrong. A *deliberate fault* is something the
scenario made the mock do: exit (a crash when the status is not 0), never
answer a request (a hang), write raw bytes, close its stdout, stop reading,
or one of the HTTP faults. Counting a scripted crash as the client's problem
(or not at all) would make a faults run read as a failure, or a clean one.

The journal has no record for a hang (nothing happens): a request the mock
never answered, that no fault event ended and that the client did not cancel,
is one. A subscription stream is meant to stay open, so it is none.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

NEVER_ANSWERED = frozenset({"subscriptions/listen"})  # streams that stay open by design
ENDS_A_REQUEST = {  # fault events that end a request without a response, with what the header calls them
    "httpStatus": "HTTP status",
    "httpReset": "connection reset",
    "httpEndStream": "stream ended",
    "closeStdout": "stdout closed",
}
OTHER_FAULTS = {"stopReading": "stopped reading", "httpRetry": "stream closed for a resume"}


@attrs.define
class Lane:
    """One mock process: its column, label, and the rows where its lifeline starts and ends."""

    pid: Any
    index: int  # 0 for the first process seen
    name: str  # a short name for the column head (the scenario argument), may be ""
    scenario: str = ""  # the scenario's description, from the start record
    first: int = 0  # the row of its first record
    last: int = 0  # the row of its last record
    exit_row: int | None = None  # the row of its exit event: the lifeline ends there
    exit_status: Any = None


@attrs.define
class Fault:
    """A deliberate fault: which kind (for the header), the row it is drawn on, one line about it."""

    kind: str
    row: int
    text: str


@attrs.define
class Link:
    """What one message row shares with others: its pair, its input_required group and round."""

    pair: str | None = None
    took_ms: float | None = None
    group: int | None = None
    round: int | None = None


def time_of(record: dict[str, Any], default: float) -> float:
    t = record.get("t")
    return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else default


def id_key(rid: Any) -> str:
    return json.dumps(rid, sort_keys=True, default=repr)


def lanes_of(records: list[dict[str, Any]]) -> dict[Any, Lane]:
    """pid -> its lane, in order of first appearance, with its first and last rows and its exit."""
    lanes: dict[Any, Lane] = {}
    for i, r in enumerate(records):
        pid = r.get("pid")
        lane = lanes.get(pid)
        if lane is None:
            lane = lanes[pid] = Lane(pid, len(lanes), "", first=i)
        lane.last = i
        if r.get("dir") == "start":
            if r.get("scenario"):
                lane.scenario = str(r["scenario"])
            lane.name = _scenario_argument(r.get("argv"))
        elif r.get("dir") == "event" and r.get("kind") == "exit" and lane.exit_row is None:
            lane.exit_row, lane.exit_status = i, r.get("status")
    return lanes


def _scenario_argument(argv: Any) -> str:
    """``run faults --journal j`` -> ``faults``: what the user called the scenario, for the column head."""
    if not isinstance(argv, list) or len(argv) < 2 or argv[0] not in ("run", "proxy", "record"):
        return ""
    first = argv[1]
    if not isinstance(first, str) or first.startswith("-"):
        return ""
    name = first.replace("\\", "/").rsplit("/", 1)[-1]
    return name[:-5] if name.endswith((".yaml", ".json")) else name[:-4] if name.endswith(".yml") else name


def faults_of(records: list[dict[str, Any]]) -> list[Fault]:
    """The deliberate faults, in row order (a hang sits on the row of the request it never answered)."""
    faults: list[Fault] = []
    pending: dict[tuple[Any, str], tuple[int, str]] = {}  # (pid, id) -> (row, method): requests not yet answered
    for i, r in enumerate(records):
        pid, d = r.get("pid"), r.get("dir")
        msg = r.get("message")
        if d == "in" and isinstance(msg, dict) and "method" in msg and "id" in msg:
            pending[(pid, id_key(msg["id"]))] = (i, str(msg["method"]))
        elif d == "out" and isinstance(msg, dict) and "method" not in msg and "id" in msg:
            pending.pop((pid, id_key(msg["id"])), None)
        elif d == "out" and r.get("fault"):
            faults.append(Fault("garbage", i, f"mock {pid} wrote raw bytes that are not a JSON-RPC message"))
        elif d == "event":
            kind = r.get("kind")
            ended = pending.pop((pid, id_key(r.get("id"))), None) if r.get("id") is not None else None
            if kind == "exit":
                status = r.get("status")
                what = "crash" if status != 0 else "exit"
                during = f" while answering #{json.dumps(r.get('id'))}" if r.get("id") is not None else ""
                faults.append(Fault(what, i, f"mock {pid} exited with status {status}{during}"))
            elif kind in ENDS_A_REQUEST:
                label = ENDS_A_REQUEST[str(kind)]
                if kind == "httpStatus":
                    label = f"HTTP {r.get('status')}"
                faults.append(Fault(label, i, f"mock {pid}: {label}" + (f" for #{json.dumps(r.get('id'))}" if ended else "")))
            elif kind in OTHER_FAULTS:
                faults.append(Fault(OTHER_FAULTS[str(kind)], i, f"mock {pid}: {OTHER_FAULTS[str(kind)]}"))
            # "cancelled" (and any other event) only ends the request: the client gave up on it
    for (pid, _), (row, method) in pending.items():
        if method not in NEVER_ANSWERED:
            faults.append(Fault("hang", row, f"mock {pid} never answered {_request_name(records[row])}"))
    faults.sort(key=lambda f: f.row)
    return faults


def _request_name(record: dict[str, Any]) -> str:
    msg = record["message"]
    params = msg.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return f"#{json.dumps(msg['id'])} {msg['method']}" + (f" {name}" if isinstance(name, str) else "")


def fault_summary(faults: list[Fault]) -> str:
    """``2 deliberate faults (crash, hang)``; a kind seen more than once gets its count (``hang ×3``)."""
    counts: dict[str, int] = {}
    for f in faults:
        counts[f.kind] = counts.get(f.kind, 0) + 1
    head = f"{len(faults)} deliberate fault{'s' if len(faults) != 1 else ''}"
    if not counts:
        return head
    return head + " (" + ", ".join(k if n == 1 else f"{k} \u00d7{n}" for k, n in counts.items()) + ")"


def links_of(records: list[dict[str, Any]]) -> dict[int, Link]:
    """Pair responses with requests (same process, same id) and group input_required rounds.

    A request whose answer is ``input_required`` opens a group (or continues
    the one of the ``requestState`` it carries); its retry with that state is
    the next round. Both ends of each round get the group's colour.
    """
    links: dict[int, Link] = {}
    open_requests: dict[tuple[Any, str], int] = {}
    state_group: dict[str, tuple[int, int]] = {}  # requestState -> (group, round that issued it)
    groups = 0
    for i, r in enumerate(records):
        msg = r.get("message")
        if r.get("dir") not in ("in", "out") or not isinstance(msg, dict) or "id" not in msg:
            continue
        key = (r.get("pid"), id_key(msg["id"]))
        if r["dir"] == "in" and "method" in msg:
            open_requests[key] = i
            raw = msg.get("params")
            params: dict[str, Any] = raw if isinstance(raw, dict) else {}
            state = params.get("requestState")
            if isinstance(state, str) and state in state_group:
                group, issued = state_group[state]
                links[i] = Link(group=group, round=issued + 1)
            continue
        if r["dir"] != "out" or "method" in msg or key not in open_requests:
            continue
        req = open_requests.pop(key)
        took = (time_of(r, 0.0) - time_of(records[req], 0.0)) * 1000
        request_link = links.setdefault(req, Link())
        request_link.pair = f"m{i}"
        link = links[i] = Link(pair=f"m{req}", took_ms=took, group=request_link.group, round=request_link.round)
        result = msg.get("result")
        if isinstance(result, dict) and result.get("resultType") == "input_required":
            if request_link.group is None:
                request_link.group, request_link.round = groups, 1
                link.group, link.round = groups, 1
                groups += 1
            state = result.get("requestState")
            if isinstance(state, str):
                state_group[state] = (request_link.group, request_link.round or 1)
    return links


def lifelines_at(row: int, lanes: list[Lane], rows: int) -> tuple[tuple[int, str], ...]:
    """Which lifelines a row draws, and how: ``full``, ``from`` (it starts here, from the middle
    down) or ``to`` (its process exited here: down to the middle, no further)."""
    drawn: list[tuple[int, str]] = []
    for lane in lanes:
        end = lane.exit_row if lane.exit_row is not None else rows - 1
        if row < lane.first or row > end or lane.first == lane.exit_row:
            continue
        if row == lane.first:
            drawn.append((lane.index, "from"))
        elif row == lane.exit_row:
            drawn.append((lane.index, "to"))
        else:
            drawn.append((lane.index, "full"))
    return tuple(drawn)
