#!/usr/bin/env python3
"""prepack's greedy ids against llama.cpp's on any GGUF file, as ../shared/models/realshape/README.md compares them.

For a file with no reference outputs (a model downloaded or made here):
runs `prepack generate --temperature 0 --json` and llama.cpp (llama-cpp-python,
flash attention off and on) on four prompts of the kinds the README uses
(English, a fact, a line of Python, mixed scripts with digits and the text
<|eot_id|>) and reports, per
prompt, whether the prompt ids are equal and whether prepack's 32 greedy ids
equal one llama.cpp run's up to that run's first step whose top-1 margin is
below 0.05. Needs a venv with llama-cpp-python (scripts/bench_vs_llamacpp.sh
makes one); never a CI dependency. Exit status 1 when a prompt disagrees.

Usage: greedy_vs_llamacpp.py MODEL.gguf [--prepack build/bin/prepack] [--tokens 32]
(PREPACK_CPU in the environment picks prepack's kernels, e.g. avx2.)
"""

import argparse
import json
import subprocess
import sys

import numpy as np
from llama_cpp import Llama

PROMPTS = ["Once upon a time", "The capital of France is",
           "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)",
           "Zürich 東京 2024: ñ <|eot_id|> ok"]
NEAR_TIE = 0.05


def llama_greedy(llm, prompt, n):
    """Prompt ids, n greedy ids and the top-1 margin of each step."""
    ids = llm.tokenize(prompt.encode(), add_bos=True, special=False)
    llm.reset()
    llm.eval(ids)
    out, margins = [], []
    for _ in range(n):
        logits = np.asarray(llm.scores[llm.n_tokens - 1], dtype=np.float64)
        first, second = np.argsort(-logits)[:2]
        margins.append(float(logits[first] - logits[second]))
        out.append(int(first))
        llm.eval([int(first)])
    return ids, out, margins


def matches(got, want, margins):
    for i, w in enumerate(want):
        if margins[i] < NEAR_TIE:
            return True
        if i >= len(got) or got[i] != w:
            return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--prepack", default="build/bin/prepack")
    ap.add_argument("--tokens", type=int, default=32)
    a = ap.parse_args()
    runs = [Llama(model_path=a.model, n_ctx=256, n_threads=2, logits_all=True, verbose=False, flash_attn=f)
            for f in (False, True)]
    bad = 0
    for p in PROMPTS:
        r = subprocess.run([a.prepack, "generate", "--model", a.model, "--prompt", p, "--max-tokens", str(a.tokens),
                            "--temperature", "0", "--json"], capture_output=True, text=True)
        if r.returncode != 0:
            print(json.dumps({"prompt": p, "error": r.stderr.strip()[-300:]}))
            bad += 1
            continue
        got = json.loads(r.stdout.strip().splitlines()[-1])
        res = {"prompt": p}
        ok = False
        for name, llm in zip(("flash_off", "flash_on"), runs):
            ids, want, margins = llama_greedy(llm, p, a.tokens)
            same = ids == got["prompt_tokens"] and matches(got["tokens"], want, margins)
            res[name] = {"prompt_ids_equal": ids == got["prompt_tokens"], "greedy_match": same,
                         "first_near_tie": next((i for i, m in enumerate(margins) if m < NEAR_TIE), None)}
            ok = ok or same
        res["ok"] = ok
        bad += not ok
        print(json.dumps(res))
    print(json.dumps({"model": a.model, "prompts": len(PROMPTS), "agree": len(PROMPTS) - bad}))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
