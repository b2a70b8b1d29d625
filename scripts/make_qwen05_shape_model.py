#!/usr/bin/env python3
"""Writes a Qwen2.5-0.5B-shaped GGUF with random F32 weights: rows of 896, which K-quants cannot hold.

Qwen2.5-0.5B's shape (hidden 896, FFN 4864, 14 heads / 2 KV heads of 64,
Q/K/V biases, tied output, RoPE theta 1e6, eps 1e-6) and its 151,936-token
vocabulary (../shared/models/vocab/ggml-vocab-qwen2.gguf), through the writer
of ../shared/tools/make_realshape_models.py (its weights' conventions and
seeds). 896 is not a multiple of 256, so llama.cpp's Q4_K_M / Q5_K_M of this
file hold Q5_0 / Q5_1 and Q8_0 matrices: the benchmark of the fallback block
types in docs/benchmarks.md. Needs PyPI numpy and gguf.

Usage: make_qwen05_shape_model.py OUT.gguf [--layers N]   (default 4 of the real 24)
"""

import argparse
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "shared")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=4)
    a = ap.parse_args()
    spec = importlib.util.spec_from_file_location("realshape", os.path.join(SHARED, "tools", "make_realshape_models.py"))
    realshape = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(realshape)
    shape = realshape.shape("qwen2", "qwen2", 896, 4864, a.layers, 14, 2, 32768, 1000000.0, eps=1e-6, tied=True,
                            bias=True)
    realshape.write_model("qwen25-05b-shape", shape, os.path.join(SHARED, "models", "vocab"), a.out)


if __name__ == "__main__":
    main()
