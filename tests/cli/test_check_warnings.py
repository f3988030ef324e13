"""``mockmcp check``'s warnings, through the real command: names no request can carry.

A ``when`` key outside the tool's ``inputSchema`` never matches and a template path no
request fills renders as empty text; the scenario loads, so only these warnings tell. Each
kind is shown once, located, with the nearest name; the parts the scenario leaves open (a
schema that admits other names, an input key built by a template, a custom method) stay
silent, because a false warning is the worst outcome: every bundled scenario and every
YAML example of the docs has none (``tests/cli/test_cli.py`` checks the bundled ones with
``--strict`` through the command, the docs' examples are checked here).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from support.markdown import doc_pages, fenced_blocks
from support.messages import line, request
from support.paths import ROOT
from support.process import mockmcp_cmd

KINDS = """\
mockmcp: 1
state: {initial: start, states: [start, open]}
tools:
  - name: weather
    inputSchema:
      type: object
      properties:
        city: {type: string}
        where: {type: object, properties: {street: {type: string}}}
    replies:
      - when: {arguments: {cty: Atlantis}}
        steps: [{text: never}]
      - when: {arguments: {where: {streeet: x}}, state: opne}
        steps: [{text: never}]
      - when: {params: {nmae: weather}, vars: {x: 1}}
        steps: [{text: never}]
      - when: {inputResponses: {unit: {action: accept}}}
        steps: [{text: "{{ inputResponse.unit }} {{ argument.city }} {{ arguments.cty }} {{ inputResponses.unti }} {{ uri }} {{ index }}"}]
      - steps:
          - loop: {times: 2, steps: [{sleep: "{{ index }}ms"}]}
          - inputRequired:
              inputRequests:
                unit: {method: elicitation/create, params: {message: Unit?, requestedSchema: {type: object}}}
  - name: open
    inputSchema: {type: object, properties: {a: {type: string}}, additionalProperties: true}
    replies: [{when: {arguments: {b: 1}}, steps: [{text: "{{ arguments.c }}"}]}]
  - name: ref
    inputSchema: {type: object, properties: {a: {$ref: "#/$defs/x"}}, $defs: {x: {type: object}}}
    replies: [{when: {arguments: {a: {anything: 1}}}, steps: [{text: "{{ arguments.a.deep }}"}]}]
  - name: dynamic
    replies:
      - when: {round: 2}
        steps: [{text: "{{ inputResponses.anything }}"}]
      - steps: [{inputRequired: {inputRequests: {"{{ arguments.key }}": {method: roots/list}}}}]
prompts:
  - name: review
    arguments: [{name: code}, {name: language}]
    replies: [{when: {arguments: {langauge: python}}, steps: [{text: "{{ arguments.code }}"}]}]
resources:
  - uri: file:///a
    name: a
    replies: [{when: {arguments: {x: 1}}, steps: [{text: "{{ name }} {{ vars.x }}"}]}]
resourceTemplates:
  - uriTemplate: "weather://{city}"
    name: w
    replies: [{when: {vars: {cty: x}}, steps: [{text: "{{ vars.city }}"}]}]
methods:
  - method: tools/list
    replies:
      - when: {params: {cursr: x}, inputResponses: {a: 1}, round: 2}
        steps: [{result: {tools: []}}]
  - method: x/custom
    replies: [{when: {params: {anything: 1}}, steps: [{result: {}}]}]
subscriptions:
  timeline:
    - emit: {event: resources/updated, uri: "{{ arguments.uri }}"}
"""

NEVER = "warning: this rule never matches: "
NULL = "renders as null (empty text): "
T3 = "(at $.tools[0].replies[3].steps[0].text)"
# What `check kinds.yaml` prints on stdout: each kind, at its line and column, in file order.
WARNINGS = [
    f"kinds.yaml:11:28: {NEVER}the inputSchema of tool 'weather' does not define 'cty'; did you mean 'city'? (at $.tools[0].replies[0].when.arguments.cty)",
    f"kinds.yaml:13:36: {NEVER}the inputSchema of tool 'weather' does not define 'streeet' under arguments.where; did you mean 'street'? (at $.tools[0].replies[1].when.arguments.where.streeet)",
    "kinds.yaml:13:50: warning: unknown state 'opne'; did you mean 'open'? (declared: start, open) (at $.tools[0].replies[1].when.state)",
    f"kinds.yaml:15:25: {NEVER}tools/call requests have no param 'nmae'; did you mean 'name'? (at $.tools[0].replies[2].when.params.nmae)",
    f"kinds.yaml:15:48: {NEVER}only a resource template's reads have vars (tool 'weather' has none) (at $.tools[0].replies[2].when.vars.x)",
    f"kinds.yaml:18:18: warning: {{{{ inputResponse.unit }}}} {NULL}no request has 'inputResponse'; did you mean 'inputResponses'? {T3}",
    f"kinds.yaml:18:18: warning: {{{{ argument.city }}}} {NULL}no request has 'argument'; did you mean 'arguments'? {T3}",
    f"kinds.yaml:18:18: warning: {{{{ arguments.cty }}}} {NULL}the inputSchema of tool 'weather' does not define 'cty'; did you mean 'city'? {T3}",
    f"kinds.yaml:18:18: warning: {{{{ inputResponses.unti }}}} {NULL}no inputRequired of tool 'weather' asks 'unti'; did you mean 'unit'? {T3}",
    f"kinds.yaml:18:18: warning: {{{{ uri }}}} {NULL}tools/call requests carry no uri {T3}",
    f"kinds.yaml:18:18: warning: {{{{ index }}}} {NULL}index counts a loop's repetitions, and no loop encloses this step {T3}",
    f"kinds.yaml:38:35: {NEVER}prompt 'review' declares no argument 'langauge'; did you mean 'language'? (at $.prompts[0].replies[0].when.arguments.langauge)",
    f"kinds.yaml:42:35: {NEVER}resources/read requests carry no arguments (at $.resources[0].replies[0].when.arguments.x)",
    f"kinds.yaml:42:52: warning: {{{{ name }}}} {NULL}resources/read requests carry no name (at $.resources[0].replies[0].steps[0].text)",
    f"kinds.yaml:42:52: warning: {{{{ vars.x }}}} {NULL}only a resource template's reads have vars (resource 'file:///a' has none) (at $.resources[0].replies[0].steps[0].text)",
    f"kinds.yaml:46:30: {NEVER}the URI template 'weather://{{city}}' has no variable 'cty'; did you mean 'city'? (at $.resourceTemplates[0].replies[0].when.vars.cty)",
    f"kinds.yaml:50:25: {NEVER}tools/list requests have no param 'cursr'; did you mean 'cursor'? (at $.methods[0].replies[0].when.params.cursr)",
    f"kinds.yaml:50:53: {NEVER}the methods: rule for 'tools/list' answers before rounds are read, so its requests carry no inputResponses (at $.methods[0].replies[0].when.inputResponses.a)",
    f"kinds.yaml:50:60: {NEVER}the methods: rule for 'tools/list' answers before rounds are read (round is always 1) (at $.methods[0].replies[0].when.round)",
    f"kinds.yaml:56:40: warning: {{{{ arguments.uri }}}} {NULL}subscriptions/listen requests carry no arguments (at $.subscriptions.timeline[0].emit.uri)",
]


def _check(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``mockmcp check ARGS`` run in ``tmp_path`` (so the files are named as given)."""
    return subprocess.run(mockmcp_cmd("check", *args), cwd=tmp_path, capture_output=True, text=True, timeout=60)


def test_every_kind_is_located_with_the_nearest_name_and_check_still_passes(tmp_path: Path) -> None:
    (tmp_path / "kinds.yaml").write_text(KINDS)
    proc = _check(tmp_path, "kinds.yaml")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.splitlines() == [*WARNINGS, f"kinds.yaml: ok, {len(WARNINGS)} warnings"]


def test_strict_fails_on_warnings_and_errors_stay_on_stderr(tmp_path: Path) -> None:
    (tmp_path / "kinds.yaml").write_text(KINDS)
    (tmp_path / "clean.yaml").write_text("mockmcp: 1\ntools: [{name: t, replies: [{steps: [{text: '{{ arguments.x }}'}]}]}]\n")
    (tmp_path / "broken.yaml").write_text("mockmcp: 1\ntools: [{name: t, replys: []}]\n")
    proc = _check(tmp_path, "--strict", "kinds.yaml", "clean.yaml", "broken.yaml")
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == ["broken.yaml:2:19: unknown key 'replys'; did you mean 'replies'? (at $.tools[0].replys)"]
    assert proc.stdout.splitlines() == [
        *WARNINGS, f"kinds.yaml: {len(WARNINGS)} warnings (--strict)", "clean.yaml: ok", "broken.yaml: 1 error",
    ]


def _cli_example() -> tuple[str, str]:
    """The scenario of docs/cli.md's check section and the output the doc says it gets."""
    section = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8").split("## `mockmcp check", 1)[1].split("\n## ", 1)[0]
    scenario = re.search(r"```yaml fragment\n(.*?)```", section, re.S)
    printed = re.search(r"```text\n(.*?)```", section, re.S)
    assert scenario and printed, "docs/cli.md's check section shows a scenario and what check prints"
    return scenario[1], printed[1]


def test_the_cli_docs_example_is_what_check_prints_and_run_still_serves_it(tmp_path: Path) -> None:
    scenario, printed = _cli_example()
    (tmp_path / "weather.yaml").write_text(scenario)
    proc = _check(tmp_path, "weather.yaml")
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout == printed
    can_elicit = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}
    call = line(request(1, "tools/call", {"name": "weather", "arguments": {"city": "Paris"}}, meta=can_elicit))
    served = subprocess.run(mockmcp_cmd("run", "weather.yaml"), cwd=tmp_path, input=call, capture_output=True, timeout=60)
    assert served.returncode == 0 and b"warning" not in served.stderr, served.stderr
    answer = json.loads(served.stdout)
    assert answer["result"]["resultType"] == "input_required", answer  # as written: it asks for q


def _doc_scenarios() -> list[tuple[str, str, Path]]:
    """Every complete scenario (a ```yaml block, not a fragment) of README.md and docs/, by FILE:LINE."""
    return [(b.id, b.text, b.path.parent) for page in doc_pages() for b in fenced_blocks(page)
            if b.lang == "yaml" and not b.flags]


def test_no_scenario_in_the_docs_warns() -> None:
    from mockmcp.scenario import checkwarn
    from mockmcp.scenario.loader import load_text

    examples = _doc_scenarios()
    assert len(examples) >= 50
    found = {}
    for where, text, folder in examples:
        scenario, warnings = load_text(text, where, base_dir=folder)
        found[where] = [str(w) for w in warnings] + [f.message for f in checkwarn.warnings(scenario)]
    assert {where: said for where, said in found.items() if said} == {}


def test_warnings_past_the_bound_are_counted_not_listed(tmp_path: Path, capsys, monkeypatch) -> None:
    from mockmcp.cli import main as cli

    monkeypatch.setattr(cli, "MAX_WARNINGS_SHOWN", 3)
    path = tmp_path / "many.yaml"
    rule = "      - when: {arguments: {cty: x}}\n        steps: [{text: never}]\n"
    path.write_text("mockmcp: 1\ntools:\n  - name: t\n    inputSchema: {type: object, properties: {city: {}}}\n    replies:\n" + rule * 5)
    assert cli.main(["check", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [ln.split(": warning: ")[0] for ln in out[:3]] == [f"{path}:{6 + 2 * k}:28" for k in range(3)]
    assert out[3:] == [f"{path}: 2 more warnings not shown", f"{path}: ok, 5 warnings"]


def test_a_spawn_never_looks_for_warnings() -> None:
    """The warnings are `check`'s: loading a scenario (what every spawn does on a cache miss)
    neither imports nor runs them."""
    code = ("import sys; from mockmcp.scenario.loader import load; load('default', use_cache=False); "
            "print('mockmcp.scenario.checkwarn' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout == "False\n", proc.stderr


def test_the_names_a_schema_defines_and_when_it_admits_others() -> None:
    """Which `when.arguments` keys are typos: a name anywhere the schema names one is defined;
    a schema that lets other names through by its own words has no typos."""
    from mockmcp.scenario.checkwarn import defined_properties

    props = {"type": "object", "properties": {"a": {}}}
    assert defined_properties(props) == {"a"}
    assert defined_properties({**props, "additionalProperties": False}) == {"a"}
    assert defined_properties({**props, "required": ["b"], "allOf": [{"properties": {"c": {}}}, {"required": ["a"]}]}) == {"a", "b", "c"}
    assert defined_properties({**props, "if": {"properties": {"k": {}}}, "then": {"properties": {"d": {}}}}) == {"a", "k", "d"}
    assert defined_properties({**props, "dependentSchemas": {"a": {"properties": {"e": {}}}}, "dependencies": {"a": ["f"]}}) == {"a", "e", "f"}
    for admits in ({"additionalProperties": True}, {"additionalProperties": {"type": "string"}}, {"unevaluatedProperties": {}},
                   {"patternProperties": {"^x": {}}}, {"propertyNames": {"maxLength": 3}}, {"$ref": "#/$defs/x"},
                   {"anyOf": [{"properties": {"b": {}}}, True]}, {"oneOf": [{"$ref": "#/$defs/x"}]}):
        assert defined_properties({**props, **admits}) is None, admits
    assert defined_properties({"type": "object"}) is None  # names none: no opinion
