#!/usr/bin/env python3
"""Renders a chat template as Hugging Face transformers' `apply_chat_template` does, without transformers.

The reference for prepack's C++ Jinja engine (core/jinja/). The environment is
the one transformers builds in
`transformers/utils/chat_template_utils.py::_compile_jinja_template`:

  * `jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True,
    lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols])`,
    with every other setting at jinja2's default (Undefined, not StrictUndefined;
    autoescape off; one trailing newline of the template dropped);
  * AssistantTracker: the `{% generation %}...{% endgeneration %}` block. Outside
    `return_assistant_tokens_mask` it renders its body unchanged, which is all
    the extension here does;
  * `tojson` replaced by `json.dumps(x, ensure_ascii=False, indent=None,
    separators=None, sort_keys=False)` with those keyword arguments open to the
    template (no HTML escaping, keys in their order);
  * globals `raise_exception(message)` (raises jinja2's TemplateError(message))
    and `strftime_now(format)` (datetime.now().strftime(format); here the time
    can be pinned to noon of a given date so output is reproducible);
  * transformers 5.x also replaces the globals `dict` (a callable that only
    builds dicts) and `namespace` (a jinja2 Namespace that refuses attribute
    names starting with "_"); both render exactly as jinja2's own for every
    template that does not try to reach Python internals, and are mirrored here.

`render(template_source, context)` renders `template.render(**context)` with the
context as given. transformers' `apply_chat_template(messages, tools=...,
documents=..., add_generation_prompt=..., **kwargs)` renders the context that
`hf_context(...)` builds: keys in the order messages, tools, documents,
add_generation_prompt, the tokenizer's special tokens, the other kwargs; tools and
documents are None when not given; message keys whose value is None dropped;
a message's reasoning (`reasoning_content`, `thinking` or `reasoning`) copied to
`thinking` and `reasoning_content` (transformers 5.x).

CLI:
  chat_template_oracle.py --template FILE --input CONTEXT.json [--date YYYY-MM-DD] [--json] [--hf]
prints the rendered text exactly (no newline added) to stdout, or with --json
{"text": ...}; on an error from the template exits 1 with the message on
stderr. CONTEXT.json is a JSON object rendered as given (--hf: first built as
apply_chat_template builds it, from its messages, tools, documents,
add_generation_prompt and the other keys as kwargs).
"""

import argparse
import datetime as _dt
import json
import sys

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.utils
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

__all__ = ["render", "compile_template", "make_environment", "hf_context", "TemplateError"]

TemplateError = jinja2.exceptions.TemplateError

_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


class AssistantTracker(Extension):
    """transformers' `{% generation %}` block, without the index tracking: renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    @jinja2.pass_eval_context
    def _generation_support(self, context, caller):
        return caller()


def _raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


class _TemplateDict:
    """transformers 5.x's `dict` global: builds dicts, exposes nothing else."""

    def __call__(self, *args, **kwargs):
        return dict(*args, **kwargs)

    def fromkeys(self, *args, **kwargs):
        return dict.fromkeys(*args, **kwargs)


class _TemplateNamespace(jinja2.utils.Namespace):
    """transformers 5.x's `namespace` global: refuses underscore-prefixed attribute names."""

    def __init__(*args, **kwargs):
        self, args = args[0], args[1:]
        attrs = dict(*args, **kwargs)
        for name in attrs:
            _TemplateNamespace._check_name(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name, value):
        _TemplateNamespace._check_name(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check_name(name):
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(
                f"Chat templates cannot store underscore-prefixed attributes on a namespace, but got {name!r}. "
                "Please rename the attribute."
            )


def _now_for(date):
    """noon of `date` (a datetime.date or "YYYY-MM-DD"), or the current time when date is None."""
    if date is None:
        return None
    if isinstance(date, str):
        date = _dt.date.fromisoformat(date)
    return _dt.datetime(date.year, date.month, date.day, 12, 0, 0)


def make_environment(date=None):
    """The environment transformers compiles chat templates in; strftime_now pinned to noon of `date` if given."""
    now = _now_for(date)

    def strftime_now(format):
        return (now if now is not None else _dt.datetime.now()).strftime(format)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = _TemplateDict()
    env.globals["namespace"] = _TemplateNamespace
    return env


def compile_template(template_source, date=None):
    return make_environment(date).from_string(template_source)


def render(template_source, context, date=None):
    """Renders template_source with `template.render(**context)`. Raises what jinja2 raises
    (TemplateError and its subclasses for template errors, including raise_exception)."""
    return compile_template(template_source, date).render(**context)


def _normalize_messages(messages):
    out = []
    for message in messages:
        if not isinstance(message, dict):
            raise TypeError(f"Chat messages should be dicts, but got {message!r}.")
        message = {k: v for k, v in message.items() if v is not None}
        reasoning = next((message[k] for k in _REASONING_FIELDS if message.get(k) is not None), None)
        if reasoning is not None:
            message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
        out.append(message)
    return out


def hf_context(messages, tools=None, documents=None, add_generation_prompt=False, special_tokens=None, **kwargs):
    """The keyword arguments transformers' apply_chat_template passes to template.render:
    messages, tools, documents, add_generation_prompt, then {**special_tokens, **kwargs}."""
    template_kwargs = {**(special_tokens or {}), **kwargs}
    return {
        "messages": _normalize_messages(messages),
        "tools": tools,
        "documents": documents,
        "add_generation_prompt": add_generation_prompt,
        **template_kwargs,
    }


def _hf_context_from_object(obj):
    obj = dict(obj)
    messages = obj.pop("messages")
    return hf_context(messages, **obj)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--template", required=True, help="the chat template (a Jinja file)")
    ap.add_argument("--input", required=True, help="a JSON object: the render context")
    ap.add_argument("--date", help="pin strftime_now to noon of this date (YYYY-MM-DD); default: now")
    ap.add_argument("--json", action="store_true", help='print {"text": ...} instead of the bare text')
    ap.add_argument("--hf", action="store_true",
                    help="build the context as apply_chat_template does (messages, tools, documents, "
                         "add_generation_prompt, other keys as kwargs) instead of rendering it as given")
    args = ap.parse_args(argv)

    with open(args.template, encoding="utf-8") as f:
        source = f.read()
    with open(args.input, encoding="utf-8") as f:
        context = json.load(f)
    if not isinstance(context, dict):
        ap.error("--input must hold a JSON object")
    if args.date:
        try:
            _dt.date.fromisoformat(args.date)
        except ValueError:
            ap.error(f"--date must be YYYY-MM-DD, got {args.date!r}")
    if args.hf:
        context = _hf_context_from_object(context)
    try:
        text = render(source, context, date=args.date)
    except Exception as e:  # template errors (TemplateError) and Python errors a template triggers
        sys.stderr.write(f"{e}\n")
        return 1
    if args.json:
        text = json.dumps({"text": text}, ensure_ascii=False) + "\n"
    sys.stdout.buffer.write(text.encode("utf-8"))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
