"""``mockmcp journal FILE --html OUT``: the exchange as one self-contained HTML timeline.

A transcript is fine for a few lines; a protocol exchange with two mock
processes, retried ``input_required`` rounds, a scripted crash and findings is
easier to follow as a picture. The page is a sequence diagram across the
page's width: a lifeline for the client and one per mock process (the
journal's ``pid``) that starts at the process's first record and ends where
it exited (with its status), one arrow per message in time order with its
label beside it (progress notifications with their values and messages),
requests paired with their responses (click one to highlight both), the
rounds of one ``input_required`` request grouped under one colour, and every
line expandable to its JSON (``<details>``). The header counts what the
client did wrong (findings, failed expectations) apart from what the
scenario made the mock do on purpose (a crash, a hang: ``timeline_layout``).

The page is one file with inline CSS and a few lines of inline JS: no network,
no CDN, so it opens from a CI artefact or a bug report as it is. Journal
content is attacker-controlled (it is whatever a client sent), so every piece
of it reaches the page through ``html.escape`` and nothing from the journal is
ever placed inside the ``<script>`` or ``<style>`` element.
"""

from __future__ import annotations

import html
import json
import os
import sys
from typing import Any

from mockmcp.verify.journal import describe_message, load_for_command, printable, torn_note
from mockmcp.verify.timeline_layout import Fault, Lane, fault_summary, faults_of, lanes_of, lifelines_at, links_of, time_of
from mockmcp.verify.timeline_style import CSS, JS, lifeline_css

JSON_LIMIT = 20_000  # characters of one message's JSON shown in the page (a 4 MiB line would drown it)
FIRST_LANE = 4  # grid column of the first mock lane (1: time, 2: client, 3: labels)


def write_timeline(journal: str | os.PathLike[str], out: str | os.PathLike[str]) -> int:
    """The CLI entry: 0 when the page is written, 1 for a file that is not a journal, 2 if unreadable
    (or if ``out`` is the journal itself: the page would have taken the journal's place)."""
    try:
        same = os.path.samefile(journal, out)
    except OSError:  # (no page there yet, or no journal: said below)
        same = False
    if same:
        print(f"mockmcp journal: --html {os.fspath(out)} is the journal itself; name another file", file=sys.stderr)
        return 2
    loaded = load_for_command(journal)
    if isinstance(loaded, int):
        return loaded
    records, torn = loaded
    page = render(records, title=os.path.basename(os.fspath(journal)), torn=torn)
    try:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(page)
    except OSError as exc:
        print(f"mockmcp journal: cannot write {os.fspath(out)}: {exc}", file=sys.stderr)
        return 2
    lanes = len({r.get("pid") for r in records})
    print(f"wrote {os.fspath(out)}: {len(records)} records, {lanes} mock process{'es' if lanes != 1 else ''}")
    return 0


def render(records: list[dict[str, Any]], *, title: str = "journal", torn: int = 0) -> str:
    """The whole page as a string (pure: the caller writes it)."""
    ordered = sorted(records, key=lambda r: time_of(r, 0.0))  # stable: one process's records keep their order
    lanes = lanes_of(ordered)
    faults = faults_of(ordered)
    rows = _Rows(ordered, lanes, faults)
    body = [rows.row(i, r) for i, r in enumerate(ordered)]
    n = len(lanes)
    findings = sum(1 for r in ordered if r.get("dir") == "finding")
    failed = sum(1 for r in ordered if r.get("dir") == "verdict")
    counts = f"<span class=\"findings{' some' if findings or failed else ''}\">{findings} client finding{'s' if findings != 1 else ''}"
    if failed:
        counts += f", {failed} failed expectation{'s' if failed != 1 else ''}"
    parts = [
        "<!doctype html>\n<html lang=en>\n<head>\n<meta charset=utf-8>\n<meta name=viewport content=\"width=device-width\">\n",
        f"<title>mockmcp timeline: {_e(title)}</title>\n<style>{CSS}{lifeline_css(rows.sets, n)}</style>\n</head>\n<body>\n",
        f"<header><h1>mockmcp timeline <small>{_e(title)}</small></h1>\n",
        f"<p class=summary>{len(ordered)} records, {rows.messages} messages, {n} mock process{'es' if n != 1 else ''}. "
        "Click an arrow to pair a request with its response; open a line for its JSON.</p>\n",
        f"<p class=counts>{counts}</span> \u00b7 <span class=faults>{_e(fault_summary(faults))}</span></p>\n",
        _legend(lanes),
        _problems(rows.problems, torn),
        _faults(faults),
        "</header>\n",
        f'<div id=timeline class=timeline style="--lanes:{n}">\n',
        _header(lanes),
        *body,
        "</div>\n",
        f"<script>{JS}</script>\n</body>\n</html>\n",
    ]
    return "".join(parts)


def _header(lanes: dict[Any, Lane]) -> str:
    cells = ['<div class=lanehead style="grid-column:2">client</div>']
    for lane in lanes.values():
        name = f"<span>{_e(lane.name)}</span>" if lane.name else ""
        if lane.exit_row is not None:
            name += f'<span class=ended>exited {_e(str(lane.exit_status))}</span>'
        cells.append(f'<div class="lanehead mock" id="lane-{_e(str(lane.pid))}" style="grid-column:{FIRST_LANE + lane.index}">'
                     f"mock {_e(str(lane.pid))}{name}</div>")
    return f"<div class=row id=lanes><span class=t>time</span>{''.join(cells)}</div>\n"


def _legend(lanes: dict[Any, Lane]) -> str:
    items = [f"<li><b>mock {_e(str(lane.pid))}</b>: {_e(lane.scenario)}</li>" for lane in lanes.values() if lane.scenario]
    return f"<ul class=legend>{''.join(items)}</ul>\n" if items else ""


def _problems(problems: list[tuple[str, str]], torn: int) -> str:
    items = [f'<li><a href="#{anchor}">{_e(text)}</a></li>' for anchor, text in problems]
    if torn:
        items.append(f"<li>{_e(torn_note(torn))}</li>")
    return f"<ul class=problems>{''.join(items)}</ul>\n" if items else ""


def _faults(faults: list[Fault]) -> str:
    items = [f'<li><a href="#m{f.row}">{_e(f.kind)}: {_e(f.text)}</a></li>' for f in faults]
    return f"<ul class=faultlist>{''.join(items)}</ul>\n" if items else ""


class _Rows:
    """One row of HTML per record, each naming the set of lifelines it draws."""

    def __init__(self, records: list[dict[str, Any]], lanes: dict[Any, Lane], faults: list[Fault]) -> None:
        self.lanes = lanes
        self.order = list(lanes.values())
        self.count = len(records)
        self.t0 = time_of(records[0], 0.0) if records else 0.0
        self.links = links_of(records)
        self.faults = {f.row: f for f in faults}
        self.messages = 0
        self.problems: list[tuple[str, str]] = []
        self.sets: dict[tuple[tuple[int, str], ...], str] = {}

    def row(self, index: int, r: dict[str, Any]) -> str:
        anchor = f"m{index}"
        stamp = _stamp(time_of(r, self.t0) - self.t0)
        lane = self.lanes[r.get("pid")]
        drawn = lifelines_at(index, self.order, self.count)
        lines = self.sets.setdefault(drawn, f"L{len(self.sets)}")
        match r.get("dir"):
            case "in" | "out":
                return self._message(index, stamp, lane, lines, r)
            case "finding":
                f = r["finding"] if isinstance(r.get("finding"), dict) else {}
                text = f"{str(f.get('level', 'error')).upper()} {f.get('check')}: {f.get('text')}"
                self.problems.append((anchor, text))
                return self._note(anchor, stamp, lines, "finding", text, f.get("spec"), r)
            case "verdict":
                v = r["verdict"] if isinstance(r.get("verdict"), dict) else {}
                text = f"EXPECTATION FAILED {v.get('expectation')}: {v.get('request')} {v.get('wanted')}: {v.get('why') or 'seen ' + str(v.get('count'))}"
                self.problems.append((anchor, text))
                return self._note(anchor, stamp, lines, "finding verdict", text, None, r)
            case "start":
                text = f"mock {r.get('pid')} started: {r.get('scenario') or 'mockmcp run'}"
                return self._note(anchor, stamp, lines, "event start", text, None, r, _mark("start", lane))
            case _:
                fault = self.faults.get(index)
                if fault is not None:
                    kind = "exit" if r.get("kind") == "exit" else "event"
                    text = fault.text + (" (crash)" if fault.kind == "crash" else "")
                    return self._note(anchor, stamp, lines, f"event fault {kind}", text, None, r, _mark(kind, lane))
                info = {k: v for k, v in r.items() if k not in ("t", "pid", "dir", "kind")}
                text = f"{r.get('kind') or r.get('dir')} {_compact(info)}"
                return self._note(anchor, stamp, lines, "event", text, None, r, _mark("event", lane))

    def _message(self, index: int, stamp: str, lane: Lane, lines: str, r: dict[str, Any]) -> str:
        self.messages += 1
        msg = r.get("message")
        classes = ["msg", r["dir"]]
        extra = ""
        if isinstance(msg, dict):
            label = _label(msg)
            classes.append(_kind(msg))
            if "error" in msg:
                classes.append("error")
        else:
            classes.append("bad")
            label = f"{'unparsed line' if r['dir'] == 'in' else 'raw bytes (fault)'}: {_clip(str(r.get('raw', r.get('oversized', ''))))}"
            if r.get("error"):
                label += f"  [{r['error']}]"
        attrs = ""
        link = self.links.get(index)
        if link is not None:
            if link.pair is not None:
                attrs += f" data-pair={link.pair}"
            if link.took_ms is not None:
                extra += f' <a class=pairlink href="#{link.pair}">answer after {link.took_ms:.1f} ms</a>'
            if link.group is not None:
                attrs += f' data-group=g{link.group} style="--g:{40 + (link.group * 67) % 260}"'
                extra += f" <span class=round>round {link.round}</span>"
        if r.get("rule"):
            extra += f" <span class=rule>rule {_e(str(r['rule']))}</span>"
        fault = self.faults.get(index)
        if fault is not None:
            classes.append("fault")
            extra += f" <span class=tag>{'never answered: hang' if fault.kind == 'hang' else _e(fault.kind)}</span>"
        end = FIRST_LANE + lane.index + 1
        return (
            f'<div class="row {" ".join(classes)} {lines}" id=m{index}{attrs}><span class=t>{stamp}</span>'
            f'<span class=line style="grid-column:2/{end}"></span>'
            f"<details class=arrow><summary>{_e(label)}{extra}</summary><pre>{_e(_json(r))}</pre></details></div>\n"
        )

    def _note(self, anchor: str, stamp: str, lines: str, classes: str, text: str, spec: Any, r: dict[str, Any], mark: str = "") -> str:
        """A record that is not a message: a box in the labels column, and a mark on its lane's lifeline."""
        link = f" <span class=spec>{_e(str(spec))}</span>" if spec else ""
        return (
            f'<div class="row note {classes} {lines}" id={anchor}><span class=t>{stamp}</span>{mark}'
            f"<details class=box><summary>{_e(text)}{link}</summary>"
            f"<pre>{_e(_json(r))}</pre></details></div>\n"
        )


def _mark(kind: str, lane: Lane) -> str:
    return f'<span class="mark {kind}" style="grid-column:{FIRST_LANE + lane.index}"></span>'


def _label(msg: dict[str, Any]) -> str:
    """The one-line description, with what a notification is about: a progress's values and
    message (``1/2 step 1 of 2``), a log message's level and text."""
    text = describe_message(msg)
    params = msg.get("params")
    if "id" in msg or not isinstance(params, dict):
        return text
    if msg.get("method") == "notifications/progress":
        total = params.get("total")
        text += f" {_number(params.get('progress'))}" + (f"/{_number(total)}" if total is not None else "")
        if isinstance(params.get("message"), str):
            text += f" {_clip(params['message'], 100)}"
    elif msg.get("method") == "notifications/message":
        data = params.get("data")
        logger = f" {params['logger']}" if isinstance(params.get("logger"), str) else ""
        text += f" {params.get('level')}{logger}: {_clip(data if isinstance(data, str) else _compact(data), 100)}"
    return text


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _stamp(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.3f} s"


def _kind(msg: dict[str, Any]) -> str:
    if "method" in msg:
        return "request" if "id" in msg else "notification"
    return "response"


def _json(record: dict[str, Any]) -> str:
    text = json.dumps(record, indent=2, ensure_ascii=False, default=repr)
    if len(text) > JSON_LIMIT:
        return f"{text[:JSON_LIMIT]}\n... ({len(text) - JSON_LIMIT} more characters in the journal)"
    return text


def _compact(value: Any) -> str:
    return _clip(json.dumps(value, ensure_ascii=False, default=repr))


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _e(text: str) -> str:
    """HTML-escaped and ``printable`` (a lone surrogate a client sent: the page could not be written)."""
    return html.escape(printable(text), quote=True)
