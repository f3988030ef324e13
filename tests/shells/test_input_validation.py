"""tools/call arguments are validated against the tool's inputSchema by default.

tools.mdx: servers MUST validate tool inputs, and an input validation error is a tool
execution error (a result with ``isError: true``), not a protocol error. The real
process answers first; then the switches (per tool, per scenario), the import rule
(no validator for a scenario that needs none) and ``check``'s refusals.
"""

from __future__ import annotations

import json
import subprocess
import sys

from support.paths import SCENARIOS

from support.messages import line

from support.process import run_mock
from support.fakelink import FakeLink, close_links  # noqa: F401  (autouse: no link outlives its test)
from support.messages import call
from support.engines import engine_for

from mockmcp.scenario.loader import load_text
from mockmcp.scenario.problems import LoadError

BOOK = """
mockmcp: 1
{protocol}
tools:
  - name: book
    {switch}
    inputSchema:
      type: object
      properties: {{seats: {{type: integer, minimum: 1}}, cls: {{enum: [economy, business]}}}}
      required: [seats]
      additionalProperties: false
    replies:
      - steps: [{{text: "booked {{{{ arguments.seats }}}}"}}]
"""


def book(protocol: str = "", switch: str = "") -> str:
    return BOOK.format(protocol=protocol, switch=switch)


def answers(out: bytes) -> dict[object, dict[str, object]]:
    return {m["id"]: m for m in map(json.loads, out.splitlines()) if "id" in m}


def test_the_real_process_answers_invalid_arguments_with_a_tool_error(tmp_path, schema):
    path = tmp_path / "book.yaml"
    path.write_text(book())
    proc = run_mock(
        "run", str(path),
        input=line(call(1, "book", seats=2)) + line(call(2, "book", seats=0, cls="first", extra=True)) + line(call(3, "book")),
    )
    got = answers(proc.stdout)
    assert got[1]["result"]["content"] == [{"type": "text", "text": "booked 2"}]
    assert "isError" not in got[1]["result"]
    bad = got[2]["result"]
    schema.check(got[2], "tools/call")
    assert bad["isError"] is True and bad["resultType"] == "complete"
    text = bad["content"][0]["text"]
    assert text.startswith("Invalid arguments for tool book: ")
    assert "$.seats: 0 is less than 1" in text
    assert "$.cls: 'first' is not one of ['economy', 'business']" in text
    assert "$.extra: is not allowed (additionalProperties)" in text
    assert got[3]["result"]["isError"] is True and "required property 'seats' is missing" in got[3]["result"]["content"][0]["text"]


def test_arguments_that_are_no_object_stay_a_protocol_error():
    link = FakeLink(engine_for(book()))
    (resp,) = link.send({**call(1, "book"), "params": {**call(1, "book")["params"], "arguments": [1]}})
    assert resp["error"]["code"] == -32602


def test_a_tool_or_the_scenario_can_switch_it_off():
    for text in (book(switch="validateInput: false"), book(protocol="protocol: {validateInput: false}")):
        link = FakeLink(engine_for(text))
        (resp,) = link.send(call(1, "book", seats="two"))
        assert resp["result"]["content"][0]["text"] == "booked two"
    # the tool's own switch wins over the scenario's
    link = FakeLink(engine_for(book(protocol="protocol: {validateInput: false}", switch="validateInput: true")))
    (resp,) = link.send(call(1, "book", seats="two"))
    assert resp["result"]["isError"] is True


def test_the_bundled_2020_12_scenario_validates_what_its_schema_says():
    link = FakeLink(engine_for((SCENARIOS / "conformance-schema-2020-12.yaml").read_text()))
    (ok,) = link.send(call(1, "create_order", item=["AB-1234", 3], gift=True, message="hi", channel="web"))
    assert ok["result"]["content"][0]["text"] == "ordered 3 x AB-1234"
    (bad,) = link.send(call(2, "create_order", item=["AB-1234", 3], gift=True, channel="web"))
    assert bad["result"]["isError"] is True
    assert "property 'message' is required when 'gift' is present" in bad["result"]["content"][0]["text"]


def test_no_validator_is_imported_for_a_scenario_that_needs_none(tmp_path):
    # the default inputSchema ({type: object}) asks nothing of the arguments beyond being an object
    code = (
        "import sys\n"
        "from mockmcp.scenario.loader import load_text\nfrom mockmcp.launch.boot import new_engine\nfrom mockmcp.core.connection import Connection\n"
        "s, _ = load_text('mockmcp: 1\\ntools: [{name: t, inputSchema: {type: object, description: any}}]\\n', 'x')\n"
        f"Connection(new_engine(s)).receive_data({line(call(1, 't', a=1))!r})\n"
        "print('mockmcp.scenario.jsonschema.validator' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "False", proc.stderr


def test_check_refuses_a_validated_schema_it_cannot_use():
    text = """
mockmcp: 1
tools:
  - name: remote
    inputSchema: {type: object, properties: {c: {$ref: "https://example.com/c.json"}}}
  - name: fine
    validateInput: false
    inputSchema: {type: object, properties: {c: {$ref: "https://example.com/c.json"}}}
"""
    try:
        load_text(text, "remote.yaml")
    except LoadError as exc:
        message = str(exc)
    else:
        raise AssertionError("check accepted a $ref it cannot resolve")
    assert "never fetches" in message and "$.tools[0].inputSchema" in message
    assert "$.tools[1]" not in message
