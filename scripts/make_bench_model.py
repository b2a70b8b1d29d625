#!/usr/bin/env python3
"""Writes a Llama-3.2-1B-shaped GGUF with random F32 weights (issue 22).

Shape of meta-llama/Llama-3.2-1B: hidden 2048, 16 layers, 32 heads / 8 KV
heads of head_dim 64, FFN 8192, RoPE theta 500000 with the llama3 frequency
scaling (rope_freqs.weight, factor 32), RMSNorm eps 1e-5, tied output. The
vocabulary (tokens, merges, token types, BOS/EOS, pre-tokenizer) is copied from
llama.cpp's Llama-3 vocab-only file, so both engines load a real tokenizer and
the 128256-row embedding / logits GEMM costs what it costs in the real model.

Conventions follow ../shared/tools/make_realshape_models.py: same metadata keys,
uniform weights from numpy's PCG64 raw stream seeded per tensor name (stable
across numpy versions, so the same bytes every run), unit-gain projections
(scale sqrt(3 / fan_in)), residual-branch outputs damped by 1 / sqrt(2 L),
tied embeddings at std 0.1 so the logits stay spread, norm gains of one.
Context length is 8192 (the llama3 scaling's original context): benchmarks use
< 1k positions and a smaller advertised context keeps engines' default KV
allocations small.

Tensors are streamed to disk one at a time (~5 GB F32: holding them all would
double peak memory), into OUT.tmp renamed to OUT at the end, so an interrupted
run never leaves a file that looks complete.

Usage: make_bench_model.py OUT.gguf [--vocab PATH] [--layers N]
(--layers is for quick tests only; the benchmark uses the default 16.)
"""

import argparse
import os
import sys
import time
import zlib

import numpy as np
import gguf
from gguf import GGUFValueType as VT

SEED = 20261222  # differs from make_realshape_models.py's: this is another model
VOCAB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "models", "vocab",
                     "ggml-vocab-llama-bpe.gguf")
DIM, FFN, HEADS, KV_HEADS, HEAD_DIM = 2048, 8192, 32, 8, 64
THETA, EPS, CTX = 500000.0, 1e-5, 8192


def uniform(name, shape, scale):
    """Uniform in [-scale, scale): 24 bits of one PCG64 raw draw per element."""
    n = int(np.prod(shape))
    bg = np.random.PCG64(np.random.SeedSequence([SEED, zlib.crc32(name.encode())]))
    out = np.empty(n, dtype=np.float32)
    step = 1 << 22   # chunks of the same stream: the 1 GiB embedding's uint64 draws would be 2 GiB at once
    for i in range(0, n, step):
        u = (bg.random_raw(min(step, n - i)) >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / 16777216.0)
        out[i:i + len(u)] = u * np.float32(2.0 * scale) - np.float32(scale)
    return out.reshape(shape)


def llama3_rope_freqs(head_dim, theta, factor=32.0, low=1.0, high=4.0, orig_ctx=8192):
    """Per-frequency divisors as convert_hf_to_gguf writes them for rope_type llama3."""
    out = []
    for f in 1.0 / (theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)):
        wl = 2 * np.pi / f
        if wl < orig_ctx / high:
            out.append(1.0)
        elif wl > orig_ctx / low:
            out.append(factor)
        else:
            smooth = (orig_ctx / wl - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def tensor_plan(n_vocab, layers):
    """(name, numpy shape [out, in], maker) in file order; makers run lazily, one at a time."""
    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    damp = 1.0 / np.sqrt(2.0 * layers)
    unit = lambda fan_in: np.sqrt(3.0 / fan_in)
    ones = lambda n: (lambda: np.ones(n, dtype=np.float32))
    rnd = lambda name, shape, scale: (name, shape, lambda: uniform(name, shape, scale))
    plan = [rnd("token_embd.weight", (n_vocab, DIM), np.sqrt(3.0) * 0.1),
            ("rope_freqs.weight", (HEAD_DIM // 2,), lambda: llama3_rope_freqs(HEAD_DIM, THETA)),
            ("output_norm.weight", (DIM,), ones(DIM))]
    for i in range(layers):
        p = "blk.%d." % i
        plan += [(p + "attn_norm.weight", (DIM,), ones(DIM)),
                 rnd(p + "attn_q.weight", (q, DIM), unit(DIM)),
                 rnd(p + "attn_k.weight", (kv, DIM), unit(DIM)),
                 rnd(p + "attn_v.weight", (kv, DIM), unit(DIM)),
                 rnd(p + "attn_output.weight", (DIM, q), unit(q) * damp),
                 (p + "ffn_norm.weight", (DIM,), ones(DIM)),
                 rnd(p + "ffn_gate.weight", (FFN, DIM), unit(DIM)),
                 rnd(p + "ffn_up.weight", (FFN, DIM), unit(DIM)),
                 rnd(p + "ffn_down.weight", (DIM, FFN), unit(FFN) * damp)]
    return plan


def field_value(f):
    """A reader field as (value, type, sub_type) for GGUFWriter.add_key_value; strings stay bytes."""
    t = f.types[0]
    if t == VT.ARRAY:
        sub = f.types[-1]
        if sub == VT.STRING:
            return [bytes(f.parts[i]) for i in f.data], t, sub
        return [f.parts[i].tolist()[0] for i in f.data], t, sub
    if t == VT.STRING:
        return bytes(f.parts[f.data[0]]), t, None
    return f.parts[f.data[0]].tolist()[0], t, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--vocab", default=VOCAB, help="Llama-3 vocab-only GGUF (default: %(default)s)")
    ap.add_argument("--layers", type=int, default=16)
    a = ap.parse_args()

    r = gguf.GGUFReader(a.vocab)
    tok = [(k, field_value(f)) for k, f in r.fields.items() if k.startswith("tokenizer.")]
    n_vocab = len(r.fields["tokenizer.ggml.tokens"].data)

    tmp = a.out + ".tmp"
    w = gguf.GGUFWriter(tmp, "llama")
    w.add_name("llama32-1b-shape (random weights, llama-bpe vocab)")
    w.add_file_type(0)  # ALL_F32
    w.add_context_length(CTX)
    w.add_embedding_length(DIM)
    w.add_block_count(a.layers)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_key_length(HEAD_DIM)      # = DIM / HEADS; written anyway, as the real GGUFs do
    w.add_value_length(HEAD_DIM)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_rope_freq_base(THETA)
    w.add_layer_norm_rms_eps(EPS)
    w.add_vocab_size(n_vocab)
    for key, (val, vt, sub) in tok:
        w.add_key_value(key, val, vt, sub)

    plan = tensor_plan(n_vocab, a.layers)
    for name, shape, _ in plan:
        w.add_tensor_info(name, shape, np.dtype(np.float32), 4 * int(np.prod(shape)))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    t0 = time.perf_counter()
    for name, shape, make in plan:
        arr = make()
        assert arr.shape == tuple(shape) and arr.dtype == np.float32, name
        w.write_tensor_data(arr)
    w.close()
    os.replace(tmp, a.out)
    params = sum(int(np.prod(s)) for _, s, _ in plan)
    print("make_bench_model: wrote %s (%d tensors, %.3f B params, %.2f GB) in %.0f s"
          % (a.out, len(plan), params / 1e9, os.path.getsize(a.out) / 1e9, time.perf_counter() - t0), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
