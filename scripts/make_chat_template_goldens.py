#!/usr/bin/env python3
"""Writes tests/data/chat_templates/goldens.json: chat templates rendered by the
transformers-equivalent oracle (scripts/chat_template_oracle.py), the reference
for prepack's C++ Jinja engine.

Templates:
  shared:FILE  ../shared/models/chat-templates/*.jinja (third-party; only their
               renderings are stored here, never the files)
  repo:FILE    tests/data/chat_templates/templates/*.jinja (our own)
  gguf:FILE    tokenizer.chat_template of --gguf (default
               build/models/SmolLM2-135M-Instruct.Q4_1.gguf), read with gguf-py;
               skipped with a message when the file or the gguf module is missing
Conversations: tests/data/chat_templates/conversations.json. Each case's context
is what transformers' apply_chat_template(messages, tools=..., add_generation_prompt=...,
**kwargs) passes to template.render on a tokenizer whose special tokens are the
template family's bos_token/eos_token (FAMILY_TOKENS): keys messages, tools,
documents, add_generation_prompt, bos_token, eos_token, then the other kwargs.

Usage: make_chat_template_goldens.py [--date 2026-12-05] [--gguf PATH] [--out PATH]
"""

import argparse
import hashlib
import json
import os
import sys

import jinja2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chat_template_oracle as oracle  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "tests", "data", "chat_templates")
SHARED_TEMPLATES = os.path.join(REPO, "..", "shared", "models", "chat-templates")
DEFAULT_GGUF = os.path.join(REPO, "build", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
DEFAULT_DATE = "2026-12-05"

# bos_token / eos_token per template family: (substring of the template's name, bos, eos).
# The first match wins; templates matching none (our own) get REPO_TOKENS.
FAMILY_TOKENS = [
    ("Llama-3", "<|begin_of_text|>", "<|eot_id|>"),
    ("Qwen", "", "<|im_end|>"),
    ("gemma", "<bos>", "<eos>"),
    ("Mistral", "<s>", "</s>"),
    ("Phi-3", "<s>", "<|endoftext|>"),
    ("SmolLM", "", "<|im_end|>"),
]
REPO_TOKENS = ("<|bos|>", "<|eos|>")

# Conversations for our own templates; a template not listed gets DEFAULT_REPO_CONVERSATIONS.
# None = every conversation but the engine_data one.
DEFAULT_REPO_CONVERSATIONS = ["engine_data"]
REPO_CONVERSATIONS = {
    "chat_format.jinja": None,
    "raise_exception.jinja": ["single_user", "system_user", "multi_turn", "system_multi_turn", "whitespace",
                              "non_alternating", "starts_with_assistant", "content_parts",
                              "tool_call_object_args"],
    "raw_escapes.jinja": ["engine_data", "control_token_lookalikes"],
    "whitespace_control.jinja": ["engine_data", "single_user"],
    "strftime.jinja": ["single_user"],
}
# Conversations for the model templates (shared: and gguf:); None = all but engine_data.
# Combinations where the template fails with a Python error rather than a template
# error (e.g. `str + list` on list content) are dropped and listed under "dropped".
MODEL_CONVERSATIONS = None
ENGINE_ONLY = {"engine_data"}


def tokens_for(name):
    for needle, bos, eos in FAMILY_TOKENS:
        if needle in name:
            return bos, eos
    return REPO_TOKENS


def read_gguf_template(path):
    """tokenizer.chat_template of a GGUF file, or (None, reason)."""
    if not os.path.exists(path):
        return None, f"{path} not found"
    try:
        from gguf import GGUFReader
    except ImportError:
        return None, "the gguf module (PyPI gguf) is not importable"
    reader = GGUFReader(path)
    field = reader.fields.get("tokenizer.chat_template")
    if field is None:
        return None, f"{path} has no tokenizer.chat_template"
    return bytes(field.parts[field.data[0]]).decode("utf-8"), None


def load_templates(gguf_path):
    templates = {}
    if os.path.isdir(SHARED_TEMPLATES):
        for f in sorted(os.listdir(SHARED_TEMPLATES)):
            if f.endswith(".jinja"):
                with open(os.path.join(SHARED_TEMPLATES, f), encoding="utf-8") as fh:
                    templates["shared:" + f] = fh.read()
    else:
        print(f"note: {os.path.normpath(SHARED_TEMPLATES)} not found; no shared: templates", file=sys.stderr)
    repo_dir = os.path.join(DATA, "templates")
    for f in sorted(os.listdir(repo_dir)):
        if f.endswith(".jinja"):
            with open(os.path.join(repo_dir, f), encoding="utf-8") as fh:
                templates["repo:" + f] = fh.read()
    source, why = read_gguf_template(gguf_path)
    if source is None:
        print(f"note: skipping the GGUF template: {why}", file=sys.stderr)
    else:
        templates["gguf:" + os.path.basename(gguf_path)] = source
    return dict(sorted(templates.items()))


def conversations_for(name, conversations):
    kind, _, file = name.partition(":")
    if kind == "repo":
        wanted = REPO_CONVERSATIONS.get(file, DEFAULT_REPO_CONVERSATIONS)
    else:
        wanted = MODEL_CONVERSATIONS
    if wanted is None:
        return [c for c in conversations if c not in ENGINE_ONLY]
    missing = [c for c in wanted if c not in conversations]
    if missing:
        raise SystemExit(f"{name}: unknown conversations {missing}")
    return [c for c in conversations if c in wanted]


def build_context(conv, bos, eos):
    conv = dict(conv)
    messages = conv.pop("messages")
    tools = conv.pop("tools", None)
    documents = conv.pop("documents", None)
    add_generation_prompt = conv.pop("add_generation_prompt", False)
    return oracle.hf_context(messages, tools=tools, documents=documents,
                             add_generation_prompt=add_generation_prompt,
                             special_tokens={"bos_token": bos, "eos_token": eos}, **conv)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--date", default=DEFAULT_DATE, help="strftime_now's date (noon), default %(default)s")
    ap.add_argument("--gguf", default=DEFAULT_GGUF, help="GGUF file whose chat template to include")
    ap.add_argument("--out", default=os.path.join(DATA, "goldens.json"))
    args = ap.parse_args()

    with open(os.path.join(DATA, "conversations.json"), encoding="utf-8") as f:
        conversations = json.load(f)["conversations"]
    templates = load_templates(args.gguf)

    cases, dropped, info = [], [], {}
    for name, source in templates.items():
        bos, eos = tokens_for(name)
        info[name] = {"sha256": hashlib.sha256(source.encode("utf-8")).hexdigest(),
                      "bos_token": bos, "eos_token": eos}
        compiled = oracle.compile_template(source, date=args.date)
        n_out = n_err = 0
        for conv_name in conversations_for(name, conversations):
            context = build_context(conversations[conv_name], bos, eos)
            case = {"template": name, "conversation": conv_name, "context": context}
            try:
                case["output"] = compiled.render(**context)
                n_out += 1
            except jinja2.exceptions.TemplateError as e:
                case["error"] = str(e)
                case["error_type"] = type(e).__name__
                n_err += 1
            except Exception as e:  # a Python error, not the template's: not a meaningful golden
                dropped.append({"template": name, "conversation": conv_name,
                                "reason": f"{type(e).__name__}: {e}"})
                continue
            cases.append(case)
        info[name]["outputs"] = n_out
        info[name]["errors"] = n_err
        print(f"{name}: {n_out} outputs, {n_err} errors", file=sys.stderr)
    for d in dropped:
        print(f"dropped {d['template']} x {d['conversation']}: {d['reason']}", file=sys.stderr)

    golden = {
        "generator": "scripts/make_chat_template_goldens.py",
        "jinja2": jinja2.__version__,
        "date": args.date,
        "templates": info,
        "cases": cases,
        "dropped": dropped,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {os.path.relpath(args.out, REPO)}: {len(cases)} cases, {os.path.getsize(args.out)} bytes",
          file=sys.stderr)


if __name__ == "__main__":
    main()
