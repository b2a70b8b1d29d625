#!/usr/bin/env python3
"""Random-weight GGUF files at real shapes for the families of issue 48
(Gemma 1/2/3, Granite 3, Phi-3/3.5/4-mini), each with a REAL vocabulary, for
tests/family_realshape_test.cc to compare prepack with llama.cpp on.

The approach of ../shared/tools/make_realshape_models.py, extended: every
`tokenizer.*` key is borrowed from one of llama.cpp's vocab-only files
(../shared/models/vocab/ggml-vocab-NAME.gguf), the weights are F32 drawn from
numpy's PCG64 raw stream seeded per tensor name (stable across numpy
versions), so the same script writes the same bytes on every run (checked
against tests/data/families/models.sha256, written with gguf 0.19.0).

Scales: projections of unit gain (uniform, variance 1/fan_in); where a
tied output and an embedding scale would let the input token's own row
dominate the logits (greedy ids repeating the last prompt token), the
blocks write more (out_gain on attn_output/ffn_down, post_gain on Gemma's
post-norm gains); untied outputs are scaled so the logits spread by ~2-3,
fewer near-ties.

The keys and tensor names are the ones llama.cpp's converter writes for each
family (convert_hf_to_gguf.py) and its loader reads (src/llama-model.cpp):
Gemma's norm gains are stored with the +1 already applied (so they are
ordinary RMSNorm gains here, drawn in [0.5, 1.5) so that a skipped or
misplaced norm shows); Gemma files carry key_length / value_length and no
output.weight; Phi-3 files carry a fused attn_qkv, a fused gate|up in
ffn_up (2 * ffn rows, gate first), rope_factors_short/long of rope_dim/2,
rope.scaling.original_context_length and rope.scaling.attn_factor (no
rope.scaling.type); Granite files carry its four multipliers.

What each file exercises (`--list` prints the shapes):
  gemma        Gemma 1: embeddings times sqrt(dim), GeGLU (tanh GELU), MQA
               (4 heads / 1 KV head of 64), tied output
  gemma2       Gemma 2: windowed (32 keys) and global layers alternating,
               attention and final soft-caps small enough to bite on these
               weights (3.0 and 8.0), pre and post norms
  gemma3       Gemma 3: 6 layers (5 windowed of 32 keys, then 1 global),
               per-head Q/K norms, post norms, key_length 64 with 8 heads on
               dim 256 (Q 512 wide), global RoPE base 1e6 with linear scaling
               8 while windowed layers use llama.cpp's fixed 10000 unscaled
  granite      Granite 3: embedding_scale 12, residual_scale 0.22,
               attention.scale 0.0078125, logit_scale 8 (Granite-3 values),
               StarCoder BPE vocabulary, untied output
  phi3         Phi-3.5-mini-like: MHA 4 heads of 64, fused QKV and gate|up,
               LongRoPE with context 131072 over an original 4096 (the LONG
               factors apply; attn_factor 1.19), sliding_window 2047 (which
               llama.cpp ignores for phi3), untied output
  phi3-short   Phi-4-mini-like: GQA 4/2 heads of 64, partial rotary 0.75
               (rope_dim 48, factors of 24), tied output, context 4096 equal
               to the original (the SHORT factors apply; attn_factor 1.0)

Usage:
  make_family_models.py --vocab-dir ../shared/models/vocab --out-dir OUT [--only NAME,...]
  make_family_models.py --list
  make_family_models.py ... --override NAME:KEY=VALUE   (ablation copies for
      make_family_references.py's checks; never for the checked-in files)
"""

import argparse
import hashlib
import json
import math
import os
import sys
import zlib

import numpy as np
import gguf
from gguf import GGUFValueType as VT

SEED = 20260148   # issue 48

# ---- shapes -----------------------------------------------------------------
# Every entry names its vocabulary and the parts it adds; defaults are a plain
# llama-like block.
BASE = dict(dim=256, ffn=768, layers=4, heads=8, kv_heads=2, head_dim=None, rope_dim=None, ctx=8192,
            theta=10000.0, eps=1e-6, tied=True, write_theta=True)

MODELS = {
    "gemma": dict(BASE, arch="gemma", vocab="llama-spm", heads=4, kv_heads=1, head_dim=64, write_theta=False,
                  key_length=True, out_gain=8.0),
    "gemma2": dict(BASE, arch="gemma2", vocab="llama-spm", heads=4, kv_heads=2, head_dim=64, write_theta=False,
                   key_length=True, post_norms=True, post_gain=3.0, window=32, attn_softcap=3.0,
                   final_softcap=8.0, q_gain=1.5),
    "gemma3": dict(BASE, arch="gemma3", vocab="llama-spm", layers=6, heads=8, kv_heads=2, head_dim=64,
                   ctx=32768, theta=1000000.0, key_length=True, post_norms=True, post_gain=3.0, qk_norm=True, window=32,
                   rope_linear=8.0),
    "granite": dict(BASE, arch="granite", vocab="starcoder", ctx=4096, theta=10000000.0, eps=1e-5, tied=False,
                    embedding_scale=12.0, residual_scale=0.22, attention_scale=0.0078125, logit_scale=8.0,
                    embd_std=0.1, output_std=2.0),
    "phi3": dict(BASE, arch="phi3", vocab="phi-3", heads=4, kv_heads=4, ctx=131072, eps=1e-5, tied=False,
                 fused=True, orig_ctx=4096, longrope=True, window=2047, output_std=0.1875),
    "phi3-short": dict(BASE, arch="phi3", vocab="phi-3", heads=4, kv_heads=2, rope_dim=48, ctx=4096, eps=1e-5,
                       fused=True, orig_ctx=4096, longrope=True, window=0, out_gain=3.0),
}


def head_dim(s):
    return s["head_dim"] or s["dim"] // s["heads"]


def rope_dim(s):
    return s["rope_dim"] or head_dim(s)


# ---- tokenizer metadata ---------------------------------------------------------

def field_value(f):
    """A reader field as (value, type, sub_type) for the writer; strings stay raw bytes."""
    t = f.types[0]
    if t == VT.ARRAY:
        sub = f.types[-1]
        if sub == VT.STRING:
            return [bytes(f.parts[i]) for i in f.data], t, sub
        return [f.parts[i].tolist()[0] for i in f.data], t, sub
    if t == VT.STRING:
        return bytes(f.parts[f.data[0]]), t, None
    return f.parts[f.data[0]].tolist()[0], t, None


def tokenizer_fields(vocab_file):
    r = gguf.GGUFReader(vocab_file)
    fields = [(k, field_value(f)) for k, f in r.fields.items() if k.startswith("tokenizer.")]
    return fields, len(r.fields["tokenizer.ggml.tokens"].data)


# ---- weights ------------------------------------------------------------------

def uniform(name, shape, scale):
    """Uniform in [-scale, scale): 24 bits of a PCG64 raw stream seeded by the tensor's name."""
    n = int(np.prod(shape))
    raw = np.random.PCG64(np.random.SeedSequence([SEED, zlib.crc32(name.encode())])).random_raw(n)
    u = (raw >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / 16777216.0)
    return ((np.float32(2.0) * u - np.float32(1.0)) * np.float32(scale)).reshape(shape)


def gains(name, n):
    """RMSNorm gains in [0.5, 1.5): not ones, so a norm skipped or misplaced shows."""
    return np.float32(1.0) + uniform(name, (n,), 0.5)


def longrope_factors(n, long):
    """Per-frequency divisors shaped like Phi-3.5's: the short ones near 1, the
    long ones rising from 1 to ~40 towards the low frequencies."""
    u = uniform("rope_factors_%s.weight" % ("long" if long else "short"), (n,), 0.5) + np.float32(0.5)
    ramp = (np.arange(n, dtype=np.float32) / np.float32(max(n - 1, 1))) ** 2
    if long:
        return (np.float32(1.0) + np.float32(40.0) * ramp * (np.float32(0.8) + np.float32(0.4) * u)).astype(np.float32)
    return (np.float32(1.0) + np.float32(0.5) * u * ramp).astype(np.float32)


def tensors(s, n_vocab):
    """(name, f32 array in numpy row-major [out_features, in_features]) in file order."""
    d, h, L = s["dim"], s["ffn"], s["layers"]
    hd = head_dim(s)
    q, kv = s["heads"] * hd, s["kv_heads"] * hd
    # Block outputs damped by 1/sqrt(2L) as in make_realshape_models.py, or
    # scaled by the family's out_gain: with a tied output and Gemma's
    # sqrt(dim) embedding scale the input token's own row dominates the
    # residual (and so the logits: every greedy id would repeat the last
    # prompt token) unless the blocks write more than it.
    damp = s.get("out_gain", 1.0 / np.sqrt(2.0 * L))
    unit = lambda fan_in: np.sqrt(3.0 / fan_in)   # unit-gain projections
    sqrt3 = np.sqrt(3.0)
    # Tied: std 0.1 so the last token's own row does not dominate the logits;
    # untied: unit variance (RMSNorm follows). Families may say otherwise.
    embd_std = s.get("embd_std", 0.1 if s["tied"] else 1.0)
    yield "token_embd.weight", uniform("token_embd.weight", (n_vocab, d), sqrt3 * embd_std)
    if s.get("longrope"):
        yield "rope_factors_long.weight", longrope_factors(rope_dim(s) // 2, True)
        yield "rope_factors_short.weight", longrope_factors(rope_dim(s) // 2, False)
    yield "output_norm.weight", gains("output_norm.weight", d)
    if not s["tied"]:
        yield "output.weight", uniform("output.weight", (n_vocab, d), sqrt3 * s.get("output_std", 1.0 / np.sqrt(d)))
    for i in range(L):
        p = "blk.%d." % i
        yield p + "attn_norm.weight", gains(p + "attn_norm.weight", d)
        q_scale = unit(d) * s.get("q_gain", 1.0)
        if s.get("fused"):
            yield p + "attn_qkv.weight", np.concatenate([
                uniform(p + "attn_q.weight", (q, d), q_scale),
                uniform(p + "attn_k.weight", (kv, d), unit(d)),
                uniform(p + "attn_v.weight", (kv, d), unit(d))])
        else:
            yield p + "attn_q.weight", uniform(p + "attn_q.weight", (q, d), q_scale)
            yield p + "attn_k.weight", uniform(p + "attn_k.weight", (kv, d), unit(d))
            yield p + "attn_v.weight", uniform(p + "attn_v.weight", (kv, d), unit(d))
        if s.get("qk_norm"):
            yield p + "attn_q_norm.weight", gains(p + "attn_q_norm.weight", hd)
            yield p + "attn_k_norm.weight", gains(p + "attn_k_norm.weight", hd)
        yield p + "attn_output.weight", uniform(p + "attn_output.weight", (d, q), unit(q) * damp)
        if s.get("post_norms"):
            yield p + "post_attention_norm.weight", gains(p + "post_attention_norm.weight", d) * np.float32(s.get("post_gain", 1.0))
        yield p + "ffn_norm.weight", gains(p + "ffn_norm.weight", d)
        if s.get("fused"):
            # Phi-3's gate_up_proj: the gate's rows first, then up's.
            yield p + "ffn_up.weight", np.concatenate([
                uniform(p + "ffn_gate.weight", (h, d), unit(d)), uniform(p + "ffn_up.weight", (h, d), unit(d))])
        else:
            yield p + "ffn_gate.weight", uniform(p + "ffn_gate.weight", (h, d), unit(d))
            yield p + "ffn_up.weight", uniform(p + "ffn_up.weight", (h, d), unit(d))
        yield p + "ffn_down.weight", uniform(p + "ffn_down.weight", (d, h), unit(h) * damp)
        if s.get("post_norms"):
            yield p + "post_ffw_norm.weight", gains(p + "post_ffw_norm.weight", d) * np.float32(s.get("post_gain", 1.0))


# ---- metadata -----------------------------------------------------------------

def write_model(name, s, vocab_dir, path):
    fields, n_vocab = tokenizer_fields(os.path.join(vocab_dir, "ggml-vocab-%s.gguf" % s["vocab"]))
    w = gguf.GGUFWriter(path, s["arch"])
    w.add_name("%s (random weights, %s vocab)" % (name, s["vocab"]))
    w.add_file_type(0)  # ALL_F32
    w.add_context_length(s["ctx"])
    w.add_embedding_length(s["dim"])
    w.add_block_count(s["layers"])
    w.add_feed_forward_length(s["ffn"])
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv_heads"])
    w.add_layer_norm_rms_eps(s["eps"])
    if s.get("key_length"):
        w.add_key_length(head_dim(s))
        w.add_value_length(head_dim(s))
    if s["arch"] in ("granite", "phi3"):
        w.add_rope_dimension_count(rope_dim(s))
    if s["write_theta"]:
        w.add_rope_freq_base(s["theta"])
    if "rope_linear" in s:
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(s["rope_linear"])
    if "window" in s:
        w.add_sliding_window(s["window"])
    if "attn_softcap" in s:
        w.add_attn_logit_softcapping(s["attn_softcap"])
        w.add_final_logit_softcapping(s["final_softcap"])
    if s["arch"] == "granite":
        w.add_embedding_scale(s["embedding_scale"])
        w.add_residual_scale(s["residual_scale"])
        w.add_attention_scale(s["attention_scale"])
        w.add_logit_scale(s["logit_scale"])
    if s.get("longrope"):
        # convert_hf_to_gguf's Phi3MiniModel: sqrt(1 + ln(scale) / ln(original)) for LongRoPE.
        scale = s["ctx"] / s["orig_ctx"]
        w.add_rope_scaling_orig_ctx_len(s["orig_ctx"])
        w.add_rope_scaling_attn_factors(math.sqrt(1 + math.log(scale) / math.log(s["orig_ctx"])) if scale > 1 else 1.0)
    w.add_vocab_size(n_vocab)
    for key, (val, vt, sub) in fields:
        w.add_key_value(key, val, vt, sub)
    for tname, arr in tensors(s, n_vocab):
        w.add_tensor(tname, np.ascontiguousarray(arr, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            h.update(chunk)
    return h.hexdigest()


def parse_value(v):
    try:
        return json.loads(v)
    except ValueError:
        return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab-dir", help="../shared/models/vocab (llama.cpp's ggml-vocab-*.gguf)")
    ap.add_argument("--out-dir", help="where the .gguf files go")
    ap.add_argument("--only", help="comma-separated model names (default: all)")
    ap.add_argument("--override", action="append", default=[],
                    help="NAME:KEY=VALUE, a shape entry changed (ablation copies); the file is named NAME@KEY=VALUE")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    if args.list:
        for n, s in MODELS.items():
            print(n, json.dumps(s))
        return 0
    if not (args.vocab_dir and args.out_dir):
        ap.error("--vocab-dir and --out-dir are required")
    jobs = []
    if args.override:
        for o in args.override:
            name, kv = o.split(":", 1)
            key, value = kv.split("=", 1)
            jobs.append(("%s@%s=%s" % (name, key, value), dict(MODELS[name], **{key: parse_value(value)})))
    else:
        want = args.only.split(",") if args.only else list(MODELS)
        unknown = [n for n in want if n not in MODELS]
        if unknown:
            ap.error("unknown model(s) %s; known: %s" % (", ".join(unknown), ", ".join(MODELS)))
        jobs = [(n, MODELS[n]) for n in want]
    os.makedirs(args.out_dir, exist_ok=True)
    for n, s in jobs:
        path = os.path.join(args.out_dir, n + ".gguf")
        write_model(n, s, args.vocab_dir, path)
        print(json.dumps({"model": n, "path": path, "bytes": os.path.getsize(path), "sha256": sha256(path)}))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
