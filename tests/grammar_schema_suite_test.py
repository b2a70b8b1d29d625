#!/usr/bin/env python3
"""The JSON-Schema-Test-Suite (Debian's json-schema-test-suite package) as an
independent oracle for the JSON Schema front end: every schema of the suite
either compiles or is refused with an error, and, for each one that
compiles, no instance the suite labels invalid is accepted as a complete
text (`prepack grammar check`). The reverse (a valid instance rejected) is
allowed and counted: the grammar may hold a subset (properties in schema
order, closed objects by default, compact JSON here).

Usage: grammar_schema_suite_test.py PREPACK [SUITE_DIR]
Skips (exit 77, ctest's SKIP_RETURN_CODE) when the suite is not installed.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile


def main():
    prepack = sys.argv[1]
    suite = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/json-schema-test-suite/tests/draft7"
    files = sorted(glob.glob(os.path.join(suite, "*.json")))
    if not files:
        print(f"skipped: no JSON-Schema-Test-Suite at {suite} (apt-get install json-schema-test-suite)")
        return 77
    compiled = refused = accepted = rejected = valid_rejected = 0
    wrong = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "schema.json")
        for f in files:
            for group in json.load(open(f, encoding="utf-8")):
                with open(path, "w", encoding="utf-8") as out:
                    json.dump(group["schema"], out)
                gbnf = subprocess.run([prepack, "grammar", "gbnf", "--json-schema", path],
                                      capture_output=True, text=True, timeout=60)
                if gbnf.returncode != 0:
                    if not gbnf.stderr.strip():
                        wrong.append((os.path.basename(f), group["description"], "refused without a message"))
                    refused += 1
                    continue
                compiled += 1
                for case in group["tests"]:
                    text = json.dumps(case["data"], ensure_ascii=False, separators=(",", ":"))
                    check = subprocess.run([prepack, "grammar", "check", "--json-schema", path, "--text", text],
                                           capture_output=True, text=True, timeout=60)
                    verdict = json.loads(check.stdout)
                    if verdict["accepted"] and verdict["complete"]:
                        accepted += 1
                        if not case["valid"]:
                            wrong.append((os.path.basename(f), group["description"], case["description"], text))
                    else:
                        rejected += 1
                        valid_rejected += case["valid"]
    print(f"{len(files)} files: {compiled} schemas compiled, {refused} refused; instances: {accepted} accepted, "
          f"{rejected} rejected ({valid_rejected} of them valid); accepted but invalid: {len(wrong)}")
    for w in wrong:
        print("WRONG:", w)
    if compiled == 0:
        print("no schema compiled: the check would prove nothing")
        return 1
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
