#!/usr/bin/env python3
"""Writes tests/data/gemma3_270m_reference.json: what llama.cpp
(llama-cpp-python) does with the real Gemma-3-270M (pretrained, Q4_K_M;
scripts/get_models.sh assembles it from PyPI) on a few text prompts, for
tests/gemma_model_test.cc to hold prepack to.

The prompts exercise what Gemma 3 brings: its 262k SentencePiece vocabulary
(code, mixed scripts, whitespace runs), and sliding-window attention (five
of every six layers see only the last 512 keys): a 613-token story and a
~900-token document whose answer sits at its start, so the global layers
must carry it past the window. For each prompt: its ids (BOS added, special
tokens not parsed); the log-probabilities of the 20 likeliest first tokens;
32 greedy tokens (end of generation ignored) with llama.cpp's top-1 margin
at each step; all twice, flash attention on and off, whose spread is the
tolerance the test allows.

Usage: VENV/bin/python scripts/make_gemma_reference.py [MODEL] [OUT]
where VENV has llama-cpp-python 0.3.36 (scripts/bench_vs_llamacpp.sh makes one).
"""
import hashlib
import json
import random
import sys

import llama_cpp
from llama_cpp import Llama

from llamacpp_greedy import greedy_run

MODEL = sys.argv[1] if len(sys.argv) > 1 else "build/models/gemma-3-270m-q4_k_m.gguf"
OUT = sys.argv[2] if len(sys.argv) > 2 else "tests/data/gemma3_270m_reference.json"
GREEDY_TOKENS = 32


def story(seed, paragraphs, words_per):
    rng = random.Random(seed)
    words = ("the quick brown fox jumps over lazy dog river mountain city history science music garden "
             "window paper light stone water cloud bridge market forest").split()
    paras = [" ".join(rng.choice(words) for _ in range(words_per)).capitalize() + "." for _ in range(paragraphs)]
    return paras


def prompts():
    long_story = ("Here is a long story about many things.\n\n" + "\n\n".join(story(7, 14, 40)) +
                  "\n\nThe secret word mentioned at the very start of this story is")
    needle = ("Remember this: the password is BLUEBIRD-42.\n\n" + "\n\n".join(story(11, 20, 38)) +
              "\n\nQuestion: what is the password mentioned at the start?\nAnswer: the password is")
    return [
        ("capital", "The capital of France is"),
        ("once_upon", "Once upon a time"),
        ("python", "def fibonacci(n):\n    if n < 2:\n        return n\n    return"),
        ("mixed_scripts", "Hello 世界! Привет, мир. 12345 + 678 = <|eot_id|>   tabs\tand\n\nnewlines"),
        ("long_story", long_story),
        ("needle_past_window", needle),
    ]


def main():
    sha = hashlib.sha256(open(MODEL, "rb").read()).hexdigest()
    llms = {fa: Llama(model_path=MODEL, n_ctx=2048, n_threads=2, logits_all=True, flash_attn=fa, verbose=False)
            for fa in (True, False)}
    cases = []
    for name, text in prompts():
        ids = llms[True].tokenize(text.encode("utf-8"), add_bos=True, special=False)
        case = {"name": name, "prompt": text, "prompt_ids": ids}
        for fa, model in llms.items():
            top, greedy, margins = greedy_run(model, ids, GREEDY_TOKENS)
            key = "flash_attn_on" if fa else "flash_attn_off"
            case["first_top_" + key] = top
            case["greedy_" + key] = greedy
            case["greedy_margin_" + key] = margins
        cases.append(case)
        print(name, len(ids), "prompt ids; greedy off:",
              llms[False].detokenize(case["greedy_flash_attn_off"]).decode("utf-8", "replace")[:60], file=sys.stderr)
    out = {"generator": "scripts/make_gemma_reference.py", "model_sha256": sha,
           "llama_cpp_python": llama_cpp.__version__, "greedy_tokens": GREEDY_TOKENS, "cases": cases}
    with open(OUT, "w") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
