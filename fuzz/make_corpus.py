#!/usr/bin/env python3
"""Writes the seed corpus in fuzz/corpus/<target>/ (committed; rerun only to
change it). Seeds are small valid inputs of each kind, so the fuzzers start
past the format checks: GGUF files (metadata of every type, a one-layer
llama model with its tokenizer, F16/BF16/Q4_0/Q8_0/K-quant tensors), tokenizer text,
C ABI call programs, and GenerateRequest protobuf messages (encoded by
`protoc --encode`, which must be on PATH)."""
import os
import random
import struct
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- GGUF ------------------------------------------------------------------
T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 = range(13)
F32, F16, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, BF16 = 0, 1, 2, 8, 12, 13, 14, 30


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return gstr(key) + struct.pack("<I", vtype) + payload


def arr(elem_type, items, fmt=None):
    body = b"".join(gstr(x) if elem_type == T_STR else struct.pack("<" + fmt, x) for x in items)
    return struct.pack("<IQ", elem_type, len(items)) + body


def gguf(kvs, tensors, version=3, align=32):
    """tensors: (name, ne, type, data bytes)."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs)
    offsets, cur = [], 0
    for _, _, _, data in tensors:
        cur = (cur + align - 1) // align * align
        offsets.append(cur)
        cur += len(data)
    for (name, ne, ttype, _), off in zip(tensors, offsets):
        out += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        out += struct.pack("<IQ", ttype, off)
    out += b"\0" * ((-len(out)) % align)
    base = len(out)
    for (_, _, _, data), off in zip(tensors, offsets):
        out += b"\0" * (base + off - len(out)) + data
    return out


def f32s(n, seed):
    r = random.Random(seed)
    return struct.pack("<%df" % n, *[r.uniform(-1, 1) for _ in range(n)])


def tiny_llama(tensor_type=F32):
    """One layer, dim 8, 2 heads (1 KV head), hidden 16, vocab 8 + 256 bytes."""
    pieces = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + ["\u2581a", "\u2581b", "ab", "\u2581ab", "b"]
    types = [2, 3, 3] + [6] * 256 + [1] * 5
    v, d, h = len(pieces), 8, 16
    kvs = [
        kv("general.architecture", T_STR, gstr("llama")),
        kv("general.name", T_STR, gstr("seed")),
        kv("llama.context_length", T_U32, struct.pack("<I", 32)),
        kv("llama.embedding_length", T_U32, struct.pack("<I", d)),
        kv("llama.feed_forward_length", T_U32, struct.pack("<I", h)),
        kv("llama.block_count", T_U32, struct.pack("<I", 1)),
        kv("llama.attention.head_count", T_U32, struct.pack("<I", 2)),
        kv("llama.attention.head_count_kv", T_U32, struct.pack("<I", 1)),
        kv("llama.attention.layer_norm_rms_epsilon", T_F32, struct.pack("<f", 1e-5)),
        kv("llama.rope.freq_base", T_F32, struct.pack("<f", 10000.0)),
        kv("tokenizer.ggml.model", T_STR, gstr("llama")),
        kv("tokenizer.ggml.tokens", T_ARR, arr(T_STR, pieces)),
        kv("tokenizer.ggml.scores", T_ARR, arr(T_F32, [0.0] * 259 + [-1.0, -2.0, -3.0, -4.0, -5.0], "f")),
        kv("tokenizer.ggml.token_type", T_ARR, arr(T_I32, types, "i")),
        kv("tokenizer.ggml.bos_token_id", T_U32, struct.pack("<I", 1)),
        kv("tokenizer.ggml.eos_token_id", T_U32, struct.pack("<I", 2)),
    ]

    def t(name, ne, seed):
        n = 1
        for x in ne:
            n *= x
        if tensor_type == F16:
            return (name, ne, F16, struct.pack("<%de" % n, *struct.unpack("<%df" % n, f32s(n, seed))))
        return (name, ne, F32, f32s(n, seed))

    tensors = [t("token_embd.weight", [d, v], 1), t("output_norm.weight", [d], 2), t("output.weight", [d, v], 3),
               t("blk.0.attn_norm.weight", [d], 4), t("blk.0.attn_q.weight", [d, d], 5),
               t("blk.0.attn_k.weight", [d, 4], 6), t("blk.0.attn_v.weight", [d, 4], 7),
               t("blk.0.attn_output.weight", [d, d], 8), t("blk.0.ffn_norm.weight", [d], 9),
               t("blk.0.ffn_gate.weight", [d, h], 10), t("blk.0.ffn_up.weight", [d, h], 11),
               t("blk.0.ffn_down.weight", [h, d], 12)]
    return gguf(kvs, tensors)


def every_type():
    kvs = [
        kv("u8", T_U8, struct.pack("<B", 7)), kv("i8", T_I8, struct.pack("<b", -7)),
        kv("u16", T_U16, struct.pack("<H", 700)), kv("i16", T_I16, struct.pack("<h", -700)),
        kv("u32", T_U32, struct.pack("<I", 70000)), kv("i32", T_I32, struct.pack("<i", -70000)),
        kv("f32", T_F32, struct.pack("<f", 1.5)), kv("bool", T_BOOL, b"\x01"),
        kv("str", T_STR, gstr("h\u00e9llo")), kv("u64", T_U64, struct.pack("<Q", 1 << 40)),
        kv("i64", T_I64, struct.pack("<q", -(1 << 40))), kv("f64", T_F64, struct.pack("<d", 2.25)),
        kv("general.alignment", T_U32, struct.pack("<I", 64)),
        kv("arr.f32", T_ARR, arr(T_F32, [1.0, 2.0], "f")), kv("arr.str", T_ARR, arr(T_STR, ["a", "bc"])),
        kv("arr.nested", T_ARR, struct.pack("<IQ", T_ARR, 1) + arr(T_I32, [1, 2, 3], "i")),
    ]
    return gguf(kvs, [], align=64)


def quantized():
    q8 = struct.pack("<e", 0.5) + bytes(range(32))          # one Q8_0 block: fp16 scale + 32 int8
    q4 = struct.pack("<e", 0.25) + bytes(range(16))         # one Q4_0 block: fp16 scale + 16 bytes of nibbles
    # One block each of the K-quants (256 weights): fp16 d and dmin, packed
    # 6-bit scales and mins, (Q5_K: fifth bits), nibbles; Q6_K: low nibbles,
    # high bit pairs, int8 scales, fp16 d.
    q4k = struct.pack("<2e", 0.5, 0.25) + bytes(range(12)) + bytes(range(128))
    q5k = struct.pack("<2e", 0.5, 0.25) + bytes(range(12)) + bytes(range(32)) + bytes(range(128))
    q6k = bytes(range(128)) + bytes(range(64)) + bytes(range(16)) + struct.pack("<e", 0.125)
    bf16 = b"".join(struct.pack("<H", x) for x in (0x3F80, 0xC000, 0x7F80, 0x7FC0))
    f16 = struct.pack("<4e", 1.0, -2.0, 65504.0, 0.0)
    return gguf([kv("general.architecture", T_STR, gstr("llama"))],
                [("q", [32], Q8_0, q8), ("q4", [32], Q4_0, q4), ("k4", [256], Q4_K, q4k), ("k5", [256], Q5_K, q5k),
                 ("k6", [256], Q6_K, q6k), ("b", [4], BF16, bf16), ("h", [2, 2], F16, f16)], version=2)


write("fuzz_gguf", "header_only", gguf([], []))
write("fuzz_gguf", "every_type", every_type())
write("fuzz_gguf", "tiny_llama_f32", tiny_llama(F32))
write("fuzz_gguf", "tiny_llama_f16", tiny_llama(F16))
write("fuzz_gguf", "quantized_tensors", quantized())

# ---- tokenizer: text first, then raw int32 ids (FuzzedDataProvider takes
# the add_bos flag from the end and the string from the front) ------------
for i, text in enumerate(["Once upon a time, there was a little girl.", "  leading spaces and\ttabs\n",
                          "h\u00e9llo w\u00f6rld \u65e5\u672c \U0001F600", "<s></s><unk><0x41>", ""]):
    write("fuzz_tokenizer", "text_%d" % i, text.encode() + b"\\" + struct.pack("<4i", 1, 300, 3, 511) + b"\x01")
write("fuzz_tokenizer", "invalid_utf8", b"\xc3\x28 \xed\xa0\x80 \xf8\x88\x80\x80\x80 \xc0\xaf")
write("fuzz_tokenizer", "ids_only", b"\\" + struct.pack("<8i", 0x101, 0x1e5, 0xc3 + 3, 0xa9 + 3, -1, 1 << 30, 2, 1))

# ---- C ABI call programs: opaque FuzzedDataProvider bytes, so seeds are
# deterministic random bytes of a few sizes ---------------------------------
r = random.Random(10)
for i, n in enumerate([16, 48, 96, 160, 256, 400, 640, 1024]):
    write("fuzz_capi_request", "random_%d" % i, bytes(r.randrange(256) for _ in range(n)))

# ---- GenerateRequest messages ----------------------------------------------
PROTO_DIR = os.path.join(HERE, "..", "proto")
requests = {
    "text_greedy": 'text: "Once upon a time" sampling { max_tokens: 2 temperature: 0 }',
    "token_ids": 'token_ids { ids: [1, 40, 41, 42] } sampling { max_tokens: 1 }',
    "sampling_all": 'text: "hi" add_bos: false sampling { max_tokens: 2 temperature: 0.7 top_k: 5 top_p: 0.9 '
                    'min_p: 0.05 repetition_penalty: 1.1 seed: 7 stop: ["a", "bc"] ignore_eos: true } '
                    'logprobs: true top_logprobs: 3',
    "lazy": 'text: "a longer prompt for lazy pruning" lazy { enabled: true keep_ratio: 0.5 schedule: "1:0.5,3:0.2" } '
            'sampling { max_tokens: 1 }',
    "bad_fields": 'token_ids { ids: [-1, 99999] } sampling { max_tokens: 0 temperature: -1 top_p: 0 }',
    "invalid_utf8_text": 'text: "\\xc3\\x28\\xff" sampling { max_tokens: 1 }',
    "past_context": 'text: "x" sampling { max_tokens: 2147483647 }',
}
for name, text in requests.items():
    data = subprocess.run(["protoc", "--proto_path=" + PROTO_DIR, "--encode=prepack.v1.GenerateRequest",
                           "prepack/v1/prepack.proto"], input=text.encode(), check=True, capture_output=True).stdout
    write("fuzz_service_request", name, data)
print("wrote", CORPUS)
