"""Warnings of ``mockmcp check``: what a valid scenario says that no request can make true.

A ``when`` key the tool's ``inputSchema`` does not define (``cty`` for ``city``)
never matches a valid call, and a template path no request can fill
(``inputResponse.q``, ``argument.city``) renders as null, which is empty text: the
scenario loads and runs, and silently does something else. These checks find such
names and suggest the near one.

They are not errors (a scenario may mean it: the mock also serves clients that
break the rules), and only ``mockmcp check`` runs them, never the loader: a spawn
does not pay for them, and ``run`` serves a scenario with warnings as it is. What
they know of a request is what the engine gives a rule (``core.context``'s scope,
the handlers' rounds and template variables, the revision's request params), and
where the scenario does not say (a schema with ``$ref`` or ``additionalProperties``,
an input key built by a template, a method the mock does not know) they stay
silent: a false warning teaches users to ignore the true ones.

Each kind of warning is one function in ``KINDS`` taking the scenario and yielding
``Found``\\ s by JSON path; ``warnings`` runs them all. A new kind is a function and a
row. Sans-I/O.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, NamedTuple

import attrs

from mockmcp.scenario import matching, nearmisses, templates
from mockmcp.scenario.check import Found
from mockmcp.scenario.definitions import iter_rules
from mockmcp.scenario.uritemplates import compile_uri_template
from mockmcp.scenario.model import base as model
from mockmcp.scenario.model.tasks import TaskPhase
from mockmcp.scenario.problems import did_you_mean
from mockmcp.wire import protocol as p

Path_ = tuple[Any, ...]

# The params of the requests this revision (and the legacy one: a tools/call's ``task``) defines,
# by method; a method not here (a custom one a ``methods:`` rule answers) is not judged.
_PAGINATED = frozenset({"_meta", "cursor"})
REQUEST_PARAMS: dict[str, frozenset[str]] = {
    p.TOOLS_CALL: frozenset({"_meta", "name", "arguments", "inputResponses", "requestState", "task"}),
    p.PROMPTS_GET: frozenset({"_meta", "name", "arguments", "inputResponses", "requestState"}),
    p.RESOURCES_READ: frozenset({"_meta", "uri", "inputResponses", "requestState"}),
    p.COMPLETE: frozenset({"_meta", "argument", "context", "ref"}),
    p.SUBSCRIPTIONS_LISTEN: frozenset({"_meta", "notifications"}),
    p.DISCOVER: frozenset({"_meta"}),
    p.TOOLS_LIST: _PAGINATED,
    p.PROMPTS_LIST: _PAGINATED,
    p.RESOURCES_LIST: _PAGINATED,
    p.RESOURCE_TEMPLATES_LIST: _PAGINATED,
}

# The first names of template paths: what ``RequestContext.scope()`` holds (``index`` inside a
# loop, ``responses`` after a legacy ``request`` step, the last two on a retry missing answers).
TEMPLATE_ROOTS = frozenset({
    "id", "method", "params", "meta", "arguments", "name", "uri", "vars", "round", "inputResponses", "state",
    "index", "responses", "missingInputs", "requestState",
})


class Site(NamedTuple):
    """What the requests a rule answers can carry."""

    method: str
    owner: str  # "tool 'x'", "the methods: rule for 'm'", ... (said in messages)
    schema: Any = None  # a tool's inputSchema
    prompt_args: frozenset[str] | None = None  # a prompt's declared arguments (None: none declared)
    uri_template: str | None = None  # a resource template's (its variables are the rule's vars)
    rounds: bool = False  # does the handler read rounds (only then can inputResponses and round > 1 arrive)
    asked: frozenset[str] | None = None  # every input key the primitive's rules ask (None: not knowable)


class Known(NamedTuple):
    """The names one level of a request value can have, and how a name not among them is told."""

    names: frozenset[str]
    say: Callable[[str], str]

    def missing(self, key: str, then: str) -> str:
        """``then`` (what follows), why (``say``), and the nearest name if one is close."""
        return f"{then}: {self.say(key)}{did_you_mean(key, self.names)}"


# ------------------------------------------------------------------ sites


def _walk(value: Any, path: Path_, in_loop: bool) -> Iterator[tuple[Path_, Any, bool]]:
    """Every value under a step (attrs fields by their scenario keys, mapping keys too), with its
    path and whether a loop encloses it (``{{ index }}``)."""
    yield path, value, in_loop
    if isinstance(value, dict):
        for k, v in value.items():
            yield path + (k,), k, in_loop
            yield from _walk(v, path + (k,), in_loop)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, path + (i,), in_loop)
    elif getattr(value, "KEY", "") == "loop":  # its steps run with an index, its count before it
        yield path + ("loop",), value.loop, in_loop
        yield from _walk(value.loop.times, path + ("loop", "times"), in_loop)
        yield from _walk(value.loop.steps, path + ("loop", "steps"), True)
    elif attrs.has(type(value)):
        for f in attrs.fields(type(value)):
            v = getattr(value, f.name)
            if v is not None:
                yield from _walk(v, path + (f.metadata.get("key", f.name),), in_loop)


def _rule_values(path: Path_, rule: model.Rule) -> Iterator[tuple[Path_, Any, bool]]:
    if rule.steps is not None:
        yield from _walk(rule.steps, path + ("steps",), False)
    for k, seq in enumerate(rule.sequence or ()):
        yield from _walk(seq, path + ("sequence", k), False)


def _asked(rules: Iterable[model.Rule]) -> frozenset[str] | None:
    """Every input key the rules ask (``inputRequired`` steps and task phases), or ``None`` when a key
    is a template (then which keys exist is only known per request)."""
    keys: set[str] = set()
    for rule in rules:
        for path, value, _ in _rule_values((), rule):
            if path and path[-1] == "inputRequests" and type(value) is dict:
                for key in value:
                    if "{{" in key:
                        return None
                    keys.add(key)
    return frozenset(keys)


def sites(s: model.Scenario) -> Iterator[tuple[Path_, Site, model.Rule]]:
    """Every rule with its site."""
    asked_by: dict[Path_, frozenset[str] | None] = {}  # (once per primitive, not per rule)
    for path, method, rule in iter_rules(s):
        kind = path[0]
        item = getattr(s, kind)[path[1]]
        if kind == "methods":
            yield path, Site(method, f"the methods: rule for {method!r}"), rule
            continue
        if path[:2] not in asked_by:
            asked_by[path[:2]] = _asked(item.replies)
        asked = asked_by[path[:2]]
        if kind == "tools":
            site = Site(method, f"tool {item.name!r}", schema=item.inputSchema, rounds=True, asked=asked)
        elif kind == "prompts":
            declared = None if not item.arguments else frozenset(a.name for a in item.arguments)
            site = Site(method, f"prompt {item.name!r}", prompt_args=declared, rounds=True, asked=asked)
        elif kind == "resources":
            site = Site(method, f"resource {item.uri!r}", rounds=True, asked=asked)
        else:
            site = Site(method, f"resource template {item.uriTemplate!r}", uri_template=item.uriTemplate, rounds=True, asked=asked)
        yield path, site, rule


def _listen_site() -> Site:
    return Site(p.SUBSCRIPTIONS_LISTEN, "a subscriptions/listen stream")


# ------------------------------------------------------------------ what a request value can hold


def _no(what: str) -> Known:
    return Known(frozenset(), lambda key: what)


def _among(names: Iterable[str], say: Callable[[str], str]) -> Known:
    return Known(frozenset(names), say)


def known_names(site: Site, root: str, prefix: list[Any]) -> Known | None:
    """The names ``root.prefix`` can hold in ``site``'s requests (``None``: no opinion)."""
    params = REQUEST_PARAMS.get(site.method)
    under = "" if not prefix else " under " + _dotted([root, *prefix])
    if root == "params":
        if prefix and prefix[0] in ("arguments", "inputResponses"):
            return known_names(site, prefix[0], prefix[1:])
        if prefix or params is None:
            return None
        return _among(params, lambda key: f"{site.method} requests have no param {key!r}")
    if root == "arguments":
        if params is not None and "arguments" not in params:
            return _no(f"{site.method} requests carry no arguments")
        if site.schema is not None:
            schema = _schema_at(site.schema, prefix)
            names = None if schema is None else defined_properties(schema)
            if names is None:
                return None
            return _among(names, lambda key: f"the inputSchema of {site.owner} does not define {key!r}{under}")
        if site.prompt_args is not None and not prefix:
            return _among(site.prompt_args, lambda key: f"{site.owner} declares no argument {key!r}")
        return None
    if root == "vars":
        if prefix:
            return None
        if site.uri_template is None:
            return _no(f"only a resource template's reads have vars ({site.owner} has none)")
        return _among(compile_uri_template(site.uri_template).groupindex, lambda key: f"the URI template {site.uri_template!r} has no variable {key!r}")
    if root == "inputResponses":
        if prefix:
            return None
        if not site.rounds:
            return _no(f"{site.owner} answers before rounds are read, so its requests carry no inputResponses")
        if site.asked is None:
            return None
        if not site.asked:
            return _no(f"no inputRequired of {site.owner} asks for input")
        return _among(site.asked, lambda key: f"no inputRequired of {site.owner} asks {key!r}")
    return None


def _dotted(parts: list[Any]) -> str:
    out = str(parts[0])
    for part in parts[1:]:
        out += f"[{part}]" if type(part) is int else f".{part}"
    return out


def _schema_at(schema: Any, parts: list[Any]) -> Any:
    """The subschema that describes ``arguments.parts`` (``None`` when the schema does not say)."""
    for part in parts:
        if type(schema) is not dict:
            return None
        if type(part) is int or (type(part) is str and part.isdigit()):
            items = schema.get("items")
            schema = items if type(items) is dict else None
            continue
        schema = _property(schema, part)
    return schema


def _property(schema: dict[str, Any], name: str) -> Any:
    props = schema.get("properties")
    if type(props) is dict and name in props:
        return props[name]
    for key in ("allOf", "anyOf", "oneOf"):
        for branch in schema.get(key) or ():
            if type(branch) is dict:
                found = _property(branch, name)
                if found is not None:
                    return found
    return None


_OPEN_KEYS = ("patternProperties", "propertyNames", "$ref", "$dynamicRef")


def defined_properties(schema: Any) -> frozenset[str] | None:
    """The property names an object schema defines (in ``properties`` or ``required``, its own or
    its ``allOf``/``anyOf``/``oneOf``/``if``/``then``/``else``/dependent schemas'), or ``None`` when
    it allows others by name (``additionalProperties``/``unevaluatedProperties`` other than
    ``false``, pattern properties, a reference) or names none. ``additionalProperties`` left out allows any key in JSON Schema;
    a key outside ``properties`` is still almost always a typo, so only a schema that says
    otherwise is taken at its word."""
    names: set[str] = set()
    if not _collect(schema, names) or not names:
        return None
    return frozenset(names)


def _collect(schema: Any, names: set[str]) -> bool:
    """Add the names ``schema`` defines; ``False`` when it lets any name through."""
    if type(schema) is bool:
        return not schema
    if type(schema) is not dict or any(k in schema for k in _OPEN_KEYS):
        return False
    for key in ("additionalProperties", "unevaluatedProperties"):
        if key in schema and schema[key] is not False:
            return False
    props = schema.get("properties")
    if type(props) is dict:
        names.update(props)
    required = schema.get("required")
    if type(required) is list:  # (a required name the properties leave out is still the schema's)
        names.update(r for r in required if type(r) is str)
    for key in ("allOf", "anyOf", "oneOf"):
        branches = schema.get(key)
        if type(branches) is list and not all(_collect(b, names) for b in branches):
            return False
    for key in ("if", "then", "else"):
        if key in schema and not _collect(schema[key], names):
            return False
    for key in ("dependentSchemas", "dependencies"):  # (draft-07's dependencies may also be name lists)
        conditional = schema.get(key)
        if type(conditional) is dict:
            for sub in conditional.values():
                if type(sub) is list:
                    names.update(r for r in sub if type(r) is str)
                elif not _collect(sub, names):
                    return False
    return True


# ------------------------------------------------------------------ the kinds


_WHEN_KEYS = (("arguments", "arguments"), ("params", "params"), ("vars", "vars"), ("inputResponses", "inputResponses"))


def when_names(s: model.Scenario) -> Iterator[Found]:
    """``when`` keys no request of the rule's method carries: an argument the tool's schema does not
    define, params the method does not have, vars outside a resource template, inputResponses no
    round asks for (each level of a nested pattern, where the schema tells)."""
    for path, site, rule in sites(s):
        w = rule.when
        for root, key in _WHEN_KEYS:
            pattern = getattr(w, root)
            if pattern:
                yield from _pattern_names(site, root, [], pattern, path + ("when", key))
        if w.round is not None and w.round > 1 and not site.rounds:
            yield Found(path + ("when", "round"), f"this rule never matches: {site.owner} answers before rounds are read (round is always 1)", "warning")


def _pattern_names(site: Site, root: str, prefix: list[Any], pattern: dict[str, Any], path: Path_) -> Iterator[Found]:
    known = known_names(site, root, prefix)
    for key, sub in pattern.items():
        if known is not None and key not in known.names:
            yield Found(path + (key,), known.missing(key, "this rule never matches"), "warning")
        elif type(sub) is dict and not matching.is_matcher(sub):
            yield from _pattern_names(site, root, [*prefix, key], sub, path + (key,))


def template_paths(s: model.Scenario) -> Iterator[Found]:
    """Template paths no request fills: an unknown first name, and names under ``arguments``,
    ``params``, ``vars`` and ``inputResponses`` the rule's requests cannot carry (they render
    as null: empty text)."""
    for path, site, rule in sites(s):
        for where, value, in_loop in _rule_values(path, rule):
            yield from _string_paths(site, where, value, in_loop)
    listen = _listen_site()
    for where, value, in_loop in _walk(s.subscriptions.timeline, ("subscriptions", "timeline"), False):
        yield from _string_paths(listen, where, value, in_loop)
    for i, timer in enumerate(s.subscriptions.timers):
        yield from _string_paths(listen, ("subscriptions", "timers", i, "emit", "uri"), timer.emit.uri, False)


def _string_paths(site: Site, where: Path_, value: Any, in_loop: bool) -> Iterator[Found]:
    if type(value) is not str or "{{" not in value:
        return
    try:
        compiled = templates.compile_string(value)
    except templates.TemplateError:
        return  # an error `check` reports already
    exprs = [compiled.whole] if compiled.whole is not None else [x for x in compiled.parts if not isinstance(x, str)]
    for expr in exprs:
        for parts in _paths(expr):
            message = path_problem(site, parts, in_loop)
            if message is not None:
                yield Found(where, f"{{{{ {_dotted(parts)} }}}} renders as null (empty text){message}", "warning")


def _paths(expr: templates.Expr) -> Iterator[list[Any]]:
    if expr[0] == "path":
        yield expr[1]
    elif expr[0] == "call":
        for arg in expr[2]:
            yield from _paths(arg)


def path_problem(site: Site, parts: list[Any], in_loop: bool) -> str | None:
    """Why a template path reads nothing in ``site``'s requests (from ``: ``), or ``None``."""
    root = parts[0]
    if root not in TEMPLATE_ROOTS:
        return f": no request has {root!r}{did_you_mean(root, TEMPLATE_ROOTS)}"
    if root == "index" and not in_loop:
        return ": index counts a loop's repetitions, and no loop encloses this step"
    params = REQUEST_PARAMS.get(site.method)
    if root in ("name", "uri") and params is not None and root not in params:
        return f": {site.method} requests carry no {root}"
    for depth in range(1, len(parts)):
        part = parts[depth]
        if type(part) is not str:
            return None
        known = known_names(site, root, parts[1:depth])
        if known is None:
            return None
        if part not in known.names:
            return known.missing(part, "")
    return None


def state_names(s: model.Scenario) -> Iterator[Found]:
    """Named states the scenario does not declare (``state.states``): a ``when.state``, a primitive's
    ``states`` or a task phase's ``state`` naming one is never true."""
    declared = s.state.states
    if declared is None:
        return
    say = ", ".join(declared)

    def unknown(names: str | list[str] | None, path: Path_) -> Iterator[Found]:
        for i, name in enumerate([names] if isinstance(names, str) else names or ()):
            if name not in declared:
                at = path if isinstance(names, str) else path + (i,)
                yield Found(at, f"unknown state {name!r}{did_you_mean(name, declared)} (declared: {say})", "warning")

    for kind in ("tools", "prompts", "resources", "resourceTemplates"):
        for i, item in enumerate(getattr(s, kind)):
            yield from unknown(item.states, (kind, i, "states"))
    for path, _, rule in iter_rules(s):
        yield from unknown(rule.when.state, path + ("when", "state"))
        for where, value, _ in _rule_values(path, rule):
            if isinstance(value, TaskPhase):
                yield from unknown(value.state, where + ("state",))


KINDS: tuple[Callable[[model.Scenario], Iterable[Found]], ...] = (
    when_names, template_paths, state_names,
    nearmisses.capabilities, nearmisses.results, nearmisses.schema_keywords, nearmisses.methods,
)


def warnings(s: model.Scenario) -> list[Found]:
    """Every warning of every kind, by JSON path."""
    return [found for kind in KINDS for found in kind(s)]
