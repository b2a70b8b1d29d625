#!/usr/bin/env python3
"""Makes build/models/vocab-tekken-240911.gguf: Mistral Nemo's tekken
vocabulary (`tekken_240911.json`, shipped inside PyPI's mistral-common) as
GGUF tokenizer keys, the way llama.cpp's converter writes a Mistral-format
model (gguf-py's MistralVocab: the special tokens first as control tokens,
then the byte-level pieces, the merges rebuilt from tiktoken's ranks,
`tokenizer.ggml.pre = tekken`). Vocabulary only, no weights; never
committed (Mistral's file, Apache 2.0, stays where pip put it).

With --ids TEXTS.json it instead prints, as JSON, the ids mistral-common's
own encoder (Tekkenizer.encode, no BOS/EOS) gives each text of the JSON list:
the independent oracle tests/data/tokenizer/tekken_goldens.json records.

Needs: pip install mistral-common gguf   (scripts/get_vocabs.sh makes a
venv with them and runs this).
Usage: make_tekken_vocab.py [--out PATH] | --ids TEXTS.json
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "build", "models", "vocab-tekken-240911.gguf")
VOCAB_FILE = "tekken_240911.json"


def bundled_vocab():
    import mistral_common
    path = os.path.join(os.path.dirname(mistral_common.__file__), "data", VOCAB_FILE)
    if not os.path.exists(path):
        sys.exit(f"make_tekken_vocab: {path} is missing (mistral-common without its data files?)")
    return path


def tekkenizer():
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer
    return Tekkenizer.from_file(bundled_vocab())


def print_ids(texts_path):
    tok = tekkenizer()
    texts = json.load(open(texts_path, encoding="utf-8"))
    json.dump([tok.encode(t, bos=False, eos=False) for t in texts], sys.stdout)


def write_gguf(out):
    import gguf
    from gguf.vocab import MistralVocab
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(bundled_vocab(), os.path.join(tmp, "tekken.json"))
        vocab = MistralVocab(__import__("pathlib").Path(tmp))
        tokens, scores, types = [], [], []
        for text, score, toktype in vocab.all_tokens():
            tokens.append(text)
            scores.append(score)
            types.append(toktype)
        merges = vocab.extract_vocab_merges_from_model()
        part = out + ".part"
        os.makedirs(os.path.dirname(out), exist_ok=True)
        w = gguf.GGUFWriter(part, arch="llama")
        w.add_name("tekken_240911 vocabulary (Mistral Nemo)")
        w.add_tokenizer_model(vocab.gguf_tokenizer_model)
        w.add_tokenizer_pre("tekken")
        w.add_token_list(tokens)
        w.add_token_scores(scores)
        w.add_token_types(types)
        w.add_token_merges(merges)
        w.add_bos_token_id(vocab.bos_id)
        w.add_eos_token_id(vocab.eos_id)
        w.add_unk_token_id(vocab.unk_id)
        w.add_pad_token_id(vocab.pad_id)
        w.add_add_bos_token(True)
        w.add_add_eos_token(False)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        os.replace(part, out)
    print(f"make_tekken_vocab: wrote {out} ({len(tokens)} tokens, {len(merges)} merges)", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--ids", help="print mistral-common's ids for the texts in this JSON list")
    args = ap.parse_args()
    if args.ids:
        print_ids(args.ids)
    else:
        write_gguf(args.out)


if __name__ == "__main__":
    main()
