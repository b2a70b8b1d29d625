#!/usr/bin/env python3
"""Writes tests/data/smollm2_reference.json: what llama.cpp (llama-cpp-python)
does with the real chat model SmolLM2-135M-Instruct (scripts/get_models.sh)
on a few conversations, for tests/chat_model_test.cc to hold prepack to.

For each conversation: the prompt text from llama-cpp-python's own Jinja
formatter on the GGUF's tokenizer.chat_template and its ids (tokenized as
llama-cpp-python's chat handler does: special tokens parsed, BOS only if the
formatter did not write it); the log-probabilities of the 20 likeliest first
tokens; and 48 greedy tokens. The last two twice, with flash attention on
and off: the spread between llama.cpp's own two settings is the tolerance
the test allows prepack (on this Q4_1 model near-ties make greedy answers
part after some tokens even between those two). Each greedy step also
records the margin between llama.cpp's two likeliest tokens, so a test can
tell a near-tie from a real disagreement.

Usage: VENV/bin/python scripts/make_smollm2_reference.py [MODEL] [OUT]
where VENV has llama-cpp-python 0.3.36 (scripts/bench_vs_llamacpp.sh makes one).
"""
import hashlib
import json
import sys

import llama_cpp
from llama_cpp import Llama
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

from llamacpp_greedy import greedy_run

MODEL = sys.argv[1] if len(sys.argv) > 1 else "build/models/SmolLM2-135M-Instruct.Q4_1.gguf"
OUT = sys.argv[2] if len(sys.argv) > 2 else "tests/data/smollm2_reference.json"
GREEDY_TOKENS = 48

CONVERSATIONS = [
    ("one_question", [{"role": "user", "content": "What is the capital of France?"}]),
    ("system_and_user", [{"role": "system", "content": "You are a terse assistant. Answer in one sentence."},
                         {"role": "user", "content": "Why is the sky blue?"}]),
    ("multi_turn", [{"role": "user", "content": "Name a fruit that is yellow."},
                    {"role": "assistant", "content": "A banana is yellow."},
                    {"role": "user", "content": "And one that is red?"}]),
    ("arithmetic", [{"role": "user", "content": "What is 12 plus 30? Answer with the number."}]),
    ("unicode", [{"role": "user", "content": "Translate 'café crème' to English, please. 🙂"}]),
    ("list_request", [{"role": "system", "content": "You help with cooking."},
                      {"role": "user", "content": "List three ingredients of a pancake."}]),
    ("code", [{"role": "user", "content": "Write a Python function that returns the square of x."}]),
]


def main():
    sha = hashlib.sha256(open(MODEL, "rb").read()).hexdigest()
    llms = {fa: Llama(model_path=MODEL, n_ctx=2048, n_threads=2, logits_all=True, flash_attn=fa, verbose=False)
            for fa in (True, False)}
    llm = llms[True]
    template = llm.metadata["tokenizer.chat_template"]
    bos = llm._model.token_get_text(llm.token_bos())
    eos = llm._model.token_get_text(llm.token_eos())
    fmt = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)
    eog = {i for i in range(llm.n_vocab()) if llama_cpp.llama_vocab_is_eog(llm._model.vocab, i)}
    cases = []
    for name, messages in CONVERSATIONS:
        res = fmt(messages=messages)
        ids = llm.tokenize(res.prompt.encode("utf-8"), add_bos=not res.added_special, special=True)
        case = {"name": name, "messages": messages, "prompt_text": res.prompt, "prompt_ids": ids}
        for fa, model in llms.items():
            top, greedy, margins = greedy_run(model, ids, GREEDY_TOKENS, eog)
            key = "flash_attn_on" if fa else "flash_attn_off"
            case["first_top_" + key] = top
            case["greedy_" + key] = greedy
            case["greedy_margin_" + key] = margins
        cases.append(case)
        print(name, len(ids), "prompt ids;", "greedy on/off:", len(case["greedy_flash_attn_on"]),
              len(case["greedy_flash_attn_off"]), file=sys.stderr)
    out = {"generator": "scripts/make_smollm2_reference.py", "model_sha256": sha,
           "llama_cpp_python": llama_cpp.__version__, "greedy_tokens": GREEDY_TOKENS,
           "eog_ids": sorted(eog), "cases": cases}
    with open(OUT, "w") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
