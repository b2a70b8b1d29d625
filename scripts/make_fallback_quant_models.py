#!/usr/bin/env python3
"""Writes a model in the block types llama.cpp's K-quant files fall back to, and its decoded twin.

A K-quant needs rows of a multiple of 256 weights; llama.cpp's quantizer puts
the matrices whose rows are not (Qwen2.5-0.5B's 896, SmolLM2's 576 and 960)
into Q5_0, Q5_1 or Q8_0 instead, and Q4_1 files are still shared. From an F32
GGUF this writes:
  OUT_QUANT    the layers' matrices in Q5_0, Q5_1 and Q4_1, mixed so that a
               fused Q|K|V and gate|up hold slices of different types
               (attn_q Q5_0, attn_k Q5_1, attn_v Q4_1, attn_output Q5_0,
               ffn_gate Q5_1, ffn_up Q4_1, ffn_down Q5_0); the rest as it was;
  OUT_DECODED  the same file with those matrices decoded back to F32 by
               gguf-py (gguf.quants), an implementation of ggml's block layouts
               that shares no code with prepack's.
tests/realshape_test.cc runs both and expects the same logits within what
rounding activations to int8 moves. Needs PyPI numpy and gguf (0.19.0 is what
scripts/make_realshape_f32.sh installs).

Usage: make_fallback_quant_models.py IN_F32.gguf OUT_QUANT.gguf OUT_DECODED.gguf
"""

import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q

from make_bench_model import field_value   # a reader field as GGUFWriter.add_key_value takes it

TYPES = {"attn_q": Q.Q5_0, "attn_k": Q.Q5_1, "attn_v": Q.Q4_1, "attn_output": Q.Q5_0,
         "ffn_gate": Q.Q5_1, "ffn_up": Q.Q4_1, "ffn_down": Q.Q5_0}


def target_type(name):
    """The fallback type of a layer matrix `blk.N.KIND.weight`, else None."""
    parts = name.split(".")
    return TYPES.get(parts[2]) if len(parts) == 4 and parts[0] == "blk" and parts[3] == "weight" else None


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[-1])
    src, out_quant, out_decoded = sys.argv[1:]
    r = gguf.GGUFReader(src)
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    writers = [gguf.GGUFWriter(p + ".tmp", arch) for p in (out_quant, out_decoded)]
    for key, f in r.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        for w in writers:
            w.add_key_value(key, *field_value(f))
    for t in r.tensors:
        if t.tensor_type != Q.F32:
            sys.exit("%s: tensor %s is %s; this script reads F32 files" % (src, t.name, t.tensor_type.name))
        # The reader's shape is ggml's (fastest dimension first); numpy's is the reverse.
        data = np.asarray(t.data, dtype=np.float32).reshape([int(x) for x in reversed(t.shape)])
        qtype = target_type(t.name)
        if qtype is None:
            for w in writers:
                w.add_tensor(t.name, data)
            continue
        blocks = gguf.quants.quantize(data, qtype)
        writers[0].add_tensor(t.name, blocks, raw_dtype=qtype)
        writers[1].add_tensor(t.name, gguf.quants.dequantize(blocks, qtype).astype(np.float32))
    for w, p in zip(writers, (out_quant, out_decoded)):
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        os.replace(p + ".tmp", p)   # only a finished file gets the name
    return 0


if __name__ == "__main__":
    sys.exit(main())
