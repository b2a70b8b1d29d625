#!/usr/bin/env python3
"""Checks prepack's Jinja engine against Python jinja2 on any chat templates.

For each template file named (or every *.jinja in a folder named) and each
conversation of a conversations file (default:
tests/data/chat_templates/conversations.json; the format: {"conversations":
{NAME: {"messages": [...], "add_generation_prompt": ..., "tools": ...,
kwargs...}}}), renders the context transformers' apply_chat_template would
pass (scripts/chat_template_oracle.py) with Python jinja2 and with
`prepack chat-template render`, and compares them byte for byte. A template
error must be an error in both, with the template's message for
raise_exception. Prints each mismatch and a closing "N passed, M failed".

Usage: python3 scripts/check_chat_templates.py [--prepack build/bin/prepack]
           [--conversations FILE] [--bos S --eos S] [--date YYYY-MM-DD] TEMPLATE_OR_DIR...
Needs jinja2 (PyPI). Not run by CI: the committed goldens are
(chat_template_golden_test); this is for templates that are not in the repo.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import chat_template_oracle as oracle  # noqa: E402
import jinja2  # noqa: E402

REPO = os.path.dirname(HERE)


def templates_in(paths):
    for p in paths:
        if os.path.isdir(p):
            for f in sorted(os.listdir(p)):
                if f.endswith(".jinja"):
                    yield os.path.join(p, f)
        else:
            yield p


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("templates", nargs="+")
    ap.add_argument("--prepack", default=os.path.join(REPO, "build/bin/prepack"))
    ap.add_argument("--conversations", default=os.path.join(REPO, "tests/data/chat_templates/conversations.json"))
    ap.add_argument("--bos", default="<s>")
    ap.add_argument("--eos", default="</s>")
    ap.add_argument("--date", default="2026-12-05")
    args = ap.parse_args()
    with open(args.conversations, encoding="utf-8") as f:
        conversations = json.load(f)["conversations"]
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        ctx_path = os.path.join(tmp, "context.json")
        for path in templates_in(args.templates):
            with open(path, encoding="utf-8") as f:
                source = f.read()
            for name, conv in conversations.items():
                conv = dict(conv)
                messages = conv.pop("messages")
                context = oracle.hf_context(messages, tools=conv.pop("tools", None), documents=conv.pop("documents", None),
                                            add_generation_prompt=conv.pop("add_generation_prompt", False),
                                            special_tokens={"bos_token": args.bos, "eos_token": args.eos}, **conv)
                try:
                    want, want_error = oracle.render(source, context, date=args.date), None
                except jinja2.exceptions.TemplateError as e:
                    want, want_error = None, e
                except Exception as e:  # a Python error (e.g. str + list): not a template's answer
                    print(f"skip {path} x {name}: jinja2 raised {type(e).__name__}: {e}")
                    continue
                with open(ctx_path, "w", encoding="utf-8") as f:
                    json.dump(context, f, ensure_ascii=False)
                run = subprocess.run([args.prepack, "chat-template", "render", "--template", path, "--input", ctx_path,
                                      "--date", args.date, "--json"], capture_output=True)
                ok = False
                if want_error is None:
                    ok = run.returncode == 0 and json.loads(run.stdout)["text"] == want
                elif run.returncode != 0:
                    ok = not isinstance(want_error, jinja2.exceptions.TemplateError) or \
                        type(want_error) is not jinja2.exceptions.TemplateError or \
                        str(want_error) in run.stderr.decode("utf-8", "replace")
                if ok:
                    passed += 1
                    continue
                failed += 1
                got = run.stdout.decode("utf-8", "replace") if run.returncode == 0 else run.stderr.decode("utf-8", "replace")
                print(f"MISMATCH {path} x {name}\n  jinja2:  {want if want_error is None else 'error: ' + str(want_error)!r}\n"
                      f"  prepack: {got!r}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
