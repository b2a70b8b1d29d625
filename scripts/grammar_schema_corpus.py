#!/usr/bin/env python3
"""Runs real JSON Schemas through prepack's JSON Schema front end and reports,
per source, how many compiled (the GBNF parsed and compiled by the matcher),
how many were refused and for which keyword, and how many failed otherwise.

Compile step: `prepack grammar check --json-schema FILE --text ''` (the
schema -> GBNF -> ParseGbnf -> Compile path every request takes; the check
result itself is ignored). A refusal is an error naming a keyword
(`unsupported keyword "not" at /properties/a`, `unsupported format "x"`,
`"oneOf" at ... is not supported`, ...); anything else non-zero is an error.

Sources (each skipped with a note when missing):
  suite       Debian's json-schema-test-suite (apt-get install json-schema-test-suite):
              every schema of tests/<draft>/*.json (draft7 by default: the
              Debian package has no draft2020-12)
  check       check-jsonschema's vendored schemas (pip install check-jsonschema):
              GitHub workflows, GitLab CI, compose, renovate, ...
  kubernetes  kubernetes-validate's schemas (pip install kubernetes-validate):
              one Kubernetes version, each resource bundled with the $defs of
              _definitions.json it refers to (the front end fetches nothing,
              so cross-file $refs are rewritten to local ones here)
  pydantic    model_json_schema() of a few realistic pydantic models (pip install pydantic)

Usage:
  /tmp/schema-venv/bin/python scripts/grammar_schema_corpus.py [--prepack build/bin/prepack]
      [--sources suite check kubernetes pydantic] [--limit N] [--json OUT] [--verbose]
"""

import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITE_DIR = "/usr/share/json-schema-test-suite/tests"


def site_packages_dir(package):
    try:
        module = __import__(package)
    except ImportError:
        return None
    return os.path.dirname(module.__file__)


# ------------------------------------------------------------------ sources

def suite_schemas(draft):
    folder = os.path.join(SUITE_DIR, draft)
    if not os.path.isdir(folder):
        return None, f"{folder} missing (apt-get install json-schema-test-suite)"
    out = []
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        with open(path, encoding="utf-8") as f:
            for i, case in enumerate(json.load(f)):
                out.append((f"{os.path.basename(path)}#{i} {case['description']}", case["schema"]))
    return out, None


def check_jsonschema_schemas():
    base = site_packages_dir("check_jsonschema")
    if base is None:
        return None, "check-jsonschema not installed"
    out = []
    for path in sorted(glob.glob(os.path.join(base, "builtin_schemas", "vendor", "*.json"))):
        with open(path, encoding="utf-8") as f:
            out.append((os.path.basename(path), json.load(f)))
    return out, None


def bundle_kubernetes(schema, definitions):
    """Rewrites "/api/_definitions.json#/$defs/X" refs to "#/$defs/X" and adds
    the $defs they reach (transitively)."""
    needed = set()
    pending = [schema]

    def rewrite(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "$ref" and isinstance(value, str) and ("#/$defs/" in value or "#/definitions/" in value):
                    # Cross-file refs and the definitions' own local ones.
                    name = value.split("#/$defs/")[-1] if "#/$defs/" in value else value.split("#/definitions/")[-1]
                    node[key] = "#/$defs/" + name
                    if name not in needed and name in definitions:
                        needed.add(name)
                        pending.append(definitions[name])
                else:
                    rewrite(value)
        elif isinstance(node, list):
            for item in node:
                rewrite(item)

    while pending:
        rewrite(pending.pop())
    bundled = dict(schema)
    bundled["$defs"] = {name: definitions[name] for name in sorted(needed)}
    return bundled


def kubernetes_schemas():
    base = site_packages_dir("kubernetes_validate")
    if base is None:
        return None, "kubernetes-validate not installed"
    versions = sorted(glob.glob(os.path.join(base, "kubernetes-json-schema", "v*-local-strict")),
                      key=lambda p: [int(x) for x in re.findall(r"\d+", os.path.basename(p))])
    if not versions:
        return None, "no schemas inside kubernetes-validate"
    folder = versions[-1]
    with open(os.path.join(folder, "_definitions.json"), encoding="utf-8") as f:
        definitions_doc = json.load(f)
    definitions = definitions_doc.get("$defs") or definitions_doc.get("definitions") or {}
    out = []
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        name = os.path.basename(path)
        if name.startswith("_") or name == "all.json":
            continue
        with open(path, encoding="utf-8") as f:
            schema = json.load(f)
        import copy
        out.append((f"{os.path.basename(folder)}/{name}", bundle_kubernetes(copy.deepcopy(schema), definitions)))
    return out, None


def pydantic_schemas():
    try:
        import datetime
        import enum
        import uuid
        from typing import Annotated, Dict, List, Literal, Optional, Union

        from pydantic import BaseModel, Field
    except ImportError:
        return None, "pydantic not installed"

    class Address(BaseModel):
        street: str
        city: str
        postal_code: Annotated[str, Field(pattern=r"^[0-9]{5}$")]
        country: str = "US"

    class Role(str, enum.Enum):
        admin = "admin"
        user = "user"

    class User(BaseModel):
        id: uuid.UUID
        name: Annotated[str, Field(min_length=1, max_length=80)]
        email: Optional[str] = None
        age: Annotated[int, Field(ge=0, le=150)]
        roles: List[Role] = []
        address: Optional[Address] = None
        created: datetime.datetime
        tags: Dict[str, str] = {}

    class Cat(BaseModel):
        pet_type: Literal["cat"]
        meows: int

    class Dog(BaseModel):
        pet_type: Literal["dog"]
        barks: float

    class Owner(BaseModel):
        pet: Annotated[Union[Cat, Dog], Field(discriminator="pet_type")]
        backup_pets: List[Union[Cat, Dog]] = []

    class TreeNode(BaseModel):
        value: int
        children: List["TreeNode"] = []

    class WeatherCall(BaseModel):
        location: str = Field(description="City and country, e.g. Paris, France")
        unit: Literal["celsius", "fahrenheit"] = "celsius"
        days: Annotated[int, Field(ge=1, le=14)] = 1

    class Invoice(BaseModel):
        number: str
        issued: datetime.date
        lines: Annotated[List[Dict[str, Union[int, float, str]]], Field(min_length=1)]
        total: Annotated[float, Field(ge=0)]
        paid: bool = False
        note: Optional[str] = None

    class Scores(BaseModel):
        probability: Annotated[float, Field(ge=0, le=1)]
        ratings: Annotated[List[Annotated[int, Field(ge=1, le=5)]], Field(max_length=10)]
        coordinates: tuple[float, float]

    models = [Address, User, Owner, TreeNode, WeatherCall, Invoice, Scores]
    return [(m.__name__, m.model_json_schema()) for m in models], None


SOURCES = {
    "suite": lambda args: suite_schemas(args.draft),
    "check": lambda args: check_jsonschema_schemas(),
    "kubernetes": lambda args: kubernetes_schemas(),
    "pydantic": lambda args: pydantic_schemas(),
}


# ------------------------------------------------------------------ compile step

REFUSAL_PATTERNS = [
    (re.compile(r'unsupported keyword "([^"]+)"'), "keyword {}"),
    (re.compile(r"unsupported format (\"[^\"]*\")"), "format {}"),
    (re.compile(r'"([A-Za-z$]+)" together with "([A-Za-z$]+)"'), "{} with {}"),
    (re.compile(r'"(oneOf)" at .* not provably disjoint'), "{} (overlapping branches)"),
    (re.compile(r"(\$ref) \"[^\"]*\" at .*: (only references inside|anchors|no )"), "{} (not local / unresolved)"),
    (re.compile(r'"(items)" as an array'), "{} as an array"),
    (re.compile(r'cannot combine "([^"]+)"'), "allOf: {}"),
    (re.compile(r'"(patternProperties)" at .* (with more than one|in an object open)'), "{}"),
    (re.compile(r'"([A-Za-z]+)" [^ ]+ at .* is not supported'), "bound {}"),
    (re.compile(r"(no value|admits no value|no integer satisfies|no number satisfies|is false|is empty)"),
     "unsatisfiable ({})"),
    (re.compile(r"(over the supported|deeper than|more than \d+ grammar rules)"), "limit ({})"),
]


def classify(message):
    for pattern, label in REFUSAL_PATTERNS:
        m = pattern.search(message)
        if m:
            return "refused", label.format(*m.groups())
    return "error", message.strip().splitlines()[0][:160] if message.strip() else "(no message)"


def compile_schema(prepack, schema):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
        json.dump(schema, f, ensure_ascii=False)
        path = f.name
    try:
        run = subprocess.run([prepack, "grammar", "check", "--json-schema", path, "--text", ""],
                             capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        return "error", "timeout (120 s)"
    finally:
        os.unlink(path)
    if run.returncode == 0:
        return "compiled", ""
    return classify(run.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prepack", default=os.path.join(REPO, "build", "bin", "prepack"))
    parser.add_argument("--sources", nargs="*", default=list(SOURCES))
    parser.add_argument("--draft", default="draft7", help="test-suite folder (draft4, draft6, draft7, ...)")
    parser.add_argument("--limit", type=int, default=0, help="at most this many schemas per source")
    parser.add_argument("--json", help="write every schema's outcome here")
    parser.add_argument("--verbose", action="store_true", help="print each schema's outcome")
    args = parser.parse_args()
    if not os.access(args.prepack, os.X_OK):
        sys.exit(f"{args.prepack} is not an executable: build the `prepack` target or pass --prepack")

    records = []
    for source in args.sources:
        schemas, why = SOURCES[source](args)
        if schemas is None:
            print(f"== {source}: skipped: {why}")
            continue
        if args.limit:
            schemas = schemas[:args.limit]
        outcomes = collections.Counter()
        reasons = collections.Counter()
        for name, schema in schemas:
            outcome, reason = compile_schema(args.prepack, schema)
            outcomes[outcome] += 1
            if reason:
                reasons[(outcome, reason)] += 1
            records.append({"source": source, "name": name, "outcome": outcome, "reason": reason})
            if args.verbose:
                print(f"  {source}: {name}: {outcome} {reason}")
        total = sum(outcomes.values())
        print(f"== {source}: {total} schemas: {outcomes['compiled']} compiled, {outcomes['refused']} refused, "
              f"{outcomes['error']} errors")
        for (outcome, reason), count in reasons.most_common(25):
            print(f"   {count:5d}  {outcome}: {reason}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(records, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
