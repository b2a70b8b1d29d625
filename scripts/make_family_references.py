#!/usr/bin/env python3
"""Writes tests/data/families/reference.json: what llama.cpp does with the
random-weight family files of scripts/make_family_models.py, in the format
of ../shared/models/realshape/reference-f32.json (one case per file, prompt
and flash-attention setting: the prompt's ids with BOS as the vocabulary
says, 32 greedy ids with EOS ignored, llama.cpp's top-1 margin at every
step, the first position's top-5 (id, logit, logprob)), and
tests/data/families/models.sha256 (the files' sha256, `sha256sum -c` form).

Prompts: three short ones and two deterministic stories of 150-340 tokens
(by vocabulary), longer than the files' 32-key sliding windows.

llama.cpp runs with 2 threads, an f32 KV cache, flash attention off and on,
and a context of min(8192, context_length): for `phi3` (131072 over an
original 4096) that is above the original, so llama.cpp takes the LONG
LongRoPE factors; `phi3-short`'s 4096 is not, so it takes the short ones
(llama_model::get_rope_factors compares the context per sequence with
rope.scaling.original_context_length).

With --checks, also measures that what each file exercises matters at the
test's tolerances, from copies written with the feature taken out (the
generator's --override; written to a temporary folder, never kept): the
largest first-position logprob change over the flash-attention-off top-5
and whether the 32 greedy ids change, per prompt. These land in
reference.json's "checks".

Usage: VENV/bin/python scripts/make_family_references.py MODEL_DIR [OUT_DIR] [--checks]
where VENV has llama-cpp-python 0.3.36, numpy and gguf 0.19.0.
"""
import argparse
import hashlib
import json
import math
import os
import random
import subprocess
import sys
import tempfile

import llama_cpp
import numpy as np
from llama_cpp import Llama

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["gemma", "gemma2", "gemma3", "granite", "phi3", "phi3-short"]
CONTEXT = {"gemma": 8192, "gemma2": 8192, "gemma3": 8192, "granite": 4096, "phi3": 8192, "phi3-short": 4096}
GREEDY_TOKENS = 32


def story(seed, sentences):
    rng = random.Random(seed)
    words = ("the a quick brown fox jumps over lazy dog river mountain city old history science music garden "
             "window paper light stone water cloud bridge market forest children walked slowly towards home "
             "while evening bells rang across quiet streets").split()
    out = []
    for _ in range(sentences):
        out.append(" ".join(rng.choice(words) for _ in range(rng.randint(8, 16))).capitalize() + ".")
    return " ".join(out)


PROMPTS = [
    "Once upon a time",
    "The capital of France is",
    "def fibonacci(n):\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
    "Here is a story.\n\n" + story(48, 9) + "\n\nIn short,",
    "A longer story follows.\n\n" + story(148, 20) + "\n\nThe end. Now the summary:",
]


def log_softmax(row):
    """In float64, as the test's LogSoftmax."""
    row = np.asarray(row, dtype=np.float64)
    m = row.max()
    return row - (m + math.log(np.exp(row - m).sum()))


def top2(row):
    """The argmax (lowest id on ties, as np.argmax) and its margin over the runner-up."""
    best = int(np.argmax(row))
    rest = np.delete(row, best)
    return best, float(row[best] - rest.max())


def run_case(llm, ids):
    llm.reset()
    llm.eval(ids)
    row = np.array(llm.scores[len(ids) - 1], dtype=np.float32)
    lp = log_softmax(row)
    top5 = [int(i) for i in np.argsort(-row, kind="stable")[:5]]
    first = [{"id": i, "logit": float(row[i]), "logprob": float(lp[i])} for i in top5]
    greedy, margins = [], []
    for _ in range(GREEDY_TOKENS):
        tok, margin = top2(row)
        greedy.append(tok)
        margins.append(margin)
        llm.eval([tok])
        row = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
    return first, lp, greedy, margins


def open_model(path, n_ctx, flash):
    return Llama(model_path=path, n_ctx=n_ctx, n_threads=2, n_threads_batch=2, logits_all=True, flash_attn=flash,
                 type_k=0, type_v=0, verbose=False, seed=0)   # type 0: GGML_TYPE_F32


def references(model_dir):
    cases = []
    for name in MODELS:
        path = os.path.join(model_dir, name + ".gguf")
        for flash in (False, True):
            llm = open_model(path, CONTEXT[name], flash)
            for prompt in PROMPTS:
                ids = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=False)
                first, _, greedy, margins = run_case(llm, ids)
                cases.append({"model": name + ".gguf", "prompt": prompt, "flash_attn": "on" if flash else "off",
                              "n_ctx": CONTEXT[name], "prompt_tokens": ids, "greedy_ids": greedy,
                              "first_top5": first, "top1_margins": margins})
                near = [i for i, m in enumerate(margins) if m < 0.05]
                print("%-11s fa=%-3s %3d prompt ids, first near-tie at %s, %2d distinct greedy ids %s" %
                      (name, "on" if flash else "off", len(ids), near[0] if near else None, len(set(greedy)),
                       greedy[:6]), file=sys.stderr)
            del llm
    return cases


# What each file adds, taken out: (model, generator override or None, n_ctx or None, what it shows).
ABLATIONS = [
    ("gemma2", "gemma2:attn_softcap=100000.0", None, "attention soft-cap 3.0 bites"),
    ("gemma2", "gemma2:final_softcap=100000.0", None, "final soft-cap 8.0 bites"),
    ("gemma2", "gemma2:window=100000", None, "the 32-key window of layers 0 and 2 matters past 32 tokens"),
    ("gemma3", "gemma3:window=100000", None, "the 32-key window of layers 0-4 matters past 32 tokens"),
    ("gemma3", "gemma3:rope_linear=1.0", None, "the global layer's linear RoPE scaling (8) matters"),
    ("phi3", None, 4096, "LongRoPE's long factors differ from its short ones (n_ctx 4096 = the original)"),
]


def checks(model_dir, reference_cases):
    base = {(c["model"], c["prompt"]): c for c in reference_cases if c["flash_attn"] == "off"}
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, override, n_ctx, what in ABLATIONS:
            path = os.path.join(model_dir, name + ".gguf")
            if override:
                subprocess.run([sys.executable, os.path.join(HERE, "make_family_models.py"), "--vocab-dir",
                                os.path.join(HERE, "..", "..", "shared", "models", "vocab"), "--out-dir", tmp,
                                "--override", override], check=True, stdout=subprocess.DEVNULL)
                path = os.path.join(tmp, override.replace(":", "@", 1) + ".gguf")
            llm = open_model(path, n_ctx or CONTEXT[name], False)
            per_prompt = []
            for prompt in PROMPTS:
                ref = base[(name + ".gguf", prompt)]
                first, lp, greedy, _ = run_case(llm, ref["prompt_tokens"])
                moved = max(abs(lp[t["id"]] - t["logprob"]) for t in ref["first_top5"])
                per_prompt.append({"prompt_tokens": len(ref["prompt_tokens"]), "top5_logprob_change": moved,
                                   "greedy_changed": greedy != ref["greedy_ids"]})
            del llm
            out.append({"model": name + ".gguf", "without": override or ("n_ctx=%d" % n_ctx), "shows": what,
                        "per_prompt": per_prompt})
            print("check %-40s %s" % (override or n_ctx, [(p["prompt_tokens"], round(p["top5_logprob_change"], 4),
                                                             p["greedy_changed"]) for p in per_prompt]), file=sys.stderr)
            if override:
                os.remove(path)
    return out


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("out_dir", nargs="?", default=os.path.join(HERE, "..", "tests", "data", "families"))
    ap.add_argument("--checks", action="store_true", help="also measure each feature's effect (ablation copies)")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    cases = references(args.model_dir)
    out = {"source": "llama.cpp via llama-cpp-python %s, f32 KV, greedy, EOS ignored, 2 threads; "
                     "scripts/make_family_references.py" % llama_cpp.__version__,
           "generator": "scripts/make_family_models.py", "greedy_tokens": GREEDY_TOKENS, "cases": cases}
    if args.checks:
        out["checks"] = checks(args.model_dir, cases)
    with open(os.path.join(args.out_dir, "reference.json"), "w") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    with open(os.path.join(args.out_dir, "models.sha256"), "w") as f:
        for name in MODELS:
            f.write("%s  %s.gguf\n" % (sha256(os.path.join(args.model_dir, name + ".gguf")), name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
