#!/usr/bin/env python3
"""Writes tests/data/tokenizer/llama_cpp_pre_tokenizers.json: every
`tokenizer.ggml.pre` name llama.cpp accepts for a byte-level BPE vocabulary,
the pre-tokenizer type it maps the name onto, the vocabulary flags it sets
with it, and each type's split expressions. The test
tests/tokenizer_pretokenizer_names_test.cc checks prepack's table
(core/model/pretokenizer.cpp) against this data: every name is either
accepted with llama.cpp's expressions and flags, or refused by name.

The source is llama.cpp's src/llama-vocab.cpp as vendored by the PyPI
source package llama-cpp-python==0.3.36 (the same llama.cpp the other
tokenizer goldens come from):
    pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36
    tar xzf llama_cpp_python-0.3.36.tar.gz
    scripts/extract_llama_pre_table.py \\
        llama_cpp_python-0.3.36/vendor/llama.cpp/src/llama-vocab.cpp

It reads two places of that file: the chain of `tokenizer_pre == "NAME"`
tests in llama_vocab::impl::load (name -> LLAMA_VOCAB_PRE_TYPE_* and the
flags assigned in the same branch), and the `switch (vocab.get_pre_type())`
of llm_tokenizer_bpe's constructor (type -> regex_exprs). The expressions are
kept exactly as llama.cpp spells them (C string literals decoded).

Usage: extract_llama_pre_table.py LLAMA_VOCAB_CPP [--out PATH]
"""

import argparse
import ast
import json
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "tests", "data", "tokenizer", "llama_cpp_pre_tokenizers.json")

# Branch assignments that change how text is tokenized or what is added
# around it (clean_spaces only affects llama.cpp's detokenizer).
FLAG_PATTERNS = {
    "ignore_merges": re.compile(r"\bignore_merges\s*=\s*true"),
    "add_bos": re.compile(r"\badd_bos\s*=\s*true"),
    "add_sep": re.compile(r"\badd_sep\s*=\s*true"),
    "no_default_bos": re.compile(r"\bspecial_bos_id\s*=\s*LLAMA_TOKEN_NULL"),
    "escape_whitespaces": re.compile(r"\bescape_whitespaces\s*=\s*true"),
    "clean_spaces_off": re.compile(r"\bclean_spaces\s*=\s*false"),
}


def c_string_literals(text):
    """The C string literals in `text`, decoded (adjacent ones not joined)."""
    out = []
    for m in re.finditer(r'"((?:[^"\\]|\\.)*)"', text):
        body = m.group(1)
        # C and Python agree on the escapes llama.cpp uses here (\\, \", \r, \n).
        out.append(ast.literal_eval('"' + body + '"'))
    return out


def strip_line_comments(text):
    return "\n".join(line.split("//", 1)[0] if not line.lstrip().startswith('"') else line
                     for line in text.splitlines())


def parse_names(src):
    start = src.index("if (type == LLAMA_VOCAB_TYPE_BPE) {")
    end = src.index("} else if (type == LLAMA_VOCAB_TYPE_SPM) {", start)
    block = src[start:end]
    names = []
    # Each branch: a condition of tokenizer_pre tests, then a body up to the
    # next "} else".
    branch_re = re.compile(r"if\s*\(((?:\s*tokenizer_pre\s*==\s*\"[^\"]*\"\s*(?:\|\|)?)+)\)\s*\{(.*?)\}\s*else",
                           re.S)
    for m in branch_re.finditer(block):
        cond, body = m.group(1), m.group(2)
        type_m = re.search(r"pre_type\s*=\s*LLAMA_VOCAB_PRE_TYPE_(\w+)", body)
        if not type_m:
            sys.exit(f"no pre_type in the branch for {cond!r}")
        flags = {k: bool(p.search(body)) for k, p in FLAG_PATTERNS.items()}
        for name in re.findall(r'tokenizer_pre\s*==\s*"([^"]*)"', cond):
            names.append({"name": name, "type": type_m.group(1), **flags})
    return names


def parse_regexes(src):
    start = src.index("struct llm_tokenizer_bpe : llm_tokenizer {")
    end = src.index("std::vector<std::string> regex_exprs;", start)
    block = src[start:end]
    regexes = {}
    # Cases that share a body: collect labels until a body with regex_exprs.
    pending = []
    for part in re.split(r"(case LLAMA_VOCAB_PRE_TYPE_\w+:|default:)", block)[1:]:
        label = re.match(r"case LLAMA_VOCAB_PRE_TYPE_(\w+):|default:", part)
        if label:
            pending.append(label.group(1) or "DEFAULT")
            continue
        if "regex_exprs" not in part:
            continue
        body = part[part.index("regex_exprs"):]
        body = body[body.index("{") + 1:body.index("};")]
        exprs = c_string_literals(strip_line_comments(body))
        for t in pending:
            regexes[t] = exprs
        pending = []
    return regexes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("llama_vocab_cpp")
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    with open(args.llama_vocab_cpp, encoding="utf-8") as f:
        src = f.read()
    names = parse_names(src)
    regexes = parse_regexes(src)
    # "default" is the type of a missing key too; it has no branch label in
    # the switch (the `default:` arm).
    missing = sorted({n["type"] for n in names} - set(regexes))
    if missing:
        sys.exit(f"types without expressions: {missing}")
    seen = set()
    for n in names:
        if n["name"] in seen:
            sys.exit(f"duplicate name {n['name']}")
        seen.add(n["name"])
    out = {
        "source": "llama-cpp-python==0.3.36 vendor/llama.cpp/src/llama-vocab.cpp "
                  "(llama_vocab::impl::load and llm_tokenizer_bpe), by scripts/extract_llama_pre_table.py",
        "names": names,
        "regexes": {t: regexes[t] for t in sorted({n["type"] for n in names})},
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(names)} names, {len(out['regexes'])} types -> {args.out}")


if __name__ == "__main__":
    main()
