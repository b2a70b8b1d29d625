#!/usr/bin/env python3
"""Writes tests/data/grammar/schema/goldens.json: JSON Schemas and JSON texts
with Python jsonschema's verdict (Draft 2020-12, formats checked), the oracle
for prepack's JSON Schema -> GBNF front end (core/grammar/json_schema.h).

For each case the test (tests/grammar_json_schema_test.cc) runs the schema's
grammar over the text and requires:
  accepted by the grammar  =>  "valid" (always: soundness);
  "valid" and "canonical"  =>  accepted (the grammar is not needlessly narrow).
"canonical" texts are written the way the grammar promises to accept them:
json.dumps(v, ensure_ascii=False, separators=(",", ":")) with object keys in
the order the schema lists its properties (the instances below are written
in that order), or a raw text marked canonical by hand (allowed whitespace).
A case marked NC ("not canonical") is valid JSON Schema-wise but outside
what the grammar promises (extra properties of a closed object, 1.0 for an
integer, an exponent where a bounded number takes none, ...): only the
soundness rule applies to it.

OpenAPI's `nullable: true` (which the front end honours) is checked by the
oracle as `"type": [..., "null"]`, its meaning in OpenAPI 3.0.

Needs: jsonschema, rfc3339-validator, rfc3986-validator (so that date-time,
time and uri are checked at all: jsonschema skips formats whose checker
package is missing, and this script refuses to run then).
  python3 -m venv /tmp/schema-venv
  /tmp/schema-venv/bin/pip install jsonschema rfc3339-validator rfc3986-validator
  /tmp/schema-venv/bin/python scripts/make_grammar_schema_goldens.py --prepack build/bin/prepack

With --prepack, each schema also gets sentences sampled from its grammar by
`prepack grammar sample` (marked "sampled"), so the soundness rule is checked
on texts the grammar itself chose, not only on hand-written ones; a sample the
oracle rejects is reported as UNSOUND (and then fails the test).
"""

import argparse
import copy
import itertools
import json
import os
import random
import sys

from jsonschema import Draft202012Validator

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "tests", "data", "grammar", "schema", "goldens.json")


class Raw:
    """A JSON text written by hand (whitespace, escapes, invalid JSON)."""

    def __init__(self, text, canonical=False):
        self.text = text
        self.canonical = canonical


class NC:
    """A value the grammar may reject although it is valid (see the header)."""

    def __init__(self, value):
        self.value = value


def canonical_text(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def openapi_to_jsonschema(schema):
    """nullable: true -> "null" added to "type", recursively."""
    if isinstance(schema, list):
        return [openapi_to_jsonschema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: openapi_to_jsonschema(v) for k, v in schema.items()}
    if out.get("nullable") is True and "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = types + ["null"]
    return out


def verdict(validator, text):
    try:
        value = json.loads(text)
    except ValueError:
        return False  # not JSON at all
    return validator.is_valid(value)


GROUPS = []


def group(name, schema, instances, options=None):
    GROUPS.append((name, schema, instances, options or {}))


# ---------------------------------------------------------------- types
ALL_KINDS = [None, True, False, 0, -1, 7, 1.5, -0.25, 1e-05, 1e16, 2.0, "", "a", "hello world", [], [1, "a"],
             {}, {"a": 1}]
for t in ["null", "boolean", "integer", "number", "string", "array", "object"]:
    cases = []
    for v in ALL_KINDS:
        # 2.0 and 1e16 are integers to jsonschema, written as floats.
        cases.append(NC(v) if t == "integer" and isinstance(v, float) else v)
    group(f"type-{t}", {"type": t}, cases)
group("type-list", {"type": ["string", "null"]}, ALL_KINDS)
group("type-integer-number", {"type": ["integer", "number"]}, ALL_KINDS)
group("type-boolean-object", {"type": ["boolean", "object"]}, ALL_KINDS)
group("schema-true", True, ALL_KINDS + [{"deep": [[{"x": None}]]}])
group("schema-empty", {}, ALL_KINDS)
group("annotations-only", {"title": "t", "description": "d", "default": 1, "examples": [1], "$comment": "c",
                           "deprecated": True, "readOnly": True, "x-vendor": {"a": 1}}, ALL_KINDS)

# ---------------------------------------------------------------- strings
STRINGS = ["", "a", "ab", "abc", "abcd", "abcde", "abcdef", "é", "éé", "中文字", "😀", "😀😀", "a\"b", "back\\slash",
           "line\nbreak", "\t", "\u0001", "\u001f", "\x7f", "/", "\u2028", "mixed \"é\\😀\n"]
group("string-any", {"type": "string"}, STRINGS + [
    Raw('"\\u00e9"'), Raw('"\\ud83d\\ude00"'), Raw('"\\ud800"'), Raw('"\\/"'), Raw('"\\x41"'), Raw('"\\u12"'),
    Raw('"a\u0001b"'), Raw('"a\nb"'), Raw('"\\"'), Raw('"abc'), Raw('abc"'), Raw("'a'"), Raw('"\\U0001F600"'),
    Raw('"\\uD83D\\uDE00"'), Raw('"\\b\\f\\n\\r\\t"', canonical=True)])
group("string-length", {"type": "string", "minLength": 2, "maxLength": 4}, STRINGS + [
    Raw('"\\ud83d\\ude00"'), Raw('"\\ud83d\\ude00x"'), Raw('"\\u0041"'), Raw('"\\u0041\\u0042"'), Raw('"\\ud800\\ud800"'),
    Raw('"\\ud83d\\ude00\\ud83d\\ude00\\ud83d\\ude00\\ud83d\\ude00\\ud83d\\ude00"')])
group("string-min-length", {"type": "string", "minLength": 3}, STRINGS + [
    Raw('"\\ud83d\\ude00\\ud83d\\ude00"'), Raw('"\\ud83d\\ude00ab"'), Raw('"a\\nb"', canonical=True)])
group("string-max-length", {"type": "string", "maxLength": 1}, STRINGS + [
    Raw('"\\ud83d\\ude00"'), Raw('"\\n"', canonical=True), Raw('"\\u0041"')])
group("string-length-untyped", {"minLength": 2}, [NC(5), NC(None), "ab", "a", NC([]), NC({})])
group("string-exact-length", {"type": "string", "minLength": 3, "maxLength": 3}, STRINGS)

# ---------------------------------------------------------------- integers
INTEGER_RANGES = [
    {"minimum": 0, "maximum": 150}, {"minimum": -50, "maximum": -3}, {"minimum": -7, "maximum": 12},
    {"exclusiveMinimum": 5, "exclusiveMaximum": 100}, {"minimum": 1.5, "maximum": 9.5},
    {"exclusiveMinimum": -1.5, "exclusiveMaximum": 2.5}, {"minimum": 1000000, "maximum": 99999999},
    {"minimum": -20}, {"maximum": 300}, {"exclusiveMaximum": -99}, {"minimum": 10, "maximum": 10},
    {"minimum": 0}, {"minimum": 1}, {"maximum": 0}, {"minimum": 199, "maximum": 1001},
    {"minimum": -1001, "maximum": -199}, {"minimum": 9, "maximum": 10}, {"minimum": 99, "maximum": 100},
    {"minimum": -123456789012345678, "maximum": 123456789012345678}, {"minimum": 0, "exclusiveMinimum": 3},
]


def integer_probes(bounds):
    probes = set(range(-30, 31))
    for v in bounds.values():
        base = int(v)
        for d in range(-3, 4):
            probes.add(base + d)
    for p in [99, 100, 101, 149, 150, 151, 999, 1000, 1001, 999999, 1000000, 99999999, 100000000, 10 ** 20,
              -10 ** 20, 123456789012345678, 123456789012345679, -123456789012345679]:
        probes.add(p)
    return sorted(probes)


for i, bounds in enumerate(INTEGER_RANGES):
    schema = {"type": "integer", **bounds}
    extra = [Raw("-0"), Raw("007"), Raw("+1"), Raw("1.0"), Raw("1e2"), Raw("- 1"), Raw("0x10")]
    group(f"integer-range-{i}", schema, integer_probes(bounds) + extra)
# OpenAPI's int32 is honoured as a range; jsonschema does not check it, so
# the values past it are valid to the oracle and NC here.
group("integer-int32", {"type": "integer", "format": "int32"},
      [0, 2 ** 31 - 1, NC(2 ** 31), -2 ** 31, NC(-2 ** 31 - 1), 5, -5, Raw("2147483648")])

# ---------------------------------------------------------------- numbers
NUMBER_PROBES = [0, 0.0, -0.0, 1, -1, 0.5, -0.5, 1.0, -1.0, 0.999, 1.001, 2, 5, 5.0, 5.5, -5, -5.5, 10, 10.0, 10.5,
                 9.999, -3, -3.0, -2.999, -3.001, 1e-05, -1e-05, 1.5e-07, 123.456, -123.456, 1e16, -1e16, 1e300,
                 1e-300, 5e-324, 100, 0.1, 0.25]
NUMBER_RAWS = [Raw("1e-400"), Raw("-1e-400"), Raw("0." + "0" * 330 + "1"), Raw("-0." + "0" * 330 + "1"),
               Raw("1e400"), Raw("-1e400"), Raw("1.0000000000000000000001"), Raw("0.99999999999999999999"),
               Raw("-0"), Raw("-0.0"), Raw("0e5"), Raw("00"), Raw(".5"), Raw("1."), Raw("1e"), Raw("+1"),
               Raw("0.5e-3"), Raw("1E+2"), Raw("2.5E-1"), Raw("4.9999999999999999999")]
NUMBER_RANGES = [{}, {"minimum": 0}, {"exclusiveMinimum": 0}, {"maximum": 0}, {"exclusiveMaximum": 0},
                 {"minimum": 0, "maximum": 1}, {"minimum": -5, "maximum": 5}, {"minimum": 2, "maximum": 10},
                 {"maximum": -3}, {"minimum": 5}, {"exclusiveMinimum": 0, "maximum": 1},
                 {"minimum": -1, "exclusiveMaximum": 0}, {"minimum": 0, "maximum": 0}]


def number_canonical(bounds, v):
    """Whether the grammar promises to accept json.dumps(v) under `bounds`:
    a bounded number takes no exponent, and "-0" only where negatives are
    allowed."""
    text = canonical_text(v)
    return not bounds or ("e" not in text and text not in ("-0", "-0.0"))


for i, bounds in enumerate(NUMBER_RANGES):
    schema = {"type": "number", **bounds}
    cases = [v if number_canonical(bounds, v) else NC(v) for v in NUMBER_PROBES]
    group(f"number-range-{i}", schema, cases + NUMBER_RAWS)

# ---------------------------------------------------------------- const / enum
group("const-string", {"const": "a\"b\\c\né😀"}, ["a\"b\\c\né😀", "abc", None, Raw('"a\\"b\\\\c\\n\\u00e9😀"')])
group("const-number", {"const": 1.0}, [1, 1.0, NC(1.00), 2, True, "1", Raw("1.00"), Raw("10")])
group("const-integer", {"const": 42}, [42, NC(42.0), 43, -42, "42", Raw("42.0"), Raw("4.2e1")])
group("const-null", {"const": None}, [None, 0, False, "", []])
group("const-bool", {"const": False}, [False, True, 0, None, Raw("false", canonical=True)])
group("const-object", {"const": {"a": [1, {"b": None}], "c": "x"}},
      [{"a": [1, {"b": None}], "c": "x"}, NC({"c": "x", "a": [1, {"b": None}]}), {"a": [1, {"b": None}]},
       {"a": [1, {"b": None}], "c": "x", "d": 1}, Raw('{ "a" : [ 1 , { "b" : null } ] , "c" : "x" }', canonical=True)])
group("const-array", {"const": [1, "two", [3]]}, [[1, "two", [3]], [1, "two"], [1, "two", [3], 4],
                                                  Raw('[1,\n  "two",\n  [3]]', canonical=True)])
group("enum-mixed", {"enum": ["red", 2, None, True, [1], {"k": "v"}, 2.5]},
      ["red", 2, NC(2.0), None, True, False, 1, [1], {"k": "v"}, 2.5, "blue", [], {}, "Red"])
group("enum-typed", {"type": "string", "enum": ["a", "b", 1, None]}, ["a", "b", 1, None, "c"])
group("enum-length", {"type": "string", "enum": ["a", "abc", "abcdef"], "minLength": 2, "maxLength": 4},
      ["a", "abc", "abcdef"])
group("enum-nullable", {"type": "string", "enum": ["x", None], "nullable": True}, ["x", None, "y"])
group("enum-bounds", {"enum": [1, 5, 10, "s"], "minimum": 2, "exclusiveMaximum": 10}, [1, 5, 10, "s", 7])

# ---------------------------------------------------------------- objects
PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0},
                                           "email": {"type": "string", "format": "email"}},
          "required": ["name"]}
group("object-optional", PERSON, [
    {"name": "Ann"}, {"name": "Ann", "age": 30}, {"name": "Ann", "email": "a@b.co"},
    {"name": "Ann", "age": 30, "email": "a@b.co"}, NC({"age": 30, "name": "Ann"}), {"age": 30}, {},
    {"name": "Ann", "age": -1}, {"name": 5}, NC({"name": "Ann", "extra": 1}), {"name": "Ann", "email": "nope"},
    Raw('{ "name": "Ann" }', canonical=True), Raw('{\n  "name": "Ann",\n  "age": 3\n}', canonical=True),
    Raw('{\n\t"name":"Ann"\n}', canonical=True), Raw('{"name" : "Ann" , "age" : 3}', canonical=True),
    Raw('{  "name": "Ann"}'), Raw('{"name": "Ann",}'), Raw('{"name": "Ann"'), Raw(' {"name": "Ann"}'),
    Raw('{"name":"Ann"} '), Raw('{"name":"Ann","name":"Bob"}'), Raw('{"\\u006eame":"Ann"}'),
    Raw('{\n' + ' ' * 21 + '"name":"Ann"}'), Raw('{\n' + ' ' * 20 + '"name":"Ann"}', canonical=True),
    Raw('{\r\n"name":"Ann"}')])
group("object-all-optional", {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
                                                               "c": {"type": "boolean"}}},
      [{}, {"a": 1}, {"b": "x"}, {"c": True}, {"a": 1, "c": False}, {"a": 1, "b": "x", "c": True},
       NC({"b": "x", "a": 1}), {"a": "x"}, NC({"d": 1}), Raw("{ }", canonical=True), Raw("{\n}", canonical=True),
       Raw("{  }"), Raw("{,}"), Raw('{"a":1,}')])
group("object-open-default", {"type": "object", "properties": {"a": {"type": "integer"}}},
      [{}, {"a": 1}, {"a": 1, "b": 2}, {"b": "x"}, {"a": "x"}, {"a": 1, "a2": [1]}, NC({"ab": 1, "a": 1}),
       Raw('{"a":1,"a":"x"}'), Raw('{"a":"x","a":1}'), Raw('{"\\u0061":"x"}'), Raw('{"b":1,"\\u0062":2}')],
      options={"closed_objects_by_default": False})
group("object-additional-schema",
      {"type": "object", "properties": {"a": {"type": "integer"}, "ab": {"type": "string"}, "q\"uote": {"type": "null"}},
       "additionalProperties": {"type": "boolean"}},
      [{}, {"a": 1}, {"a": 1, "ab": "s"}, {"a": 1, "zz": True}, {"a": 1, "zz": 3}, {"zz": True, "y": False},
       {"abc": True}, {"b": False}, {"": True}, {"a\"": True}, {"q\"uote": None}, {"q\"uote": True},
       {"a": 1, "q\"uote": None, "x\ny": True}, {"é": True}, {"😀": False}, Raw('{"a":true}'),
       Raw('{"a":1,"a":true}'), Raw('{"ab":"s","\\u0061b":true}'), Raw('{"a\\/b":true}'), Raw('{"q\\"uote":true}')])
group("object-additional-false", {"type": "object", "properties": {"x": {"type": "number"}},
                                  "additionalProperties": False},
      [{}, {"x": 1}, {"x": 1, "y": 2}, {"y": 2}, Raw('{"x":1,"x":"s"}')], options={"closed_objects_by_default": False})
group("object-additional-true", {"type": "object", "properties": {"x": {"type": "number"}},
                                 "additionalProperties": True},
      [{}, {"x": 1}, {"x": 1, "y": [2]}, {"y": {"z": None}}, {"x": "s"}, Raw('{"x":1,"x":"s"}')])
group("object-required-not-listed", {"type": "object", "properties": {"a": {"type": "integer"}},
                                     "required": ["a", "b"], "additionalProperties": {"type": "string"}},
      [{"a": 1, "b": "x"}, {"a": 1}, {"b": "x"}, {"a": 1, "b": 2}, {"a": 1, "b": "x", "c": "y"}])
group("object-required-closed-by-default", {"type": "object", "properties": {"a": {"type": "integer"}},
                                            "required": ["b"]},
      [{"a": 1, "b": [None]}, {"b": "x"}, {"a": 1}, {}, NC({"b": 1, "a": 1}), NC({"b": 1, "c": 2})])
group("any-of-unsatisfiable-branch", {"type": "string", "anyOf": [{"type": "integer"}, {"maxLength": 2}]},
      ["", "ab", "abc", 5, None])
group("object-any", {"type": "object"}, [{}, {"a": 1}, {"a": {"b": [1, {"c": None}]}}, [], "x",
                                         Raw('{"a":1,"a":2}', canonical=True)])
group("object-names", {"type": "object", "properties": {"": {"type": "integer"}, "a/b~c": {"type": "integer"},
                                                        "sp ace": {"type": "integer"}, "é😀": {"type": "integer"},
                                                        "tab\there": {"type": "integer"}},
                       "required": ["", "a/b~c", "sp ace", "é😀", "tab\there"]},
      [{"": 1, "a/b~c": 2, "sp ace": 3, "é😀": 4, "tab\there": 5}, {"": 1}, {"": "x", "a/b~c": 2, "sp ace": 3,
                                                                          "é😀": 4, "tab\there": 5}])
group("object-false-property", {"type": "object", "properties": {"a": {"type": "integer"}, "b": False}},
      [{}, {"a": 1}, {"a": 1, "b": 1}, {"b": None}])
group("object-nested", {"type": "object", "properties": {
    "user": {"type": "object", "properties": {"id": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
             "required": ["id", "tags"]},
    "active": {"type": "boolean"}}, "required": ["user", "active"]},
      [{"user": {"id": 1, "tags": []}, "active": True}, {"user": {"id": 1, "tags": ["a", "b"]}, "active": False},
       {"user": {"id": 1}, "active": True}, {"user": {"id": "1", "tags": []}, "active": True},
       Raw('{"user":{"id":1,"tags":[ "a" ,"b"]},"active":true}', canonical=True)])
group("object-untyped", {"properties": {"a": {"type": "integer"}}, "required": ["a"]},
      [{"a": 1}, {}, NC(5), NC("s"), NC(None)])

# ---------------------------------------------------------------- patternProperties / pattern
group("pattern-properties", {"type": "object", "properties": {"id": {"type": "integer"}},
                             "patternProperties": {"^x-[a-z]+$": {"type": "string"}}},
      [{"id": 1}, {"id": 1, "x-a": "s"}, {"id": 1, "x-a": "s", "x-bc": "t"}, {"x-a": "s"}, {"x-a": 1},
       NC({"id": 1, "y": "s"}), NC({"id": 1, "x-": "s"}), NC({"id": 1, "x-A": "s"}), Raw('{"\\u0078-a":"s"}', canonical=True),
       Raw('{"x-a":"s","x-a":1}')])
group("pattern-properties-required", {"type": "object", "patternProperties": {"^[0-9]+$": {"type": "boolean"}},
                                      "required": ["42"], "additionalProperties": False},
      [{"42": True}, {"42": True, "7": False}, {}, {"42": 1}, {"x": True}])
PATTERN_STRINGS = ["", "a", "abc", "ABC", "a1", "123-4567", "12-34567", "x123-4567y", "ab", "cab", "abab", "ba",
                   "a\"b", "\"", "\\", "é", "😀", "a\nb", "line1\nline2"]
for i, pattern in enumerate(["^[a-z]+$", "ab", "^\\d{3}-\\d{4}$", "\"", "\\\\", "^.$", "^(a|b)*$", "é|😀", "^a.b$",
                             "[^a-z]", "^$", "\\n"]):
    group(f"pattern-{i}", {"type": "string", "pattern": pattern},
          PATTERN_STRINGS + [Raw('"\\u0061"', canonical=True), Raw('"\\u0022"', canonical=True),
                             Raw('"\\ud83d\\ude00"', canonical=True), Raw('"a\\nb"', canonical=True),
                             Raw('"\\/"', canonical=True), Raw('"\\\\"', canonical=True)])

# ---------------------------------------------------------------- arrays
group("array-items", {"type": "array", "items": {"type": "integer"}},
      [[], [1], [1, 2, 3], [1, "a"], ["a"], Raw("[ 1 , 2 ]", canonical=True), Raw("[\n  1,\n  2\n]", canonical=True),
       Raw("[ ]", canonical=True), Raw("[1,]"), Raw("[,1]"), Raw("[  1]")])
group("array-bounds", {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 3},
      [[], ["a"], ["a", "b"], ["a", "b", "c"], ["a", "b", "c", "d"], ["a", 1]])
group("array-min-only", {"type": "array", "minItems": 2}, [[], [1], [1, None], [1, "a", {}], [[], []]])
group("array-untyped-items", {"type": "array"}, [[], [1, "a", None, [{}]], {}])
group("prefix-items", {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]},
      [[], [1], [1, "a"], [1, "a", None], [1, "a", True, [2]], ["a"], [1, 2], Raw("[1 ,\n \"a\"]", canonical=True)])
group("prefix-items-closed", {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
                              "items": False},
      [[], [1], [1, "a"], [1, "a", None], ["x"]])
group("prefix-items-tail", {"type": "array", "prefixItems": [{"type": "boolean"}], "items": {"type": "number"},
                            "minItems": 2, "maxItems": 4},
      [[], [True], [True, 1], [True, 1, 2.5], [True, 1, 2, 3], [True, 1, 2, 3, 4], [1, 1], [True, "x"]])
group("prefix-items-min", {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"},
                                                             {"type": "integer"}], "minItems": 2, "items": False},
      [[], [1], [1, 2], [1, 2, 3], [1, 2, 3, 4]])
group("array-unique-false", {"type": "array", "items": {"type": "integer"}, "uniqueItems": False},
      [[1, 1], [1, 2], []])
group("array-nested", {"type": "array", "items": {"type": "array", "items": {"type": "integer"}, "maxItems": 2}},
      [[], [[]], [[1, 2], [3]], [[1, 2, 3]], [[1], "x"]])

# ---------------------------------------------------------------- anyOf / oneOf / allOf
group("any-of", {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 10}]},
      ["", "ab", "abc", 10, 9, 100, None, 1.5])
group("any-of-siblings", {"type": "object", "properties": {"kind": {"type": "string"}}, "required": ["kind"],
                          "anyOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                                    {"properties": {"b": {"type": "string"}}, "required": ["b"]}]},
      [{"kind": "k", "a": 1}, {"kind": "k", "b": "s"}, {"kind": "k"}, {"a": 1}, {"kind": "k", "a": "s"}])
group("one-of-types", {"oneOf": [{"type": "string"}, {"type": "null"}, {"type": "array", "items": {"type": "integer"}}]},
      ["s", None, [], [1], ["x"], 1])
# null is valid under both branches, so invalid under oneOf.
group("one-of-shared-type", {"oneOf": [{"type": ["string", "null"]}, {"type": ["number", "null"]}]},
      ["s", "", 1, 1.5, -2, None, True, [], {}])
# Each branch keeps only the types no other branch accepts: the short
# strings (valid under the first branch only) are left out, a subset.
group("one-of-untyped-branch", {"oneOf": [{"type": "string"}, {"minLength": 2}]},
      [NC(""), NC("a"), "ab", 5, None, [1], {"a": 1}, True])
group("one-of-discriminated", {
    "oneOf": [
        {"type": "object", "properties": {"pet_type": {"const": "cat"}, "meows": {"type": "integer"}},
         "required": ["pet_type", "meows"]},
        {"type": "object", "properties": {"pet_type": {"const": "dog"}, "barks": {"type": "number"}},
         "required": ["pet_type", "barks"]},
        {"type": "object", "properties": {"pet_type": {"enum": ["fish", "eel"]}}, "required": ["pet_type"]}]},
    [{"pet_type": "cat", "meows": 3}, {"pet_type": "dog", "barks": 1.5}, {"pet_type": "fish"}, {"pet_type": "eel"},
     {"pet_type": "cat", "barks": 1}, {"pet_type": "cow"}, NC({"pet_type": "fish", "meows": 1}), {}])
group("all-of-merge", {"allOf": [
    {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
    {"properties": {"b": {"type": "string"}, "a": {"minimum": 5}}, "required": ["b"]}]},
    [{"a": 5, "b": "x"}, {"a": 4, "b": "x"}, {"a": 5}, {"b": "x"}, {"a": "5", "b": "x"}])
group("all-of-closed-part", {"allOf": [
    {"properties": {"a": {"type": "integer"}}, "additionalProperties": False},
    {"properties": {"b": {"type": "integer"}}}]},
    [{}, {"a": 1}, {"b": 1}, {"a": 1, "b": 1}])
group("all-of-additional-schema", {"allOf": [
    {"properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "integer", "minimum": 3}},
    {"properties": {"b": {"type": "integer"}}}]},
    [{}, {"a": 1}, {"b": 1}, {"b": 3}, {"a": 1, "b": 4}])
group("all-of-types", {"allOf": [{"type": ["integer", "string"]}, {"type": ["number", "null"]}, {"maximum": 3}]},
      [1, 3, 4, 2.5, "s", None, NC(3.0)])
group("all-of-enum", {"allOf": [{"enum": ["a", "b", "c"]}, {"enum": ["b", "c", "d"]}]}, ["a", "b", "c", "d"])

# ---------------------------------------------------------------- $ref
group("ref-defs", {"$defs": {"Address": {"type": "object", "properties": {"city": {"type": "string"},
                                                                          "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                                         "required": ["city"]}},
                   "type": "object", "properties": {"home": {"$ref": "#/$defs/Address"},
                                                    "work": {"$ref": "#/$defs/Address"}}, "required": ["home"]},
      [{"home": {"city": "X"}}, {"home": {"city": "X", "zip": "12345"}, "work": {"city": "Y"}},
       {"home": {"city": "X", "zip": "1234"}}, {"work": {"city": "Y"}}, {"home": {}}])
group("ref-definitions-recursive", {"definitions": {"Node": {"type": "object", "properties": {
    "value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/definitions/Node"}}},
    "required": ["value"]}}, "$ref": "#/definitions/Node"},
      [{"value": 1}, {"value": 1, "children": []}, {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]},
       {"value": 1, "children": [{"value": "x"}]}, {"value": 1, "children": [{}]}])
group("ref-root-recursive", {"type": "object", "properties": {"name": {"type": "string"},
                                                              "next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
                             "required": ["name", "next"]},
      [{"name": "a", "next": None}, {"name": "a", "next": {"name": "b", "next": None}}, {"name": "a"},
       {"name": "a", "next": {"name": 1, "next": None}}])
group("ref-escaped-pointer", {"$defs": {"a/b": {"type": "integer"}, "c~d": {"type": "string"},
                                        "e%f": {"type": "boolean"}, "sp ace": {"type": "null"}},
                              "type": "array",
                              "prefixItems": [{"$ref": "#/$defs/a~1b"}, {"$ref": "#/$defs/c~0d"},
                                              {"$ref": "#/$defs/e%25f"}, {"$ref": "#/$defs/sp%20ace"}],
                              "items": False},
      [[1, "s", True, None], [1, "s", True], ["s"], [1, 2], [1, "s", 1]])
group("ref-siblings", {"$defs": {"Base": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}},
                       "$ref": "#/$defs/Base", "properties": {"b": {"type": "string"}}, "required": ["b"]},
      [{"a": 1, "b": "x"}, {"a": 1}, {"b": "x"}])
group("ref-to-property", {"type": "object", "properties": {"a": {"type": "string", "maxLength": 2},
                                                           "b": {"$ref": "#/properties/a"}}},
      [{"a": "x", "b": "yy"}, {"b": "yyy"}, {}])
group("ref-chain", {"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/C"}, "C": {"type": "boolean"}},
                    "$ref": "#/$defs/A"}, [True, False, 1, None])

# ---------------------------------------------------------------- nullable / booleans
group("nullable", {"type": "object", "properties": {"n": {"type": "integer", "nullable": True},
                                                    "s": {"type": "string", "nullable": False}},
                   "required": ["n"]},
      [{"n": None}, {"n": 1}, {"n": "x"}, {"n": 1, "s": "s"}, {"n": 1, "s": None}])

# ---------------------------------------------------------------- formats


def leap(y):
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


DATES = []
for y in ["2000", "1900", "2024", "2023", "0000", "0004", "0100", "0400", "9999", "1600", "2100"]:
    for m in range(0, 14):
        for d in [0, 1, 9, 10, 19, 20, 27, 28, 29, 30, 31, 32]:
            DATES.append(f"{y}-{m:02d}-{d:02d}")
DATES += ["2024-1-01", "2024-01-1", "20240101", "2024/01/01", "2024-01-01T00:00:00Z", " 2024-01-01", "１２３４-01-01"]
TIMES = ["00:00:00Z", "23:59:59Z", "24:00:00Z", "23:60:00Z", "23:59:60Z", "12:30:45.123Z", "12:30:45.123456789Z",
         "12:30:45.1234567891Z", "12:30:45+05:30", "12:30:45-23:59", "12:30:45+24:00", "12:30:45+05:60",
         "12:30:45", "12:30Z", "1:30:45Z", "12:30:45z", "12:30:45.Z", "12:30:45.5+00:00", "08:00:00-00:00"]
EMAILS = ["a@b.co", "first.last@example.com", "x+tag@sub.domain.org", "noat", "a@", "@b", "a@b", "a..b@c.d",
          "a b@c.d", "_@a-b.c"]
UUIDS = ["123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000",
         "123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400", "g23e4567-e89b-12d3-a456-426614174000",
         "{123e4567-e89b-12d3-a456-426614174000}", "00000000-0000-0000-0000-000000000000"]
URIS = ["http://example.com", "https://example.com/a/b?c=d#e", "ftp://ftp.x.org:21/file.txt", "urn:isbn:123",
        "example.com", "/relative", "http://exa mple.com", "http://example.com/%zz", "http://example.com/%20",
        "mailto:a@b.c", "http://[::1]/", "a+b-c.d://h", "1http://x", "http://x.y/a:b@c!$&'()*+,;=",
        "http://x/?q=1/2?3#f/g?h", "http://x#a#b", "http://x/a b"]
IPV4S = ["0.0.0.0", "255.255.255.255", "256.1.1.1", "1.2.3", "1.2.3.4.5", "01.2.3.4", "1.2.3.04", "192.168.1.1",
         "1.2.3.-4", "a.b.c.d", "10.0.0.255", "249.250.251.252", "199.200.201.202"]
IPV6S = ["::", "::1", "1::", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "1::8", "1:2::7:8",
         "::ffff:1.2.3.4", "1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5::1.2.3.4", "::1.2.3.4", "1:2:3:4:5:6:7:8:9",
         "1:2:3:4:5:6:7", ":::", "1:::2", "1::2::3", "12345::", "fe80::1%eth0", "ABCD:ef01::", "0000:0000::0001",
         "1:2:3:4:5:6:7:1.2.3.4", "::1.2.3.256", "1::2:3:4:5:6:7", "::0:0:0:0:0:0:0"]
random.seed(47)
for _ in range(60):
    groups = [format(random.randrange(0, 65536), random.choice(["x", "X", "04x"])) for _ in range(8)]
    cut = random.randrange(0, 9)
    length = random.randrange(0, 9 - cut)
    if random.random() < 0.5 and cut + length <= 8:
        IPV6S.append(":".join(groups[:cut]) + "::" + ":".join(groups[cut + length:]))
    else:
        IPV6S.append(":".join(groups))
FORMATS = {"date": DATES, "time": TIMES, "date-time": [d + "T" + t for d, t in itertools.product(
    ["2024-02-29", "2023-02-29", "0000-01-01", "2024-12-31"], TIMES[:12])] + ["2024-01-01t00:00:00z"],
           "email": EMAILS, "uuid": UUIDS, "uri": URIS, "ipv4": IPV4S, "ipv6": IPV6S}


def promised(fmt, value):
    """Whether the format's grammar (a documented subset of its RFC, see
    core/grammar/json_schema_primitives.cpp) promises to produce `value`."""
    import re
    time_ok = re.search(r"[tz]", value) is None and re.search(r"\.[0-9]{10}", value) is None
    label = r"[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
    if fmt in ("time", "date-time"):
        return time_ok
    if fmt == "email":
        return re.fullmatch(r"[A-Za-z0-9_+%-]+(\.[A-Za-z0-9_+%-]+)*@" + label + r"(\." + label + r")+", value) is not None
    if fmt == "uri":
        return re.fullmatch(r"[a-zA-Z][a-zA-Z0-9+.-]*://" + label + r"(\." + label + r")*(:[0-9]{1,5})?(/.*)?", value) is not None
    if fmt == "uuid":
        return len(value) == 36
    return True


for name, values in FORMATS.items():
    group(f"format-{name}", {"type": "string", "format": name},
          [v if promised(name, v) else NC(v) for v in values] + [1, None])


def sample_texts(prepack, schema, options, seed, n):
    """Sentences of the schema's grammar from `prepack grammar sample` (a
    uniform walk over the bytes the matcher allows), complete ones only."""
    import subprocess
    import tempfile
    if options.get("closed_objects_by_default") is False:
        return []  # the CLI has no flag for this option
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
        json.dump(schema, f, ensure_ascii=False)
        path = f.name
    try:
        run = subprocess.run([prepack, "grammar", "sample", "--json-schema", path, "--n", str(n), "--seed", str(seed),
                              "--max-bytes", "300", "--stop-probability", "0.3"],
                             capture_output=True, text=True, timeout=60, check=False)
    finally:
        os.unlink(path)
    if run.returncode != 0:
        # An older binary may refuse what the tree now supports: no samples then.
        print(f"note: no samples: {run.stderr.strip()}", file=sys.stderr)
        return []
    texts = []
    for line in run.stdout.split("\n"):
        if not line:
            continue
        sample = json.loads(line)
        if sample["complete"] and sample["text"] not in texts:
            texts.append(sample["text"])
    return texts


def build(selected, prepack=None, samples=0):
    out = []
    for name, schema, instances, options in GROUPS:
        if selected and not any(s in name for s in selected):
            continue
        oracle_schema = openapi_to_jsonschema(schema)
        Draft202012Validator.check_schema(oracle_schema)
        validator = Draft202012Validator(oracle_schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
        cases = []
        for inst in instances:
            if isinstance(inst, Raw):
                text, canonical = inst.text, inst.canonical
            elif isinstance(inst, NC):
                text, canonical = canonical_text(inst.value), False
            else:
                text, canonical = canonical_text(inst), True
            cases.append({"text": text, "valid": verdict(validator, text), "canonical": canonical})
        if prepack and samples:
            for text in sample_texts(prepack, schema, options, len(out), samples):
                valid = verdict(validator, text)
                if not valid:
                    print(f"UNSOUND: {name}: the grammar produced the invalid {text!r}", file=sys.stderr)
                cases.append({"text": text, "valid": valid, "canonical": False, "sampled": True})
        entry = {"name": name, "schema": schema, "cases": cases}
        if options:
            entry["options"] = options
        out.append(entry)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=OUT)
    parser.add_argument("--only", nargs="*", help="groups whose name contains one of these")
    parser.add_argument("--prepack", help="a built prepack binary: add sentences its `grammar sample` draws from "
                                          "each schema's grammar, with the oracle's verdict (soundness probes)")
    parser.add_argument("--samples", type=int, default=12, help="samples drawn per schema with --prepack")
    args = parser.parse_args()
    missing = {"date", "date-time", "time", "uri", "email", "uuid", "ipv4", "ipv6"} - set(
        Draft202012Validator.FORMAT_CHECKER.checkers)
    if missing:
        sys.exit(f"jsonschema would not check the formats {sorted(missing)}: "
                 "pip install rfc3339-validator rfc3986-validator")
    groups = build(args.only, args.prepack, args.samples)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write('{"generator": "scripts/make_grammar_schema_goldens.py", "groups": [\n')
        f.write(",\n".join(json.dumps(g, ensure_ascii=False) for g in groups))
        f.write("\n]}\n")
    total = sum(len(g["cases"]) for g in groups)
    valid = sum(c["valid"] for g in groups for c in g["cases"])
    print(f"{args.out}: {len(groups)} schemas, {total} cases ({valid} valid)")


if __name__ == "__main__":
    main()
