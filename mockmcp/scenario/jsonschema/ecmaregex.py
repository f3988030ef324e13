"""ECMA-262 Unicode property escapes (``\\p{L}``, ``\\p{Letter}``, ``\\P{Nd}``) in Python regexes.

JSON Schema's ``pattern`` is an ECMA-262 regex; Python's ``re`` lacks property
escapes, so those of a general category become character classes built from
``unicodedata`` (once per category per process); any other property is a
``SchemaError``. Imported only for a pattern that has such an escape.
"""

from __future__ import annotations

from mockmcp.scenario.jsonschema.vocabulary import SchemaError
from mockmcp.wire.lazyre import LazyPattern

CATEGORY_NAMES = {
    "Letter": "L", "Cased_Letter": "LC", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll", "Titlecase_Letter": "Lt",
    "Modifier_Letter": "Lm", "Other_Letter": "Lo", "Mark": "M", "Nonspacing_Mark": "Mn", "Spacing_Mark": "Mc",
    "Enclosing_Mark": "Me", "Number": "N", "Decimal_Number": "Nd", "digit": "Nd", "Letter_Number": "Nl",
    "Other_Number": "No", "Punctuation": "P", "punct": "P", "Symbol": "S", "Separator": "Z", "Space_Separator": "Zs",
    "Other": "C", "Control": "Cc", "cntrl": "Cc", "Format": "Cf", "Private_Use": "Co", "Unassigned": "Cn",
    "Connector_Punctuation": "Pc", "Dash_Punctuation": "Pd", "Open_Punctuation": "Ps", "Close_Punctuation": "Pe",
    "Initial_Punctuation": "Pi", "Final_Punctuation": "Pf", "Other_Punctuation": "Po", "Math_Symbol": "Sm",
    "Currency_Symbol": "Sc", "Modifier_Symbol": "Sk", "Other_Symbol": "So", "Line_Separator": "Zl",
    "Paragraph_Separator": "Zp", "Surrogate": "Cs",
}
_PROPERTY = LazyPattern(r"\\([pP])\{([^}]*)\}")
_category_ranges: dict[str, str] = {}


def python_regex(pattern: str) -> str:
    """An ECMA-262 ``pattern`` as a Python regex: its Unicode property escapes become
    character classes (``SchemaError`` for a property that is not a general category)."""
    if "\\p{" not in pattern and "\\P{" not in pattern:
        return pattern
    out: list[str] = []
    i = 0
    in_class = False
    while i < len(pattern):
        c = pattern[i]
        m = _PROPERTY.get().match(pattern, i) if c == "\\" else None
        if m is not None:
            name = m.group(2).removeprefix("General_Category=").removeprefix("gc=")
            category = CATEGORY_NAMES.get(name, name)
            if category not in CATEGORY_NAMES.values():
                raise SchemaError(f"pattern {pattern!r}: the Unicode property {m.group(0)} is not supported (general categories are)")
            if in_class and m.group(1) == "P":
                raise SchemaError(f"pattern {pattern!r}: {m.group(0)} inside a character class is not supported")
            ranges = category_ranges(category)
            out.append(ranges if in_class else f"[{'^' if m.group(1) == 'P' else ''}{ranges}]")
            i = m.end()
            continue
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
        elif c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


def category_ranges(category: str) -> str:
    """The members of a general category (``L``: every ``L*``) as the inside of a character class."""
    found = _category_ranges.get(category)
    if found is None:
        import unicodedata  # a table of 1.1 M code points, built once per category

        cats = ("Lu", "Ll", "Lt") if category == "LC" else (category,)
        parts: list[str] = []
        start = -1
        for c in range(0x110001):
            inside = c < 0x110000 and unicodedata.category(chr(c)).startswith(cats)
            if inside and start < 0:
                start = c
            elif not inside and start >= 0:
                parts.append(_class_char(start) if start == c - 1 else f"{_class_char(start)}-{_class_char(c - 1)}")
                start = -1
        found = _category_ranges[category] = "".join(parts)
    return found


def _class_char(c: int) -> str:
    return f"\\U{c:08x}"
