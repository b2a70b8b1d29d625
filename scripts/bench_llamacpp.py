#!/usr/bin/env python3
"""llama.cpp's side of scripts/bench_vs_llamacpp.sh (issue 22), in this process.

  bench_llamacpp.py MODEL.gguf [--threads 2] [--prompt-tokens 512] [--decode-tokens 32] [--seqs 16] [--reps 1]
  bench_llamacpp.py quantize IN.gguf OUT.gguf q8_0|q4_k_m|q6_k|q5_k_m|q4_0 [--threads 2]

Needs a venv with llama-cpp-python (its low-level ctypes API: llama_cpp.llama_cpp).
Bench prints one JSON object on stdout; llama.cpp's own log goes nowhere unless
--verbose (its last lines are kept for error messages).

What is measured, mirroring `prepack bench forward` so the ratios mean something:
  prefill       one llama_decode of a PROMPT-token batch of random ids (n_batch =
                n_ubatch = PROMPT, logits for the last token only), on an empty cache
  decode        DECODE single-token llama_decode steps after that prompt
  batch decode  SEQS sequences that each hold the same PROMPT-token context (copied
                from sequence 0 with llama_memory_seq_cp, as batched-bench -pps does,
                and as prepack copies its KV blocks), then DECODE steps, each ONE
                llama_decode of SEQS tokens (one per sequence, logits for all)
Tokens fed while decoding are random ids, not sampled ones: neither engine's
sampler is timed. Each phase runs once untimed (warm-up) and then REPS timed
times; the median is reported. Everything runs on llama.cpp's default context
and model parameters (mmap-backed load, f16 KV cache, flash attention auto,
per-sequence KV streams) except the sizes above.
"""

import argparse
import ctypes
import json
import os
import random
import statistics
import sys
import time
from collections import deque

import llama_cpp
import llama_cpp.llama_cpp as L

FTYPES = {"q8_0": L.LLAMA_FTYPE_MOSTLY_Q8_0, "q4_k_m": L.LLAMA_FTYPE_MOSTLY_Q4_K_M, "q6_k": L.LLAMA_FTYPE_MOSTLY_Q6_K,
          "q5_k_m": L.LLAMA_FTYPE_MOSTLY_Q5_K_M, "q4_0": L.LLAMA_FTYPE_MOSTLY_Q4_0,
          "q4_1": L.LLAMA_FTYPE_MOSTLY_Q4_1, "q5_0": L.LLAMA_FTYPE_MOSTLY_Q5_0, "q5_1": L.LLAMA_FTYPE_MOSTLY_Q5_1}

# ---- llama.cpp's log: silenced, but the tail is kept to explain a failure --------
_log_tail = deque(maxlen=20)
_verbose = False


@L.llama_log_callback
def _log(level, text, user_data):
    s = text.decode("utf-8", "replace")
    _log_tail.append(s)
    if _verbose:
        sys.stderr.write(s)


def _error(msg):
    tail = "".join(_log_tail).strip().splitlines()[-3:]
    return msg + (": " + " | ".join(tail) if tail else "")


def proc_status_kib(*keys):
    """Fields of /proc/self/status in KiB (VmRSS: now, VmHWM: peak, RssAnon / RssFile: split)."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in keys:
                out[k] = int(v.split()[0])
    return out


def mib(kib):
    return round(kib / 1024.0, 1)


# ---- quantize mode ------------------------------------------------------------------

def quantize(argv):
    ap = argparse.ArgumentParser(prog="bench_llamacpp.py quantize")
    ap.add_argument("inp")
    ap.add_argument("out")
    ap.add_argument("type", choices=sorted(FTYPES))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args(argv)
    global _verbose
    _verbose = a.verbose
    L.llama_log_set(_log, ctypes.c_void_p(0))
    L.llama_backend_init()
    p = L.llama_model_quantize_default_params()
    p.ftype = FTYPES[a.type]
    p.nthread = a.threads
    tmp = a.out + ".tmp"   # renamed at the end: a killed run leaves no complete-looking file
    t0 = time.perf_counter()
    rc = L.llama_model_quantize(a.inp.encode(), tmp.encode(), ctypes.byref(p))
    if rc != 0:
        print(json.dumps({"mode": "quantize", "out": a.out, "error": _error("llama_model_quantize returned %d" % rc)}))
        return 1
    os.replace(tmp, a.out)
    res = {"mode": "quantize", "in": a.inp, "out": a.out, "type": a.type, "seconds": round(time.perf_counter() - t0, 1),
           "bytes": os.path.getsize(a.out)}
    try:   # which tensor types the mix chose (Q4_K_M keeps some tensors at Q6_K); gguf is in the same venv
        import gguf
        counts = {}
        for t in gguf.GGUFReader(a.out).tensors:
            counts[t.tensor_type.name] = counts.get(t.tensor_type.name, 0) + 1
        res["tensor_types"] = counts
    except ImportError:
        pass
    print(json.dumps(res))
    return 0


# ---- bench mode -----------------------------------------------------------------------

class Batch:
    """A llama_batch for up to n tokens, one sequence id each."""

    def __init__(self, n):
        self.b = L.llama_batch_init(n, 0, 1)

    def fill(self, items):
        """items: (token, pos, seq, wants_logits) tuples."""
        b = self.b
        for i, (tok, pos, seq, logits) in enumerate(items):
            b.token[i], b.pos[i], b.n_seq_id[i], b.seq_id[i][0], b.logits[i] = tok, pos, 1, seq, int(logits)
        b.n_tokens = len(items)
        return b

    def free(self):
        L.llama_batch_free(self.b)


def timed(fn, reps):
    """Median seconds of reps calls of fn after one untimed warm-up call."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench(argv):
    ap = argparse.ArgumentParser(prog="bench_llamacpp.py", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--decode-tokens", type=int, default=32)
    ap.add_argument("--seqs", type=int, default=16, help="sequences in the batched decode (1 = skip it)")
    ap.add_argument("--reps", type=int, default=1, help="timed runs of each phase (median reported)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--verbose", action="store_true", help="show llama.cpp's log on stderr")
    a = ap.parse_args(argv)
    global _verbose
    _verbose = a.verbose
    P, D, S = a.prompt_tokens, a.decode_tokens, max(1, a.seqs)
    res = {"engine": "llama.cpp", "model": a.model, "llama_cpp_python": llama_cpp.__version__, "threads": a.threads,
           "prompt_tokens": P, "decode_tokens": D, "decode_batch": S}

    L.llama_log_set(_log, ctypes.c_void_p(0))
    L.llama_backend_init()
    res["system_info"] = L.llama_print_system_info().decode().strip()

    mp = L.llama_model_default_params()   # defaults: load_mode auto (mmap), extra (repacked) buffer types on
    res["load_mode"] = mp.load_mode
    t0 = time.perf_counter()
    model = L.llama_model_load_from_file(a.model.encode(), mp)
    if not model:
        res["error"] = _error("llama_model_load_from_file failed")
        print(json.dumps(res))
        return 1
    cp = L.llama_context_default_params()
    # One KV stream per sequence (llama.cpp's default, non-unified), each holding
    # a prompt plus its decoded tokens: like prepack's one block table per sequence.
    cp.n_seq_max = S
    cp.n_ctx = S * (P + D + 1)
    cp.n_batch = cp.n_ubatch = max(P, S)
    cp.n_threads = cp.n_threads_batch = a.threads
    ctx = L.llama_init_from_model(model, cp)
    if not ctx:
        res["error"] = _error("llama_init_from_model failed")
        print(json.dumps(res))
        return 1
    res["load_seconds"] = round(time.perf_counter() - t0, 2)
    res["rss_after_load_mib"] = mib(proc_status_kib("VmRSS")["VmRSS"])
    desc = ctypes.create_string_buffer(256)
    L.llama_model_desc(model, desc, len(desc))
    res.update(model_desc=desc.value.decode(), model_bytes=L.llama_model_size(model),
               model_params=L.llama_model_n_params(model), n_ctx=L.llama_n_ctx(ctx),
               kv_type="f16" if cp.type_k == L.GGML_TYPE_F16 else str(cp.type_k), flash_attn_type=cp.flash_attn_type)

    mem = L.llama_get_memory(ctx)
    n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))
    rng = random.Random(a.seed)
    # Random ids below the Llama-3 special tokens (128000+): ordinary text tokens.
    ids = lambda n: [rng.randrange(3, min(n_vocab, 128000)) for _ in range(n)]
    prompt, feed = ids(P), ids(D + 1)
    batch = Batch(max(P, S))

    def decode(items, what):
        rc = L.llama_decode(ctx, batch.fill(items))
        if rc != 0:
            raise RuntimeError(_error("llama_decode (%s) returned %d" % (what, rc)))
        L.llama_synchronize(ctx)

    def prefill():
        L.llama_memory_clear(mem, False)
        decode([(t, i, 0, i == P - 1) for i, t in enumerate(prompt)], "prefill")

    def decode1():
        L.llama_memory_seq_rm(mem, 0, P, -1)     # back to the bare prompt
        for i in range(D):
            decode([(feed[i], P + i, 0, True)], "decode")

    def decode_batch():
        L.llama_memory_seq_rm(mem, -1, P, -1)    # every sequence back to the bare prompt
        for i in range(D):
            decode([(feed[i], P + i, s, True) for s in range(S)], "batch decode")

    try:
        res["prefill_seconds"] = timed(prefill, a.reps)
        res["prefill_tokens_per_s"] = P / res["prefill_seconds"]
        if D > 0:
            res["decode_seconds"] = timed(decode1, a.reps)
            res["decode_tokens_per_s"] = D / res["decode_seconds"]
        if D > 0 and S > 1:
            # The prompt's KV is copied, not recomputed. Across streams the copy is
            # applied at the next decode, so run one dummy token and drop it (as
            # batched-bench does); the warm-up inside timed() then settles buffers.
            L.llama_memory_seq_rm(mem, 0, P, -1)
            for s in range(1, S):
                L.llama_memory_seq_cp(mem, 0, s, -1, -1)
            decode([(feed[D], P, 0, True)], "copy")
            L.llama_memory_seq_rm(mem, 0, P, -1)
            res["decode_batch_seconds"] = timed(decode_batch, a.reps)
            res["decode_batch_tokens_per_s"] = S * D / res["decode_batch_seconds"]
    except RuntimeError as e:
        res["error"] = str(e)
    st = proc_status_kib("VmRSS", "VmHWM", "RssAnon", "RssFile")
    res.update(rss_end_mib=mib(st["VmRSS"]), peak_rss_mib=mib(st["VmHWM"]), rss_anon_mib=mib(st.get("RssAnon", 0)),
               rss_file_mib=mib(st.get("RssFile", 0)))
    batch.free()
    L.llama_free(ctx)
    L.llama_model_free(model)
    print(json.dumps(res))
    return 0 if "error" not in res else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "quantize":
        sys.exit(quantize(sys.argv[2:]))
    sys.exit(bench(sys.argv[1:]))
