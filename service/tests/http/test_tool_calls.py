"""Tool calls through prepackd's OpenAI-compatible HTTP API, driven by the
official `openai` client against SmolLM2-135M-Instruct (whose chat template
has no tool section, so prepack's generic format applies): each tool_choice
("none", "auto", "required", a named function), parallel_tool_calls=False,
streaming added up by the SDK's own stream helper
(client.chat.completions.stream) and by hand, equal to the non-streamed
answer; a follow-up turn carrying the assistant's tool_calls and the tool's
result; the errors (OpenAI's envelope naming the field); OpenAI batch files
with tools through `prepack batch`.

Every call is judged independently of prepack: its arguments by json.loads
and Python's jsonschema against the tool's own `parameters`. Run through
ctest (prepackd_http_tool_calls), which sets the paths (see
test_openai_http.py, whose Server this shares).
"""

import json
import os
import re
import subprocess

import pytest

openai = pytest.importorskip("openai")
jsonschema = pytest.importorskip("jsonschema")

from test_openai_http import CHAT, CHAT_ID, CLI, expect_error, server  # noqa: E402

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object",
                   "properties": {"city": {"type": "string", "maxLength": 20},
                                  "unit": {"enum": ["celsius", "fahrenheit"]}},
                   "required": ["city", "unit"], "additionalProperties": False},
    "strict": True}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The time now in a timezone",
    "parameters": {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET", "PST"]}},
                   "required": ["zone"], "additionalProperties": False},
    "strict": True}}
TOOLS = [WEATHER, TIME]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}

ASK = [{"role": "system", "content": "You are a helpful assistant with tools."},
       {"role": "user", "content": "What is the weather in Paris right now?"}]

# Greedy, and room for a call (~30 tokens) but not for endless text.
GREEDY = dict(temperature=0, max_tokens=120)


@pytest.fixture(scope="module")
def smol():
    if not os.path.exists(CHAT):
        pytest.skip(f"{CHAT} absent: run scripts/get_models.sh")
    # fcfs: no prefix cache, so a greedy request computes its prompt the
    # same way every time and repeats its answer token for token (KV read
    # from a cached prefix may tip a near-tie the other way).
    with server(CHAT, "--policy", "fcfs") as s:
        yield s


def check_call(call, name=None):
    """A complete call: its id, type, a known tool (or `name`), arguments valid under that tool's schema."""
    assert re.fullmatch(r"call_[A-Za-z0-9]{24}", call.id), call.id
    assert call.type == "function"
    assert call.function.name in SCHEMAS, call.function.name
    if name is not None:
        assert call.function.name == name
    args = json.loads(call.function.arguments)
    jsonschema.validate(args, SCHEMAS[call.function.name])
    return args


def summary(message, finish_reason):
    """What the streamed and the non-streamed answer must agree on (ids are per request)."""
    calls = [(c.function.name, c.function.arguments) for c in (message.tool_calls or [])]
    return message.content, calls, finish_reason


# ---------------------------------------------------------------- tool_choice

def test_required_calls_a_tool_and_nothing_else(smol):
    c = smol.client()
    r = c.chat.completions.create(model=CHAT_ID, messages=ASK, tools=TOOLS, tool_choice="required",
                                  parallel_tool_calls=False, **GREEDY)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    assert choice.message.content is None   # only calls: null, not ""
    assert choice.message.role == "assistant"
    assert len(choice.message.tool_calls) == 1   # parallel_tool_calls=False
    check_call(choice.message.tool_calls[0])
    assert r.usage.completion_tokens > 0


def test_named_function_is_the_one_called(smol):
    c = smol.client()
    r = c.chat.completions.create(model=CHAT_ID, messages=ASK, tools=TOOLS, parallel_tool_calls=False,
                                  tool_choice={"type": "function", "function": {"name": "get_time"}}, **GREEDY)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert [t.function.name for t in choice.message.tool_calls] == ["get_time"]
    assert check_call(choice.message.tool_calls[0], "get_time")["zone"] in ("UTC", "CET", "PST")


def test_none_answers_in_text(smol):
    c = smol.client()
    r = c.chat.completions.create(model=CHAT_ID, messages=ASK, tools=TOOLS, tool_choice="none", max_tokens=24,
                                  temperature=0)
    choice = r.choices[0]
    assert choice.message.tool_calls is None
    assert isinstance(choice.message.content, str) and choice.message.content
    assert choice.finish_reason in ("stop", "length")


def test_auto_answers_or_calls_never_both_wrong(smol):
    # "auto" is the default with tools. Whichever the model picks, the answer
    # is well formed: calls valid under their schemas with finish_reason
    # "tool_calls", or text that is not the format's JSON.
    c = smol.client()
    for messages in (ASK, [{"role": "user", "content": "Say hello to Ann."}]):
        r = c.chat.completions.create(model=CHAT_ID, messages=messages, tools=TOOLS, **GREEDY)
        choice = r.choices[0]
        if choice.message.tool_calls:
            assert choice.finish_reason == "tool_calls"
            for call in choice.message.tool_calls:
                check_call(call)
        else:
            assert choice.finish_reason in ("stop", "length")
            assert isinstance(choice.message.content, str)
            assert '"tool_calls"' not in choice.message.content and '"response"' not in choice.message.content


def test_parallel_calls_each_valid_with_own_ids(smol):
    c = smol.client()
    r = c.chat.completions.create(model=CHAT_ID, messages=ASK, tools=TOOLS, tool_choice="required",
                                  temperature=0, max_tokens=400)
    choice = r.choices[0]
    calls = choice.message.tool_calls or []
    assert calls, choice
    if choice.finish_reason == "length":
        calls = calls[:-1]   # the last one may be cut short
    else:
        assert choice.finish_reason == "tool_calls"
    for call in calls:
        check_call(call)
    assert len({t.id for t in choice.message.tool_calls}) == len(choice.message.tool_calls)


# ---------------------------------------------------------------- streaming

@pytest.mark.parametrize("tool_choice", ["required", {"type": "function", "function": {"name": "get_time"}},
                                         "none", "auto"])
def test_stream_adds_up_to_the_non_streamed_answer(smol, tool_choice):
    c = smol.client()
    kw = dict(model=CHAT_ID, messages=ASK, tools=TOOLS, tool_choice=tool_choice, parallel_tool_calls=False,
              **GREEDY)
    whole = c.chat.completions.create(**kw)
    want = summary(whole.choices[0].message, whole.choices[0].finish_reason)
    # The SDK's stream helper (it parses strict tools' arguments as JSON;
    # an answer cut short by max_tokens it refuses to parse).
    if whole.choices[0].finish_reason == "length":
        with pytest.raises(openai.LengthFinishReasonError):
            with c.chat.completions.stream(**kw) as stream:
                for _ in stream:
                    pass
    else:
        with c.chat.completions.stream(**kw) as stream:
            for _ in stream:
                pass
            final = stream.get_final_completion()
        got = final.choices[0]
        assert summary(got.message, got.finish_reason) == want
        for call in got.message.tool_calls or []:
            check_call(call)
            assert call.function.parsed_arguments == json.loads(call.function.arguments)

    # By hand: the chunks' shape, as OpenAI sends them.
    chunks = list(c.chat.completions.create(stream=True, **kw))
    first = chunks[0].choices[0].delta
    # With tools to call, content starts null (an answer of calls alone stays null).
    assert first.role == "assistant" and first.content == ("" if tool_choice == "none" else None)
    content, calls, finish = None, {}, None
    for chunk in chunks:
        for ch in chunk.choices:
            if ch.delta.content is not None:
                content = (content or "") + ch.delta.content
            for d in ch.delta.tool_calls or []:
                if d.index not in calls:
                    # A call's first delta names it, with its id and type.
                    assert d.index == len(calls) and d.id and d.type == "function" and d.function.name
                    calls[d.index] = [d.id, d.function.name, ""]
                else:
                    assert d.id is None and d.type is None and d.function.name is None
                calls[d.index][2] += d.function.arguments or ""
            if ch.finish_reason is not None:
                finish = ch.finish_reason
    assert (content, [(n, a) for _, n, a in calls.values()], finish) == want
    assert all(re.fullmatch(r"call_[A-Za-z0-9]{24}", i) for i, _, _ in calls.values())


def test_n2_streams_each_choice_its_calls(smol):
    c = smol.client()
    chunks = list(c.chat.completions.create(model=CHAT_ID, messages=ASK, tools=TOOLS, tool_choice="required",
                                            parallel_tool_calls=False, n=2, stream=True, **GREEDY))
    args = {0: "", 1: ""}
    finish = {}
    for chunk in chunks:
        for ch in chunk.choices:
            for d in ch.delta.tool_calls or []:
                assert d.index == 0
                args[ch.index] += d.function.arguments or ""
            if ch.finish_reason:
                finish[ch.index] = ch.finish_reason
    assert finish == {0: "tool_calls", 1: "tool_calls"}
    assert args[0] == args[1]   # greedy: the same call
    json.loads(args[0])


# ---------------------------------------------------------------- conversation

def test_follow_up_with_the_tool_result(smol):
    c = smol.client()
    r = c.chat.completions.create(model=CHAT_ID, messages=ASK, tools=TOOLS, tool_choice="required",
                                  parallel_tool_calls=False, **GREEDY)
    call = r.choices[0].message.tool_calls[0]
    messages = ASK + [
        r.choices[0].message,   # the assistant's turn as the SDK gives it (content null)
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temperature": 21, "sky": "sunny"})},
    ]
    for choice in ("none", "auto"):
        r2 = c.chat.completions.create(model=CHAT_ID, messages=messages, tools=TOOLS, tool_choice=choice,
                                       max_tokens=40, temperature=0)
        msg = r2.choices[0].message
        if msg.tool_calls:
            for t in msg.tool_calls:
                check_call(t)
        else:
            assert isinstance(msg.content, str) and msg.content
    # The rendered prompt holds the call and the result (SmolLM2's template writes both).
    as_json = ASK + [r.choices[0].message.model_dump(exclude_unset=True), messages[-1]]
    counts = []
    for m in (ASK, as_json):
        status, _, body = smol.raw("POST", "/tokenize", {"model": CHAT_ID, "messages": m},
                                   {"content-type": "application/json"})
        assert status == 200, body
        counts.append(json.loads(body)["count"])
    assert counts[1] > counts[0] + 10, counts


# ---------------------------------------------------------------- errors

def test_errors_name_the_field(smol):
    c = smol.client()
    bad_schema = {"type": "function", "function": {"name": "f", "parameters": {"type": "frobnicate"}}}
    cases = [
        (dict(tools=TOOLS, tool_choice={"type": "function", "function": {"name": "get_stock"}}),
         "tool_choice.function.name"),
        (dict(tools=[{"type": "custom", "custom": {"name": "f"}}]), "tools[0].type"),
        (dict(tools=[{"type": "function", "function": {"name": "get weather"}}]), "tools[0].function.name"),
        (dict(tools=[{"type": "function"}]), "tools[0].function"),
        (dict(tools=[WEATHER, WEATHER]), "tools[1].function.name"),
        (dict(tools=[{"type": "function", "function": {"name": "f", "parameters": "{}"}}]),
         "tools[0].function.parameters"),
        (dict(tools=[bad_schema], tool_choice="required"), "tools[0].function.parameters"),
        (dict(tool_choice="required"), "tool_choice"),
        (dict(tools=TOOLS, tool_choice="sometimes"), "tool_choice"),
        (dict(tools=TOOLS, response_format={"type": "json_object"}), "response_format"),
        (dict(tools=TOOLS, parallel_tool_calls="no"), "parallel_tool_calls"),
    ]
    for kw, param in cases:
        for stream in (False, True):
            with pytest.raises(openai.BadRequestError) as e:
                c.chat.completions.create(model=CHAT_ID, messages=ASK, max_tokens=8, stream=stream, **kw)
            expect_error(e, 400, param=param, type_="invalid_request_error")
    with pytest.raises(openai.BadRequestError) as e:
        c.chat.completions.create(model=CHAT_ID, messages=ASK, tools=TOOLS, max_tokens=8,
                                  tool_choice={"type": "function", "function": {"name": "get_stock"}})
    assert "get_stock" in e.value.response.json()["error"]["message"]


# ---------------------------------------------------------------- batch files

def test_batch_file_lines_with_tools(tmp_path):
    if not os.path.exists(CHAT) or not CLI:
        pytest.skip("SmolLM2-135M-Instruct or the prepack CLI absent")
    body = dict(model=CHAT_ID, messages=ASK, tools=TOOLS, parallel_tool_calls=False, **GREEDY)
    lines = [
        {"custom_id": "required", "method": "POST", "url": "/v1/chat/completions",
         "body": dict(body, tool_choice="required")},
        {"custom_id": "none", "method": "POST", "url": "/v1/chat/completions",
         "body": dict(body, tool_choice="none", max_tokens=16)},
        {"custom_id": "bad", "method": "POST", "url": "/v1/chat/completions",
         "body": dict(body, tool_choice={"type": "function", "function": {"name": "get_stock"}})},
    ]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(line) + "\n" for line in lines))
    p = subprocess.run([CLI, "batch", "--model", CHAT, "--threads", "2", "--input", str(src), "--output", str(out)],
                       capture_output=True, text=True, timeout=300)
    got = {j["custom_id"]: j for j in map(json.loads, out.read_text().splitlines())}
    assert set(got) == {"required", "none", "bad"}, p.stderr
    choice = got["required"]["response"]["body"]["choices"][0]
    assert choice["finish_reason"] == "tool_calls", choice
    assert choice["message"]["content"] is None
    [call] = choice["message"]["tool_calls"]
    assert re.fullmatch(r"call_[A-Za-z0-9]{24}", call["id"]) and call["type"] == "function"
    jsonschema.validate(json.loads(call["function"]["arguments"]), SCHEMAS[call["function"]["name"]])
    none = got["none"]["response"]["body"]["choices"][0]
    assert "tool_calls" not in none["message"] and isinstance(none["message"]["content"], str)
    bad = got["bad"]
    err = bad["error"] or bad["response"]["body"]["error"]
    assert "tool_choice.function.name" in json.dumps(err), bad
