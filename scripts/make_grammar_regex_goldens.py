#!/usr/bin/env python3
"""Writes tests/data/grammar/regex/goldens.json: for ECMAScript regular
expressions and test strings, whether the regex matches each string in full
("full") and somewhere in it, JSON Schema `pattern` style ("search"), as
Python's `re` decides; the reference for core/grammar/regex_to_gbnf.cpp
(tests/grammar_regex_test.cc).

Python's `re` reads a few things differently from ECMAScript, so each
pattern is rewritten for it first (to_python below): `.` excludes \\r
U+2028 U+2029 too, \\d \\w are ASCII, \\s is ECMAScript's Unicode list,
(?<n>...) is (?P<n>...), \\u{X} \\cX have no Python spelling, [] and [^]
mean nothing / anything, and a final $ must not match before a trailing
newline. When Node.js is on the PATH, every answer is also checked against
V8's own RegExp (flag u), and the script fails on any disagreement.

Each case also carries JSON spellings of the string (the text between the
quotes): json.dumps with and without ensure_ascii, every character as an
upper-case \\uXXXX escape, and '/' as '\\/'. They all decode to the string,
so a JSON-string-content grammar for the regex must accept each exactly
when the regex matches.

Usage: make_grammar_regex_goldens.py [--out PATH]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "tests", "data", "grammar", "regex", "goldens.json")

ECMA_SPACE = "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"

# Strings every pattern is tried on, besides its own.
COMMON = ["", "a", "ab", "abc", " ", "\n", "\r", "\u2028", "\u00a0", "é", "😀", "0", "a\nb", '"', "\\", "/"]

# (pattern, strings). The strings aim at both sides of each construct.
CASES = [
    ("abc", ["abc", "abcd", "ab", "xabc", "ABC"]),
    ("a|b|cd", ["a", "b", "cd", "c", "ab", "acd"]),
    ("^a+$", ["a", "aaaa", "", "ab", "ba"]),
    ("[a-z]+", ["hello", "Hello", "hello world", "z", "é"]),
    ("[^a-z]*", ["", "ABC", "AbC", "123 !", "é😀", "\n"]),
    ("\\d{3}-\\d{4}", ["555-1234", "55-1234", "5555-1234", "555-123a", "٣٣٣-1234", "x555-1234y"]),
    ("\\w+@\\w+\\.com", ["bob@example.com", "b_b9@x.com", "bob@examplecom", "bo b@x.com", "é@x.com"]),
    ("(ab)*c", ["c", "abc", "ababc", "abac", "ab"]),
    ("(?:ab|cd){2,3}", ["abab", "abcd", "cdcdab", "ab", "abababab", "abcdabc"]),
    ("a{2}", ["aa", "a", "aaa"]),
    ("a{2,}", ["aa", "aaaaaa", "a"]),
    ("a{0,2}b?", ["", "a", "aa", "aab", "b", "aaa", "ba"]),
    ("x*?y+?z??", ["y", "xxyyz", "xz", "yzz", "xyz"]),
    (".", ["a", "é", "😀", "\n", "\r", "\u2028", "\u2029", "\u0085", "ab", "\t", "\x00"]),
    ("a.c", ["abc", "a.c", "a\nc", "a\rc", "ac", "a😀c"]),
    ("\\s+", [" ", "\t\n\x0b\x0c\r", "\u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000\ufeff",
              "\u0085", "\u200b", "a b", "\u180e"]),
    ("[\\s\\d]+", ["1 2", "\u3000", "a"]),
    ("\\S+", ["abc", "a b", "\u00a0", "é😀", "\u0085"]),
    ("\\D\\W", ["a!", "1!", "aa", "é ", "\n\n"]),
    ("[\\w.-]+", ["a.b-c_d", "a/b", "-", ".", "é"]),
    ("[-a][a-]", ["-a", "a-", "--", "aa", "ba"]),
    ("[\\]\\\\^]+", ["]", "\\", "^", "]\\^", "a", "["]),
    ("\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\\\/", [".*+?()[]{}|^$\\/", ".*+?()[]{}|^$\\", "a"]),
    ("\\x41\\u0042\\t\\n\\r\\f\\v", ["AB\t\n\r\x0c\x0b", "AB\t\n\r\x0c", "ab\t\n\r\x0c\x0b"]),
    ("[\\u00e0-\\u00ff]+", ["àéÿ", "ÿĀ", "a", "\u00df"]),
    ("é+ü", ["éü", "éééü", "eü", "ü"]),
    ("\\u{1F600}+", ["😀", "😀😀", "😁", "😀a"]),
    ("\\uD83D\\uDE00", ["😀", "😁"]),
    ("[😀-😂]", ["😀", "😁", "😂", "😃", "😀😀"]),
    ("[^\\n]*", ["", "abc", "a\nb", "\r\u2028😀"]),
    ("(?<year>\\d{4})-(?<month>\\d{2})", ["2024-05", "2024-5", "24-05"]),
    ("((a|b)c)+|d", ["ac", "acbc", "d", "dd", "ab", "acd"]),
    ("\\{\"a\":\\d+\\}", ['{"a":1}', '{"a":123}', '{"a":}', '{"b":1}']),
    ("x{y}", ["x{y}", "xy", "x{y"]),
    ("a{,b", ["a{,b", "ab"]),
    ("^(\\+|-)?\\d+(\\.\\d+)?([eE][+-]?\\d+)?$", ["1", "-1.5", "+3e10", "1.", "1e", ".5", "1.5E-3", "--1"]),
    ("^[A-Z][a-z]*( [A-Z][a-z]*)*$", ["Hello World", "Hello world", "Hello  World", "H", ""]),
    ("(a|)+b", ["b", "ab", "aab", "ba"]),
    ("a()b|()", ["ab", "", "a"]),
    ("[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}", ["00:1a:2B:3c:4D:5e", "00:1a:2B:3c:4D", "00:1a:2B:3c:4D:5g"]),
    ("a\\0b", ["a\x00b", "a0b", "ab"]),
    ("\\cJ\\ci", ["\n\t", "J i"]),
    ("[\\b]", ["\x08", "b", "\\b"]),
    ("^$", ["", " ", "\n"]),
    (".+", ["😀😀", "a\u2029", "\ufeff"]),
    ("\\w+|^x$", ["x", "abc", "a x", "-x-", "!"]),
    ("^ab|cd$", ["ab", "abx", "xab", "cd", "xcd", "cdx", "xcdx"]),
    ("(a*)*", ["", "aaa", "ab"]),
    ("[\\x00-\\x1f\"\\\\]+", ["\x00\x1f", "\"\\", "\n\t\"", " ", "a"]),
    ("[/]\\/", ["//", "/", "\\/"]),
    ("[]|z", ["z", ""]),
    ("[^]{2}", ["ab", "\n\r", "😀\u2028", "a"]),
    ("[^\\s\\d]+", ["ab", "a b", "a1", "\u3000", "é"]),
    ("\\W+", ["!@#", "é", "_"]),
    ("[\\d-]+", ["1-2", "--", "a"]),
]


def to_python(pattern):
    """The ECMAScript pattern (as regex_to_gbnf.cpp supports it) in Python's syntax."""
    out, i, in_class, n = [], 0, False, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            e = pattern[i + 1]
            if e == "d":
                out.append("0-9" if in_class else "[0-9]")
            elif e == "w":
                out.append("A-Za-z0-9_" if in_class else "[A-Za-z0-9_]")
            elif e == "s":
                out.append(ECMA_SPACE if in_class else "[" + ECMA_SPACE + "]")
            elif e in "DWS":
                if in_class:
                    raise ValueError(f"{pattern}: \\{e} inside a class has no plain Python spelling")
                out.append({"D": "[^0-9]", "W": "[^A-Za-z0-9_]", "S": "[^" + ECMA_SPACE + "]"}[e])
            elif e == "u" and pattern[i + 2] == "{":
                end = pattern.index("}", i)
                out.append("\\U%08x" % int(pattern[i + 3:end], 16))
                i = end + 1
                continue
            elif e == "u" and re.match(r"[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}", pattern[i + 2:i + 14]):
                hi, lo = int(pattern[i + 2:i + 6], 16), int(pattern[i + 8:i + 12], 16)
                out.append("\\U%08x" % (0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)))
                i += 12
                continue
            elif e == "c":
                out.append("\\x%02x" % (ord(pattern[i + 2]) % 32))
                i += 3
                continue
            elif e == "0":
                out.append("\\x00")
            else:
                out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if pattern.startswith("[]", i):
            out.append("(?!)")
            i += 2
        elif pattern.startswith("[^]", i):
            out.append("[\\s\\S]")
            i += 3
        elif c == "[":
            in_class = True
            out.append("[")
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
        elif c == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")
            i += 1
        elif pattern.startswith("(?<", i) and pattern[i + 3] not in "=!":
            out.append("(?P<")
            i += 3
        elif c == "$":
            out.append("\\Z")   # Python's $ also matches before a final newline
            i += 1
        elif c == "{" and not re.match(r"\{\d+(,\d*)?\}", pattern[i:]):
            out.append("\\{")
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def json_spellings(s):
    """JSON spellings of s (between the quotes), all decoding to s."""
    plain = json.dumps(s, ensure_ascii=False)[1:-1]
    ascii_only = json.dumps(s, ensure_ascii=True)[1:-1]
    all_escaped = "".join("\\u%04X" % u for u in utf16_units(s))
    spellings = [plain, ascii_only, all_escaped, plain.replace("/", "\\/")]
    for sp in spellings:
        assert json.loads('"' + sp + '"') == s, (s, sp)
    return list(dict.fromkeys(spellings))


def utf16_units(s):
    data = s.encode("utf-16-be")
    return [int.from_bytes(data[k:k + 2], "big") for k in range(0, len(data), 2)]


def node_answers(pattern, strings):
    """V8's full and search answers, or None without node."""
    node = shutil.which("node")
    if node is None:
        return None
    script = r"""
const [pattern, strings] = JSON.parse(require('fs').readFileSync(0, 'utf8'));
function make(p, anchored) {
  const src = anchored ? '^(?:' + p + ')$' : p;
  try { return new RegExp(src, 'u'); } catch (e) { return new RegExp(src, ''); }
}
const full = make(pattern, true), search = make(pattern, false);
console.log(JSON.stringify(strings.map(s => [full.test(s), search.test(s)])));
"""
    out = subprocess.run([node, "-e", script], input=json.dumps([pattern, strings]), capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args()
    goldens, checked_with_node = [], shutil.which("node") is not None
    for pattern, own in CASES:
        strings = list(dict.fromkeys(own + COMMON))
        compiled = re.compile(to_python(pattern))
        answers = [(compiled.fullmatch(s) is not None, compiled.search(s) is not None) for s in strings]
        v8 = node_answers(pattern, strings)
        if v8 is not None:
            for s, mine, theirs in zip(strings, answers, v8):
                if list(mine) != theirs:
                    sys.exit(f"Python and V8 disagree on /{pattern}/ for {s!r}: {mine} vs {theirs}")
        goldens.append({
            "pattern": pattern,
            "cases": [{"text": s, "full": full, "search": search, "json": json_spellings(s)}
                      for s, (full, search) in zip(strings, answers)],
        })
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"generator": "scripts/make_grammar_regex_goldens.py", "checked_with_node": checked_with_node,
                   "patterns": goldens}, f, ensure_ascii=True, indent=1)
        f.write("\n")
    print(f"{args.out}: {len(goldens)} patterns, {sum(len(g['cases']) for g in goldens)} cases"
          + (" (V8 agrees)" if checked_with_node else " (no node: not cross-checked)"))


if __name__ == "__main__":
    main()
