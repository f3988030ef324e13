"""JSON Schema 2020-12 (and draft-07) validation of tool arguments, sans-I/O.

The revision says servers MUST validate tool inputs, and that schemas without
``$schema`` are 2020-12. ``validator.validator_for`` compiles a tool's
``inputSchema`` once and its ``errors`` answer, per call, the places where the
arguments break it. Callers import from ``validator`` (the entry module); this
package file stays empty so that importing one module imports no other.

The modules, lowest first: ``vocabulary`` (the dialects, the keywords that hold
subschemas, the bounds, the checks of keyword values, and how an instance's type,
equality and numbers are judged), ``uris`` (RFC 3986 resolution and JSON pointer
text), ``ecmaregex`` (ECMA-262 Unicode property escapes as Python classes),
``resources`` (the schema document: its resources, anchors, base URIs and every
``$ref``/``$dynamicRef`` resolved within it), ``compiler`` (one function per schema
object deciding the valid case), ``runs``, ``containers`` and ``evaluator`` (the
evaluator that explains failures and decides alone where annotations matter), ``validator``
(the entry point and the cache of compiled schemas).
"""
