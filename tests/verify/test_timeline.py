"""`mockmcp journal FILE --html OUT`: one self-contained page, escaped, paired, grouped, fast."""

from __future__ import annotations

import html.parser
import json
import re
import resource
import time
from pathlib import Path
from typing import Any

from support.messages import line, request

from support.process import run_mock

from mockmcp.verify.journal import JournalWriter
from mockmcp.verify.timeline import render
from mockmcp.verify.timeline_layout import lanes_of, lifelines_at

EVIL = '</script><img src=x onerror=alert(1)><script>alert(2)</script>'


class Page(html.parser.HTMLParser):
    """The page's elements as a browser's parser sees them (tags, ids, classes, script text)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)

    def rows(self, cls: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == "div" and cls in (a.get("class") or "").split()]


def rec(t: float, d: str, pid: int = 1, **fields: Any) -> dict[str, Any]:
    return {"t": t, "pid": pid, "dir": d, **fields}


def test_cli_writes_one_self_contained_page(tmp_path: Path) -> None:
    journal, out = tmp_path / "j.jsonl", tmp_path / "t.html"
    sent = [request(1, "tools/list"), request(2, "tools/call", {"name": "echo", "arguments": {"text": EVIL}})]
    assert run_mock("run", "default", "--journal", str(journal), input=b"".join(map(line, sent))).returncode == 0
    proc = run_mock("journal", str(journal), "--html", str(out))
    assert proc.returncode == 0 and str(out) in proc.stdout.decode()
    text = out.read_text()
    assert not re.search(r"(src|href)=[\"']?(https?:)?//", text)  # nothing fetched from the network
    assert "<link" not in text and "@import" not in text
    page = Page(text)
    assert [t for t, _ in page.tags].count("script") == 1 and [t for t, _ in page.tags].count("img") == 0
    assert "alert" not in "".join(page.scripts)
    assert len(page.rows("msg")) == 4  # two requests, two responses


def test_hostile_content_is_escaped_everywhere() -> None:
    records = [
        rec(1.0, "start", scenario=EVIL),
        rec(1.1, "in", message={"jsonrpc": "2.0", "id": EVIL, "method": EVIL, "params": {"name": EVIL}}),
        rec(1.2, "out", message={"jsonrpc": "2.0", "id": EVIL, "result": {"resultType": EVIL}}, rule=EVIL),
        rec(1.3, "in", raw=EVIL, error=EVIL),
        rec(1.4, "finding", finding={"check": EVIL, "level": "error", "text": EVIL, "spec": EVIL}),
        rec(1.5, "event", kind=EVIL, id=EVIL),
        rec(1.6, "verdict", verdict={"expectation": EVIL, "request": EVIL, "wanted": EVIL, "count": 0}),
        {"t": 1.7, "pid": EVIL, "dir": "in", "message": {"jsonrpc": "2.0", "method": "x"}},
    ]
    page = Page(render(records, title=EVIL))
    assert not [t for t, _ in page.tags if t == "img"]
    assert [t for t, _ in page.tags].count("script") == 1 and "alert" not in "".join(page.scripts)


def test_lanes_pairs_rounds_and_problems() -> None:
    ir = {"resultType": "input_required", "inputRequests": {"q": {"method": "roots/list"}}, "requestState": "S1"}
    records = [
        rec(0.0, "start", scenario="mrtr"),
        rec(0.1, "in", message={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "a"}}),
        rec(0.2, "out", message={"jsonrpc": "2.0", "id": 1, "result": ir}),
        rec(0.3, "in", message={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "a", "requestState": "S1"}}),
        rec(0.4, "out", message={"jsonrpc": "2.0", "id": 2, "result": {"resultType": "complete", "content": []}}),
        rec(0.5, "in", message={"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "b"}}),
        rec(0.6, "finding", finding={"check": "meta.missing", "level": "error", "text": "no _meta", "spec": "s"}),
        rec(0.7, "start", pid=2, scenario="mrtr"),
        rec(0.8, "in", pid=2, message={"jsonrpc": "2.0", "id": 3, "method": "ping"}),
        rec(0.9, "out", pid=2, message={"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "no"}}),
        rec(0.95, "out", pid=2, message={"jsonrpc": "2.0", "method": "notifications/message", "params": {}}),
        rec(1.0, "verdict", pid=2, verdict={"expectation": "expectations[0]", "request": "tools/call c", "wanted": "at least 1 time", "count": 0}),
    ]
    page = Page(render(records))
    heads = [a for t, a in page.tags if "lanehead" in (a.get("class") or "")]
    assert [a.get("id") for a in heads] == [None, "lane-1", "lane-2"]  # the client, then one lane per process
    rows = {a["id"]: a for a in page.rows("row") if a.get("id", "").startswith("m")}  # type: ignore[union-attr]
    # a response names its request and the request names its response, per process (id 3 is in both)
    assert rows["m2"]["data-pair"] == "m1" and rows["m1"]["data-pair"] == "m2"
    assert rows["m9"]["data-pair"] == "m8" and "data-pair" not in rows["m5"]
    # the two rounds of one input_required request and both their answers share a group
    groups = {k: v.get("data-group") for k, v in rows.items()}
    assert groups["m1"] == groups["m2"] == groups["m3"] == groups["m4"] is not None
    assert groups["m5"] is None
    classes = {k: set((v["class"] or "").split()) for k, v in rows.items()}
    assert {"in", "request"} <= classes["m1"] and {"out", "response"} <= classes["m2"]
    assert {"notification"} <= classes["m10"] and {"error"} <= classes["m9"]
    assert "finding" in classes["m6"] and "verdict" in classes["m11"]
    problems = [a["href"] for t, a in page.tags if t == "a" and (a.get("href") or "").startswith("#m")]
    assert "#m6" in problems and "#m11" in problems
    # every message can be opened to its JSON
    assert sum(1 for t, _ in page.tags if t == "details") == len(records)


def test_ten_thousand_messages_render_quickly(tmp_path: Path) -> None:
    records = []
    for i in range(5000):
        params = {"name": "echo", "arguments": {"text": f"message {i}"}, "_meta": {"progressToken": i}}
        records.append(rec(i * 0.001, "in", message={"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}))
        records.append(rec(i * 0.001 + 0.0005, "out", message={"jsonrpc": "2.0", "id": i, "result": {"resultType": "complete", "content": [{"type": "text", "text": f"message {i}"}]}}))
    journal = tmp_path / "big.jsonl"
    journal.write_text("".join(json.dumps(r) + "\n" for r in records))
    # CPU seconds, not wall-clock ones: the bound is on what rendering costs, and a machine busy
    # with other work (CI's two shared cores) stretches the wall clock, not the CPU time.
    start = time.process_time()
    text = render(records)
    took = time.process_time() - start
    assert took < 2.0, f"{took:.2f} CPU s"
    assert text.count('class="row msg') == 10_000
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert run_mock("journal", str(journal), "--html", str(tmp_path / "big.html")).returncode == 0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    child = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert child < 10, f"{child:.2f} CPU s"  # the whole command, interpreter start-up and file I/O included
    assert (tmp_path / "big.html").stat().st_size < 30_000_000


def test_not_a_journal_gets_no_page(tmp_path: Path) -> None:
    scenario = Path(__file__).resolve().parents[2] / "scenarios" / "default.yaml"
    proc = run_mock("journal", str(scenario), "--html", str(tmp_path / "t.html"))
    assert proc.returncode == 1 and "is not a journal" in proc.stderr.decode()
    assert not (tmp_path / "t.html").exists()


def test_client_findings_and_deliberate_faults_are_counted_apart() -> None:
    def call(t: float, rid: int, name: str, pid: int = 1) -> dict[str, Any]:
        return rec(t, "in", pid, message={"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name}})

    records = [
        rec(0.0, "start", scenario="faults", argv=["run", "scenarios/faults.yaml", "--journal", "j"]),
        call(0.1, 1, "hang"),  # never answered: a hang
        call(0.2, 2, "slow"),
        rec(0.3, "event", kind="cancelled", id=2),  # the client gave up on it: not the mock's fault
        rec(0.35, "in", message={"jsonrpc": "2.0", "id": 3, "method": "subscriptions/listen", "params": {}}),  # open by design
        rec(0.4, "out", raw="\x00garbage", fault=True),
        rec(0.5, "finding", finding={"check": "meta.missing", "level": "error", "text": "no _meta", "spec": "s"}),
        call(0.6, 4, "crash"),
        rec(0.7, "event", kind="exit", status=3, id=4),
        rec(0.8, "start", pid=2, scenario="faults"),
        call(0.9, 5, "echo", pid=2),
        rec(1.0, "out", pid=2, message={"jsonrpc": "2.0", "id": 5, "result": {"resultType": "complete", "content": []}}),
    ]
    text = render(records)
    assert "1 client finding</span>" in text and "3 deliberate faults (hang, garbage, crash)" in text
    page = Page(text)
    listed = [a["href"] for t, a in page.tags if t == "a" and "class" not in a]  # (not the rows' "answer after" links)
    assert listed == ["#m6", "#m1", "#m5", "#m8"]  # the finding, then each fault on its row
    assert "tools/call hang <span class=tag>never answered: hang</span>" in text
    assert "mock 1 exited with status 3 while answering #4 (crash)" in text
    assert '<div class="lanehead mock" id="lane-1" style="grid-column:4">mock 1<span>faults</span><span class=ended>exited 3</span></div>' in text
    # the first process's lifeline ends at its exit row; the second's starts at its first record
    lanes = list(lanes_of(records).values())
    assert [lifelines_at(row, lanes, len(records)) for row in (0, 7, 8, 9, 10)] == [
        ((0, "from"),), ((0, "full"),), ((0, "to"),), ((1, "from"),), ((1, "full"),)]


def test_progress_and_log_rows_show_their_values() -> None:
    records = [
        rec(0.0, "out", message={"jsonrpc": "2.0", "method": "notifications/progress",
                                 "params": {"progressToken": "p", "progress": 1.0, "total": 2, "message": "fetching forecast"}}),
        rec(0.1, "out", message={"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": 0.5}}),
        rec(0.2, "out", message={"jsonrpc": "2.0", "method": "notifications/message",
                                 "params": {"level": "info", "logger": "weather", "data": {"city": "Oslo"}}}),
    ]
    text = render(records)
    assert "<summary>notifications/progress 1/2 fetching forecast</summary>" in text
    assert "<summary>notifications/progress 0.5</summary>" in text
    assert "<summary>notifications/message info weather: {&quot;city&quot;: &quot;Oslo&quot;}</summary>" in text


def test_a_page_named_as_the_journal_itself_is_refused(tmp_path: Path) -> None:
    """(Before: the page was written over the journal it was drawn from.)"""
    journal = tmp_path / "j.jsonl"
    JournalWriter(journal).write("in", message={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    before = journal.read_bytes()
    (tmp_path / "link.jsonl").symlink_to(journal)
    for out in (journal, tmp_path / "link.jsonl", tmp_path / "." / "j.jsonl"):
        proc = run_mock("journal", str(journal), "--html", str(out))
        assert proc.returncode == 2 and b"is the journal itself" in proc.stderr, proc.stderr
        assert journal.read_bytes() == before
