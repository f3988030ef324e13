"""completion/complete matched on context.arguments, and RFC 6570 level 3-4 templates
served by the real process."""

from __future__ import annotations

import json

from support.messages import line, request

from support.process import run_mock
from support.fakelink import FakeLink, close_links  # noqa: F401  (autouse: no link outlives its test)
from support.engines import engine_for

SCENARIO = """
mockmcp: 1
prompts: [{name: review, arguments: [{name: language}, {name: framework}]}]
resourceTemplates:
  - uriTemplate: "weather://{city}{?units,days}"
    name: forecast
    replies:
      - steps: [{text: "{{ vars.city }} in {{ default(vars.units, 'metric') }} for {{ default(vars.days, 1) }} days"}]
  - uriTemplate: "repo://{owner}{/path*}"
    name: file
    replies:
      - steps: [{text: "{{ vars.owner }}: {{ vars.path }}"}]
completions:
  - {prompt: review, argument: framework, values: [generic]}
  - {prompt: review, argument: framework, context: {arguments: {language: python}}, values: [django, flask]}
  - {prompt: review, argument: framework, context: {arguments: {language: {$regex: "^go"}}}, values: [gin]}
"""


def complete(rid, context=None, value=""):
    params = {"ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": "framework", "value": value}}
    if context is not None:
        params["context"] = context
    return request(rid, "completion/complete", params)


def test_completion_values_depend_on_the_arguments_already_chosen():
    link = FakeLink(engine_for(SCENARIO))
    values = lambda rid, **kw: link.send(complete(rid, **kw))[0]["result"]["completion"]["values"]  # noqa: E731
    assert values(1) == ["generic"]
    assert values(2, context={"arguments": {"language": "python"}}) == ["generic", "django", "flask"]
    assert values(3, context={"arguments": {"language": "golang"}}) == ["generic", "gin"]
    assert values(4, context={"arguments": {"language": "python"}}, value="f") == ["flask"]
    assert values(5, context={"arguments": {"language": "rust"}}) == ["generic"]


def test_the_real_process_reads_level_3_and_4_templates_and_completes_in_context(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    reads = [
        request(1, "resources/read", {"uri": "weather://paris?units=imperial&days=3"}),
        request(2, "resources/read", {"uri": "weather://oslo"}),
        request(3, "resources/read", {"uri": "repo://alice/src/main.py"}),
    ]
    proc = run_mock("run", str(path), input=b"".join(line(r) for r in reads) + line(complete(4, context={"arguments": {"language": "python"}})))
    out = {m["id"]: m["result"] for m in map(json.loads, proc.stdout.splitlines())}
    texts = {rid: r["contents"][0]["text"] for rid, r in out.items() if "contents" in r}
    assert texts == {1: "paris in imperial for 3 days", 2: "oslo in metric for 1 days", 3: "alice: src/main.py"}
    assert out[4]["completion"]["values"] == ["generic", "django", "flask"]
