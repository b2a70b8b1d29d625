"""The prefix-key rule of service/README.md ("Prefix key") in Python.

A client sets the gRPC metadata header x-prepack-prefix-key to this key so
that a proxy hashing it (Envoy's RING_HASH) sends requests sharing a prefix
to one prepackd replica. The Go client (service/go/client/prefixkey.go) is
the reference; this copy is checked against the same test vectors
(service/go/client/testdata/prefix_key_vectors.json), so a Python client and
a Go client route one request to the same replica.
"""
import struct

HEADER = "x-prepack-prefix-key"
KEY_BYTES = 256  # how much leading content the key covers (README: why 256)

_FNV64_OFFSET = 0xCBF29CE484222325
_FNV64_PRIME = 0x100000001B3


def fnv1a64(data: bytes) -> int:
    h = _FNV64_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV64_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def _key(leading: bytes) -> str:
    return "%016x" % fnv1a64(leading[:KEY_BYTES])


def text_key(text: str) -> str:
    """Key of a text prompt: its first 256 UTF-8 bytes."""
    return _key(text.encode("utf-8"))


def token_ids_key(ids) -> str:
    """Key of a token-id prompt: its ids as 4-byte little-endian integers."""
    return _key(b"".join(struct.pack("<i", i) for i in ids[: KEY_BYTES // 4]))


def chat_key(messages) -> str:
    """Key of a conversation: messages up to and including the first user
    turn, each as role NUL content NUL (content_parts joined by newlines
    when content is absent). messages: dicts with role and content or
    content_parts, as OpenAI's and prepack's ChatMessage have them."""
    out = bytearray()
    for m in messages:
        content = m.get("content")
        if content is None:
            content = "\n".join(m.get("content_parts") or [])
        out += m["role"].encode("utf-8") + b"\0" + content.encode("utf-8") + b"\0"
        if m["role"] == "user":
            break
    return _key(bytes(out))


def vector_key(vector) -> str:
    """Key of one entry of prefix_key_vectors.json."""
    if "text" in vector:
        return text_key(vector["text"])
    if "token_ids" in vector:
        return token_ids_key(vector["token_ids"])
    return chat_key(vector["messages"])
