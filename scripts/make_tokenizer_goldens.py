#!/usr/bin/env python3
"""Writes the tokenizer goldens under tests/data/tokenizer/, with llama.cpp
(llama-cpp-python 0.3.36, vocab_only) as the oracle:

  pre_swap_goldens.json   For every pre-tokenizer row prepack implements
      (one name per row of core/model/pretokenizer.cpp's table), the ids
      llama.cpp gives the text set below with the real Llama 3 vocabulary
      (../shared/models/vocab/ggml-vocab-llama-bpe.gguf) whose
      `tokenizer.ggml.pre` is replaced by that name: the same merges, split
      by each name's expressions and flags (add_special = false,
      parse_special = false). tests/tokenizer_pretokenizer_names_test.cc
      makes the same substitution in memory and compares.
  pre_split_goldens.json  For tekken, gpt-4o and qwen35, the words Python's
      `regex` module cuts the texts into with the same expressions
      (llama.cpp's spelling, applied in llama.cpp's order), an oracle for
      the split alone that needs no vocabulary.
  tekken_goldens.json     Mistral Nemo's tekken vocabulary (the GGUF
      scripts/make_tekken_vocab.py makes from mistral-common's
      tekken_240911.json): llama.cpp's ids and mistral-common's own
      encoder's ids for the text set.
  gemma3_goldens.json     Gemma 3's SentencePiece vocabulary (262,144
      tokens, read from build/models/gemma-3-270m-q4_k_m.gguf, which
      scripts/get_models.sh fetches): ids for add_special on/off and
      parse_special on/off, and llama.cpp's detokenization.

The text set: llama.cpp's own tokenizer test texts (../shared/models/vocab/
*.inp) and the texts below (code, many scripts, emoji, right-to-left text,
combining marks in decomposed form, whitespace runs, special-token
spellings).

Usage: make_tokenizer_goldens.py [--only pre_swap,pre_split,gemma3,tekken]
                                 [--mistral-python PY]
  needs: /tmp/venv-llama (llama-cpp-python 0.3.36) for pre_swap and gemma3,
  a Python with `regex` for pre_split (run it with that interpreter or pass
  --regex-python).
"""

import argparse
import glob
import json
import os
import struct
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_VOCAB = os.path.join(os.path.dirname(REPO), "shared", "models", "vocab")
OUT_DIR = os.path.join(REPO, "tests", "data", "tokenizer")
GEMMA = os.path.join(REPO, "build", "models", "gemma-3-270m-q4_k_m.gguf")
TEKKEN = os.path.join(REPO, "build", "models", "vocab-tekken-240911.gguf")

# Escapes keep the exact code points (decomposed accents, unusual spaces)
# whatever an editor does to the file.
OWN_TEXTS = [
    "Hello world",
    " Hello World",
    "HELLO wORLD HeLLo",
    "CamelCaseWordsAndXMLHttpRequest parseJSONString",
    "I'm you're he'll THEY'RE we'VE",
    "\u00c9COLE \u00e9cole \u00c9cole \u0392\u0391\u03a3\u0399\u039b\u0399\u039a\u0397 \u041c\u041e\u0421\u041a\u0412\u0410 \u041c\u043e\u0441\u043a\u0432\u0430",
    "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 Stra\u00dfe \u0130stanbul",
    "Cafe\u0301 decomposed: e\u0301 a\u0300 n\u0303 o\u0308",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e \u0939\u093f\u0902\u0926\u0940",
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a \u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22",
    "\u4f60\u597d\u4e16\u754c\uff0c\u8fd9\u662f\u4e00\u4e2a\u6d4b\u8bd5\u3002\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3067\u3059\u3002",
    "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8\uc785\ub2c8\ub2e4",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645 \u0661\u0662\u0663\u0664\u0665",
    "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd 123",
    "emoji \U0001f600\U0001f680 \U0001f468\u200d\U0001f469\u200d\U0001f467 flags \U0001f1eb\U0001f1f7 \u2764\ufe0f",
    "1 12 123 1234 12345 123456 1234567 3.14159 1,000,000 0x1F",
    "\u0661\u0662\u0663\u0664 \u096a\u096b\u096c \uff11\uff12\uff13 \u2460\u2461",
    "   leading spaces\tand\ttabs\n\nnewlines\r\nCRLF  trailing   ",
    "a\u00a0b\u2003c\u3000d\u200be\u2028f\u0085g",
    "\n\n\n\t\t    \n ",
    "                                        many spaces",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }  // dot\n#include <vector>",
    "<html><body><table><tr><td>cell</td></tr></table></body></html>",
    "path/to/file.txt https://example.com/a?b=c&d=e#frag user@example.com",
    "$100 + 50% = <<value>> ^^ ~~ || `code` \"quoted\" 'single'",
    "<s> </s> <unk> <pad> <mask> <bos> <eos> <start_of_turn>user\nHi<end_of_turn>",
    "<|endoftext|> <|im_start|>assistant <|eot_id|> [INST] [/INST]",
    "\u2581already\u2581escaped\u2581spaces",
    "Mixed\u0301Case\u00c0\u00c9\u00cfWords\u00e0\u00e9\u00efEnd",
]

# Gemma only: its user-defined and control tokens in context.
GEMMA_EXTRA = [
    "<start_of_turn>user\nWhat is the capital of France?<end_of_turn>\n<start_of_turn>model\n",
    "<bos>text after a written bos",
    "<start_of_image> <end_of_image> <image_soft_token>",
    "<table><thead><tr><th>a</th></tr></thead><tbody></tbody></table>",
    "<h1>Title</h1>\n<p>para</p><br><hr>",
    "\t\t\t\ttabs\n\n\n\n\nnewlines",
    "  two  spaces   three    four     five",
    "[multimodal] <mask> [@BOS@] <unused0> <unused99>",
]


def read_vocab_texts():
    texts = []
    for path in sorted(glob.glob(os.path.join(SHARED_VOCAB, "*.gguf.inp"))):
        with open(path, encoding="utf-8") as f:
            parts = f.read().split("\n__ggml_vocab_test__\n")
        if parts and parts[-1] == "":
            parts.pop()
        texts.extend(parts)
    seen, out = set(), []
    for t in texts:
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


def text_set():
    out, seen = [], set()
    for t in read_vocab_texts() + OWN_TEXTS:
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


# ---- GGUF: replace one string value (vocabulary-only files) ---------------

def replace_string_kv(data, key, value):
    """`data` (GGUF bytes) with the string value of `key` replaced."""
    needle = struct.pack("<Q", len(key)) + key.encode()
    at = data.find(needle)
    if at < 0:
        raise SystemExit(f"{key} not found")
    at += len(needle)
    (vtype,) = struct.unpack_from("<I", data, at)
    if vtype != 8:
        raise SystemExit(f"{key} is not a string")
    (n,) = struct.unpack_from("<Q", data, at + 4)
    start, end = at + 12, at + 12 + n
    enc = value.encode()
    return data[:at + 4] + struct.pack("<Q", len(enc)) + enc + data[end:]


def pre_rows():
    """One representative name per row of prepack's table, read from the
    C++ source so that a new row gets goldens too."""
    src = open(os.path.join(REPO, "core", "model", "pretokenizer.cpp"), encoding="utf-8").read()
    table = src[src.index("const std::vector<Family>& Families()"):src.index("struct Refused")]
    rows = []
    for m in __import__("re").finditer(r"\.names = \{\"([^\"]+)\"", table):
        rows.append(m.group(1))
    return rows


def make_pre_swap(texts):
    import llama_cpp
    base = open(os.path.join(SHARED_VOCAB, "ggml-vocab-llama-bpe.gguf"), "rb").read()
    goldens = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in pre_rows():
            path = os.path.join(tmp, "vocab.gguf")
            with open(path, "wb") as f:
                f.write(replace_string_kv(base, "tokenizer.ggml.pre", name))
            llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
            goldens[name] = [llm.tokenize(t.encode(), add_bos=False, special=False) for t in texts]
            del llm
            print(f"pre_swap: {name}", file=sys.stderr)
    return {
        "source": "llama-cpp-python 0.3.36, ggml-vocab-llama-bpe.gguf with tokenizer.ggml.pre replaced; "
                  "add_special=false parse_special=false; scripts/make_tokenizer_goldens.py",
        "base_vocab": "ggml-vocab-llama-bpe.gguf",
        "texts": texts,
        "ids": goldens,
    }


# ---- the split alone, by Python's `regex` ----------------------------------

WHITE_SPACE = ("\\x09-\\x0d\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f"
               "\\u205f\\u3000")


def to_python(expr):
    """llama.cpp's expression for the `regex` module: \\s as Unicode
    White_Space (what llama.cpp matches), letter sub-categories as \\p{L}
    (llama.cpp's collapsed classes), $ as \\Z."""
    out, i, in_class = [], 0, False
    while i < len(expr):
        c = expr[i]
        if c == "\\" and i + 1 < len(expr):
            n = expr[i + 1]
            if n == "s":
                out.append(WHITE_SPACE if in_class else "[" + WHITE_SPACE + "]")
            elif n == "S" and not in_class:
                out.append("[^" + WHITE_SPACE + "]")
            elif n == "p" and expr[i + 2:i + 4] in ("{L",) and expr[i + 5:i + 6] == "}" and expr[i + 4] in "ultmo":
                out.append("\\p{L}")
                i += 6
                continue
            else:
                out.append(c + n)
            i += 2
            continue
        if not in_class and c == "[":
            in_class = True
        elif in_class and c == "]":
            in_class = False
        elif not in_class and c == "$":
            out.append("\\Z")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def split_words(text, exprs):
    import regex
    pieces = [text] if text else []
    for e in exprs:
        rx = regex.compile(to_python(e))
        nxt = []
        for p in pieces:
            gap = 0
            for m in rx.finditer(p):
                if m.end() == m.start():
                    continue
                if m.start() > gap:
                    nxt.append(p[gap:m.start()])
                nxt.append(m.group(0))
                gap = m.end()
            if gap < len(p):
                nxt.append(p[gap:])
        pieces = nxt
    return pieces


def make_pre_split(texts):
    table = json.load(open(os.path.join(OUT_DIR, "llama_cpp_pre_tokenizers.json"), encoding="utf-8"))
    types = {n["name"]: n["type"] for n in table["names"]}
    out = {"source": "Python regex module on llama.cpp's expressions (llama_cpp_pre_tokenizers.json); "
                     "scripts/make_tokenizer_goldens.py",
           "texts": texts, "words": {}}
    for name in ("tekken", "gpt-4o", "qwen35"):
        exprs = table["regexes"][types[name]]
        out["words"][name] = [split_words(t, exprs) for t in texts]
    return out


# ---- Gemma 3 -----------------------------------------------------------------

def make_gemma3(texts):
    import llama_cpp
    llm = llama_cpp.Llama(model_path=GEMMA, vocab_only=True, verbose=False)
    cases = []
    for t in texts + GEMMA_EXTRA:
        case = {"text": t}
        for add in (False, True):
            for special in (False, True):
                ids = llm.tokenize(t.encode(), add_bos=add, special=special)
                case[f"ids_add{int(add)}_special{int(special)}"] = ids
        plain = case["ids_add0_special0"]
        case["detok"] = llm.detokenize(plain, special=False).decode("utf-8", errors="replace")
        cases.append(case)
    return {
        "source": "llama-cpp-python 0.3.36 on gemma-3-270m-q4_k_m.gguf (vocab_only); "
                  "scripts/make_tokenizer_goldens.py",
        "vocab_size": llm.n_vocab(),
        "cases": cases,
    }


# ---- tekken (Mistral Nemo) ------------------------------------------------------

def make_tekken(texts, mistral_python):
    """llama.cpp's ids on the GGUF scripts/make_tekken_vocab.py writes, and
    mistral-common's own encoder's ids (run by `mistral_python`)."""
    import llama_cpp
    llm = llama_cpp.Llama(model_path=TEKKEN, vocab_only=True, verbose=False)
    llama = [llm.tokenize(t.encode(), add_bos=False, special=False) for t in texts]
    with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8", delete=False) as f:
        json.dump(texts, f)
        texts_path = f.name
    try:
        out = subprocess.run([mistral_python, os.path.join(REPO, "scripts", "make_tekken_vocab.py"),
                              "--ids", texts_path], check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(texts_path)
    mistral = json.loads(out)
    agree = sum(a == b for a, b in zip(llama, mistral))
    print(f"tekken: llama.cpp and mistral-common agree on {agree} of {len(texts)} texts", file=sys.stderr)
    return {
        "source": "llama-cpp-python 0.3.36 (vocab_only, add_special=false, parse_special=false) on "
                  "vocab-tekken-240911.gguf from scripts/make_tekken_vocab.py, and mistral-common's "
                  "Tekkenizer.encode(bos=False, eos=False); scripts/make_tokenizer_goldens.py",
        "vocab": "vocab-tekken-240911.gguf",
        "texts": texts,
        "llama_cpp": llama,
        "mistral_common": mistral,
    }


def write(name, obj):
    path = os.path.join(OUT_DIR, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=True, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {path}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="pre_swap,pre_split,gemma3,tekken")
    ap.add_argument("--mistral-python", default="/tmp/venv-tok/bin/python",
                    help="a Python with mistral-common (for the tekken oracle)")
    args = ap.parse_args()
    only = set(args.only.split(","))
    texts = text_set()
    if "pre_swap" in only:
        write("pre_swap_goldens.json", make_pre_swap(texts))
    if "pre_split" in only:
        write("pre_split_goldens.json", make_pre_split(texts))
    if "gemma3" in only:
        write("gemma3_goldens.json", make_gemma3(texts))
    if "tekken" in only:
        write("tekken_goldens.json", make_tekken(texts, args.mistral_python))


if __name__ == "__main__":
    main()
