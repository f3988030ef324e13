"""``mockmcp journal FILE --html OUT``: the exchange as one self-contained HTML timeline.

A transcript is fine for a few lines; a protocol exchange with two mock
processes, retried ``input_required`` rounds and findings is easier to follow
as a picture. The page has one lane for the client and one per mock process
(the journal's ``pid``), one arrow per message in time order, requests paired
with their responses (click one to highlight both), the rounds of one
``input_required`` request grouped under one colour, findings and failed
expectations highlighted and listed at the top, and every message expandable
to its JSON (``<details>``).

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

import attrs

from mockmcp.verify.journal import describe_message, load_for_command, torn_note

JSON_LIMIT = 20_000  # characters of one message's JSON shown in the page (a 4 MiB line would drown it)
CLIENT_COLUMN = 2  # grid column of the client lane (column 1 holds the time)


def write_timeline(journal: str | os.PathLike[str], out: str | os.PathLike[str]) -> int:
    """The CLI entry: 0 when the page is written, 1 for a file that is not a journal, 2 if unreadable."""
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
    ordered = sorted(records, key=lambda r: _time(r, 0.0))  # stable: one process's records keep their order
    lanes = _lanes(ordered)
    rows = _Rows(ordered, lanes)
    body = [rows.row(i, r) for i, r in enumerate(ordered)]
    parts = [
        "<!doctype html>\n<html lang=en>\n<head>\n<meta charset=utf-8>\n",
        f"<title>mockmcp timeline: {_e(title)}</title>\n<style>{_CSS}{_lifelines(len(lanes))}</style>\n</head>\n<body>\n",
        f"<header><h1>mockmcp timeline <small>{_e(title)}</small></h1>\n",
        f"<p class=summary>{len(ordered)} records, {rows.messages} messages, {len(lanes)} mock process{'es' if len(lanes) != 1 else ''}, "
        f"{len(rows.problems)} problem{'s' if len(rows.problems) != 1 else ''}. Click an arrow to pair a request with its response; "
        "open a line for its JSON.</p>\n",
        _problems(rows.problems, torn),
        "</header>\n",
        f'<div id=timeline class=timeline style="--lanes:{len(lanes)}">\n',
        _header(lanes),
        *body,
        "</div>\n",
        f"<script>{_JS}</script>\n</body>\n</html>\n",
    ]
    return "".join(parts)


def _lanes(records: list[dict[str, Any]]) -> dict[Any, tuple[int, str]]:
    """pid -> (grid column, label), in order of first appearance."""
    lanes: dict[Any, tuple[int, str]] = {}
    for r in records:
        pid = r.get("pid")
        if pid not in lanes:
            lanes[pid] = (CLIENT_COLUMN + 1 + len(lanes), f"mock {pid}")
        if r.get("dir") == "start" and r.get("scenario"):
            lanes[pid] = (lanes[pid][0], f"mock {pid}: {r['scenario']}")
    return lanes


def _lifelines(lanes: int) -> str:
    """One vertical line per lane, drawn as row backgrounds (no element per lane per row)."""
    centers = ["11em"] + [f"calc(16em + {k + 0.5} * var(--lane))" for k in range(lanes)]
    images = ",".join(["linear-gradient(#c9ced6,#c9ced6)"] * len(centers))
    return f".row{{background-image:{images};background-size:1px 100%;background-position:{','.join(c + ' 0' for c in centers)}}}"


def _header(lanes: dict[Any, tuple[int, str]]) -> str:
    cells = [f'<div class=lanehead style="grid-column:{CLIENT_COLUMN}">client</div>']
    cells += [f'<div class="lanehead mock" id="lane-{_e(str(pid))}" style="grid-column:{col}">{_e(label)}</div>' for pid, (col, label) in lanes.items()]
    return f"<div class=row id=lanes><span class=t>time</span>{''.join(cells)}</div>\n"


def _problems(problems: list[tuple[str, str]], torn: int) -> str:
    items = [f'<li><a href="#{anchor}">{_e(text)}</a></li>' for anchor, text in problems]
    if torn:
        items.append(f"<li>{_e(torn_note(torn))}</li>")
    return f"<ul class=problems>{''.join(items)}</ul>\n" if items else ""


@attrs.define
class _Link:
    """What one message row shares with others: its pair, its input_required group and round."""

    pair: str | None = None
    took_ms: float | None = None
    group: int | None = None
    round: int | None = None


def _links(records: list[dict[str, Any]]) -> dict[int, _Link]:
    """First pass: pair responses with requests (same process, same id) and group input_required rounds.

    A request whose answer is ``input_required`` opens a group (or continues
    the one of the ``requestState`` it carries); its retry with that state is
    the next round. Both ends of each round get the group's colour.
    """
    links: dict[int, _Link] = {}
    open_requests: dict[tuple[Any, str], int] = {}
    state_group: dict[str, tuple[int, int]] = {}  # requestState -> (group, round that issued it)
    groups = 0
    for i, r in enumerate(records):
        msg = r.get("message")
        if r.get("dir") not in ("in", "out") or not isinstance(msg, dict) or "id" not in msg:
            continue
        key = (r.get("pid"), _key(msg["id"]))
        if r["dir"] == "in" and "method" in msg:
            open_requests[key] = i
            raw = msg.get("params")
            params: dict[str, Any] = raw if isinstance(raw, dict) else {}
            state = params.get("requestState")
            if isinstance(state, str) and state in state_group:
                group, issued = state_group[state]
                links[i] = _Link(group=group, round=issued + 1)
            continue
        if r["dir"] != "out" or "method" in msg or key not in open_requests:
            continue
        req = open_requests.pop(key)
        took = (_time(r, 0.0) - _time(records[req], 0.0)) * 1000
        request_link = links.setdefault(req, _Link())
        request_link.pair = f"m{i}"
        link = links[i] = _Link(pair=f"m{req}", took_ms=took, group=request_link.group, round=request_link.round)
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


class _Rows:
    """Second pass: one row of HTML per record."""

    def __init__(self, records: list[dict[str, Any]], lanes: dict[Any, tuple[int, str]]) -> None:
        self.lanes = lanes
        self.t0 = _time(records[0], 0.0) if records else 0.0
        self.links = _links(records)
        self.messages = 0
        self.problems: list[tuple[str, str]] = []

    def row(self, index: int, r: dict[str, Any]) -> str:
        anchor = f"m{index}"
        stamp = _stamp(_time(r, self.t0) - self.t0)
        col = self.lanes[r.get("pid")][0]
        match r.get("dir"):
            case "in" | "out":
                return self._message(index, stamp, col, r)
            case "finding":
                f = r["finding"] if isinstance(r.get("finding"), dict) else {}
                text = f"{str(f.get('level', 'error')).upper()} {f.get('check')}: {f.get('text')}"
                self.problems.append((anchor, text))
                return self._note(anchor, stamp, col, "finding", text, f.get("spec"), r)
            case "verdict":
                v = r["verdict"] if isinstance(r.get("verdict"), dict) else {}
                text = f"EXPECTATION FAILED {v.get('expectation')}: {v.get('request')} {v.get('wanted')}: {v.get('why') or 'seen ' + str(v.get('count'))}"
                self.problems.append((anchor, text))
                return self._note(anchor, stamp, col, "finding verdict", text, None, r)
            case "start":
                return self._note(anchor, stamp, col, "event start", f"started: {r.get('scenario') or 'mockmcp run'}", None, r)
            case _:
                info = {k: v for k, v in r.items() if k not in ("t", "pid", "dir", "kind")}
                return self._note(anchor, stamp, col, "event", f"{r.get('kind') or r.get('dir')} {_compact(info)}", None, r)

    def _message(self, index: int, stamp: str, col: int, r: dict[str, Any]) -> str:
        self.messages += 1
        msg = r.get("message")
        classes = ["msg", r["dir"]]
        extra = ""
        if isinstance(msg, dict):
            label = describe_message(msg)
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
        return (
            f'<div class="row {" ".join(classes)}" id=m{index}{attrs}><span class=t>{stamp}</span>'
            f'<details class=arrow style="grid-column:{CLIENT_COLUMN}/{col + 1}"><summary>{_e(label)}{extra}</summary>'
            f"<pre>{_e(_json(r))}</pre></details></div>\n"
        )

    def _note(self, anchor: str, stamp: str, col: int, classes: str, text: str, spec: Any, r: dict[str, Any]) -> str:
        """A record that is not a message: a box on its lane (findings span client to lane: they are about both)."""
        link = f" <span class=spec>{_e(str(spec))}</span>" if spec else ""
        span = f"{CLIENT_COLUMN}/{col + 1}" if "finding" in classes else f"{col}/{col + 1}"
        return (
            f'<div class="row note {classes}" id={anchor}><span class=t>{stamp}</span>'
            f'<details class=box style="grid-column:{span}"><summary>{_e(text)}{link}</summary>'
            f"<pre>{_e(_json(r))}</pre></details></div>\n"
        )


def _stamp(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.3f} s"


def _time(record: dict[str, Any], default: float) -> float:
    t = record.get("t")
    return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else default


def _kind(msg: dict[str, Any]) -> str:
    if "method" in msg:
        return "request" if "id" in msg else "notification"
    return "response"


def _key(rid: Any) -> str:
    return json.dumps(rid, sort_keys=True, default=repr)


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
    return html.escape(text, quote=True)


_CSS = """
:root{--lane:22em;--bg:#fff;--fg:#1d2330;--muted:#6b7280;--in:#0b63c5;--out:#13804a;--bad:#c0262d}
body{font:13px/1.35 system-ui,sans-serif;margin:0;color:var(--fg);background:var(--bg)}
header{padding:10px 16px;border-bottom:1px solid #d6dae1;background:#f6f7f9}
h1{font-size:17px;margin:0 0 4px}h1 small{font-weight:normal;color:var(--muted)}
.summary{margin:0;color:var(--muted)}
.problems{margin:6px 0 0;padding-left:18px;color:var(--bad)}.problems a{color:var(--bad)}
.timeline{padding:0 16px 40px;min-width:calc(16em + var(--lanes) * var(--lane))}
.row{display:grid;grid-template-columns:6em 10em repeat(var(--lanes),var(--lane));position:relative;
 content-visibility:auto;contain-intrinsic-size:auto 26px;background-repeat:no-repeat}
.row>*{grid-row:1}
.t{color:var(--muted);font-variant-numeric:tabular-nums;padding:5px 0;text-align:right;padding-right:8px}
#lanes{position:sticky;top:0;z-index:2;background:var(--bg);border-bottom:1px solid #d6dae1}
.lanehead{font-weight:600;text-align:center;padding:6px 4px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.lanehead.mock{color:var(--out)}
.arrow,.box{margin:2px 0;min-width:0}
.arrow>summary{list-style:none;cursor:pointer;position:relative;margin:0 calc(var(--lane)/2) 0 5em;padding:3px 10px 5px;
 border-bottom:2px solid currentColor;white-space:nowrap}
.arrow>summary::-webkit-details-marker{display:none}
.in .arrow>summary{color:var(--in)}
.out .arrow>summary{color:var(--out)}
.in .arrow>summary::after,.out .arrow>summary::before{content:"";position:absolute;bottom:-6px;border:5px solid transparent}
.in .arrow>summary::after{right:-2px;border-left:9px solid currentColor;border-right:0}
.out .arrow>summary::before{left:-2px;border-right:9px solid currentColor;border-left:0}
.notification .arrow>summary{border-bottom-style:dashed}
.bad .arrow>summary,.error .arrow>summary{color:var(--bad)}
.bad .arrow>summary{border-bottom-style:dotted}
.row[data-group]{box-shadow:inset 4px 0 0 hsl(var(--g) 70% 50%);background-color:hsl(var(--g) 80% 96%)}
.round{font-size:11px;background:hsl(var(--g,40) 70% 45%);color:#fff;border-radius:8px;padding:0 6px;margin-left:6px}
.rule,.pairlink,.spec{font-size:11px;color:var(--muted);margin-left:8px}
.box>summary{cursor:pointer;padding:3px 8px;border-radius:4px;background:#f0ecfa;color:#4b3a88;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.start .box>summary{background:#e9f5ee;color:var(--out);font-weight:600}
.finding .box>summary{background:#fde8e8;color:var(--bad);font-weight:600;border-left:4px solid var(--bad)}
pre{margin:4px 0 8px 5em;padding:8px;background:#f6f7f9;border:1px solid #e1e4e8;border-radius:4px;overflow:auto;max-height:24em;
 white-space:pre-wrap;word-break:break-all;color:var(--fg);font-size:12px}
.hl{outline:2px solid #f59e0b;outline-offset:-2px;background-color:#fff7e0}
:target{outline:2px solid var(--bad);outline-offset:-2px}
"""

_JS = """
(function(){
  var t=document.getElementById('timeline'),lit=[];
  t.addEventListener('click',function(ev){
    var row=ev.target.closest('.row');if(!row)return;
    lit.forEach(function(e){e.classList.remove('hl')});lit=[row];
    var p=row.getAttribute('data-pair');if(p){var o=document.getElementById(p);if(o)lit.push(o)}
    var g=row.getAttribute('data-group');if(g){lit=lit.concat([].slice.call(t.querySelectorAll('[data-group="'+g+'"]')))}
    lit.forEach(function(e){e.classList.add('hl')});
  });
})();
"""
