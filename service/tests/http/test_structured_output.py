"""Structured output through prepackd's OpenAI-compatible HTTP API, driven by
the official `openai` client: response_format json_object and json_schema on
chat (SmolLM2-135M-Instruct) and completions (stories260K), the client's
parse() with a Pydantic model, streaming, n=2, vLLM's guided_* fields, the
errors (OpenAI's envelope naming the field), OpenAI batch files through
`prepack batch`, and the grammar counters on /metrics.

Every generated text is checked against its constraint by an independent
judge: json.loads and Python's jsonschema for schemas, re.fullmatch for
regexes, set membership for choices. Run through ctest
(prepackd_http_structured_output), which sets the paths (see
test_openai_http.py, whose Server this shares).
"""

import json
import os
import re
import subprocess
import tempfile

import pytest

openai = pytest.importorskip("openai")
jsonschema = pytest.importorskip("jsonschema")
pydantic = pytest.importorskip("pydantic")

from test_openai_http import (CHAT, CHAT_ID, CLI, STORIES, STORIES_ID, expect_error, server,  # noqa: E402
                              sse_events)

# A person, as OpenAI's strict mode wants it: every property required, none other allowed.
PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 24},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}

# For stories260K, a model that knows no JSON: every value from a closed set,
# so whatever it picks is short and ends.
MOOD = {
    "type": "object",
    "properties": {
        "mood": {"enum": ["happy", "sad", "sleepy"]},
        "count": {"enum": [1, 2, 3]},
        "ok": {"type": "boolean"},
    },
    "required": ["mood", "count", "ok"],
    "additionalProperties": False,
}

ASK_PERSON = [{"role": "system", "content": "You answer in JSON."},
              {"role": "user", "content": "Give the name and age of a person called Ann who is 30 years old."}]


def schema_format(schema, name="answer", strict=True):
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": strict}}


def valid(text, schema):
    """The text parsed, failing the test unless it is JSON valid under `schema`."""
    value = json.loads(text)
    jsonschema.validate(value, schema)
    return value


@pytest.fixture(scope="module")
def stories():
    if not os.path.exists(STORIES):
        pytest.skip(f"{STORIES} absent")
    with server(STORIES) as s:
        yield s


@pytest.fixture(scope="module")
def smol():
    if not os.path.exists(CHAT):
        pytest.skip(f"{CHAT} absent: run scripts/get_models.sh")
    with server(CHAT, "--policy", "fcfs") as s:
        yield s


# ------------------------------------------------------------------- chat

def test_chat_json_object(smol):
    r = smol.client().chat.completions.create(
        model=CHAT_ID, messages=ASK_PERSON, temperature=0, max_tokens=200,
        response_format={"type": "json_object"})
    c = r.choices[0]
    assert c.finish_reason == "stop", c
    assert isinstance(json.loads(c.message.content), dict), c.message.content


def test_chat_json_schema_strict_and_streamed(smol):
    client = smol.client()
    kw = dict(model=CHAT_ID, messages=ASK_PERSON, temperature=0, max_tokens=200,
              response_format=schema_format(PERSON))
    r = client.chat.completions.create(**kw)
    c = r.choices[0]
    assert c.finish_reason == "stop", c
    valid(c.message.content, PERSON)

    # Streamed: the same greedy text, piece by piece, still valid.
    pieces, finish = [], None
    for chunk in client.chat.completions.create(stream=True, **kw):
        for ch in chunk.choices:
            if ch.delta.content:
                pieces.append(ch.delta.content)
            finish = ch.finish_reason or finish
    assert "".join(pieces) == c.message.content
    assert finish == "stop"


def test_chat_parse_with_pydantic(smol):
    class Person(pydantic.BaseModel):
        name: str
        age: int

    r = smol.client().chat.completions.parse(model=CHAT_ID, messages=ASK_PERSON, temperature=0, max_tokens=200,
                                             response_format=Person)
    msg = r.choices[0].message
    assert isinstance(msg.parsed, Person), msg
    # parse() sends the model's strict schema: the text holds to it too.
    valid(msg.content, Person.model_json_schema())


def test_chat_n2_sampled_choices_all_valid(smol):
    r = smol.client().chat.completions.create(
        model=CHAT_ID, messages=ASK_PERSON, temperature=1.0, seed=7, n=2, max_tokens=200,
        response_format=schema_format(PERSON))
    assert len(r.choices) == 2
    for c in r.choices:
        assert c.finish_reason == "stop", c
        valid(c.message.content, PERSON)


# ------------------------------------------------------------ completions

def test_completion_json_schema_n2_and_stream(stories):
    client = stories.client()
    r = client.completions.create(model=STORIES_ID, prompt="Once upon a time", max_tokens=200, temperature=1.0,
                                  seed=3, n=2, extra_body={"response_format": schema_format(MOOD)})
    assert len(r.choices) == 2
    for c in r.choices:
        assert c.finish_reason == "stop", c
        valid(c.text, MOOD)

    # Streamed (raw SSE, so the framing is checked too): valid when joined.
    body = {"model": STORIES_ID, "prompt": "Once upon a time", "max_tokens": 200, "temperature": 0,
            "stream": True, "response_format": schema_format(MOOD)}
    st, headers, raw = stories.raw("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    assert st == 200 and headers["content-type"].startswith("text/event-stream")
    events = sse_events(raw.decode())
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    valid("".join(ch["choices"][0]["text"] for ch in chunks), MOOD)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_completion_json_object(stories):
    r = stories.client().completions.create(model=STORIES_ID, prompt="Once", max_tokens=64, temperature=1.0,
                                            seed=1, extra_body={"response_format": {"type": "json_object"}})
    text = r.choices[0].text
    # Cut short by max_tokens it is an unfinished object; ended, a whole one.
    assert text.lstrip().startswith("{"), text
    if r.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(text), dict), text


@pytest.mark.parametrize("extra, check", [
    ({"guided_regex": "[0-9]{3}-[a-z]{2}"}, lambda t: re.fullmatch(r"[0-9]{3}-[a-z]{2}", t)),
    ({"guided_choice": ["yes", "no", "maybe \"so\""]}, lambda t: t in {"yes", "no", "maybe \"so\""}),
    ({"structured_outputs": {"regex": "(cat|dog)s?"}}, lambda t: re.fullmatch(r"(cat|dog)s?", t)),
    ({"grammar": 'root ::= "a" [0-9] [0-9]?'}, lambda t: re.fullmatch(r"a[0-9][0-9]?", t)),
    ({"guided_json": MOOD}, lambda t: valid(t, MOOD)),
])
def test_completion_vllm_and_llama_cpp_fields(stories, extra, check):
    r = stories.client().completions.create(model=STORIES_ID, prompt="Once upon a time", max_tokens=100,
                                            temperature=1.0, seed=5, n=2, extra_body=extra)
    for c in r.choices:
        assert c.finish_reason == "stop", c
        assert check(c.text), c.text


# ----------------------------------------------------------------- errors

def test_bad_schema_is_400_naming_keyword_and_pointer(stories):
    c = stories.client()
    bad = {"type": "object", "properties": {"x": {"type": "strin"}}}
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as e:
            c.completions.create(model=STORIES_ID, prompt="x", stream=stream,
                                 extra_body={"response_format": schema_format(bad)})
        err = expect_error(e, 400, param="response_format.json_schema.schema", type_="invalid_request_error")
        assert "/properties/x" in err["message"], err
        assert "type" in err["message"], err
    with pytest.raises(openai.BadRequestError) as e:
        c.completions.create(model=STORIES_ID, prompt="x", extra_body={"guided_json": bad})
    assert "/properties/x" in expect_error(e, 400, param="guided_json")["message"]
    for extra, param in [({"guided_regex": "(a"}, "guided_regex"),
                         ({"grammar": 'root ::= "a'}, "grammar"),
                         ({"response_format": {"type": "regex", "regex": "(?<=a)b"}}, "response_format.regex")]:
        with pytest.raises(openai.BadRequestError) as e:
            c.completions.create(model=STORIES_ID, prompt="x", extra_body=extra)
        expect_error(e, 400, param=param)


def test_request_shape_errors(stories):
    c = stories.client()
    msgs = [{"role": "user", "content": "hi"}]
    for kw, param in [
        (dict(response_format={"type": "structural_tag"}), "response_format.type"),
        (dict(response_format={"type": "json_schema", "json_schema": {"name": "p"}}),
         "response_format.json_schema.schema"),
        (dict(response_format={"type": "json_schema", "json_schema": {"name": "a b", "schema": MOOD}}),
         "response_format.json_schema.name"),
        (dict(response_format={"type": "json_object"}, extra_body={"guided_regex": "a"}), "guided_regex"),
        (dict(response_format={"type": "json_object"}, extra_body={"ignore_eos": True}), "ignore_eos"),
    ]:
        with pytest.raises(openai.BadRequestError) as e:
            c.chat.completions.create(model=STORIES_ID, messages=msgs, **kw)
        expect_error(e, 400, param=param, type_="invalid_request_error")


# ------------------------------------------------------- batch, metrics

def test_batch_file_lines_with_response_format(tmp_path):
    if not os.path.exists(STORIES) or not CLI:
        pytest.skip("stories260K or the prepack CLI absent")
    lines = [
        {"custom_id": "schema", "method": "POST", "url": "/v1/completions",
         "body": {"model": STORIES_ID, "prompt": "Once", "max_tokens": 200, "temperature": 0,
                  "response_format": schema_format(MOOD)}},
        {"custom_id": "regex", "method": "POST", "url": "/v1/completions",
         "body": {"model": STORIES_ID, "prompt": "Once", "max_tokens": 50, "temperature": 0,
                  "guided_regex": "[a-c]{4}"}},
        {"custom_id": "bad", "method": "POST", "url": "/v1/completions",
         "body": {"model": STORIES_ID, "prompt": "Once", "response_format": schema_format({"type": "strin"})}},
    ]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(line) + "\n" for line in lines))
    subprocess.run([CLI, "batch", "--model", STORIES, "--threads", "2", "--input", str(src), "--output", str(out)],
                   capture_output=True, text=True, timeout=300)
    got = {j["custom_id"]: j for j in map(json.loads, out.read_text().splitlines())}
    assert set(got) == {"schema", "regex", "bad"}, got
    valid(got["schema"]["response"]["body"]["choices"][0]["text"], MOOD)
    assert re.fullmatch(r"[a-c]{4}", got["regex"]["response"]["body"]["choices"][0]["text"])
    bad = got["bad"]
    status = bad["response"]["status_code"] if bad.get("response") else None
    err = bad["error"] or bad["response"]["body"]["error"]
    assert status in (None, 400), bad
    assert "response_format.json_schema.schema" in json.dumps(err), bad


def _metric(text, name):
    m = re.search(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def test_metrics_count_grammar_requests():
    if not os.path.exists(STORIES):
        pytest.skip(f"{STORIES} absent")
    with server(STORIES) as s:
        c = s.client()
        before = s.raw("GET", "/metrics")[2].decode()
        assert _metric(before, "prepack_grammar_requests_total") == 0.0
        for seed in (1, 2):   # one spec twice: compiled once, then from the cache
            c.completions.create(model=STORIES_ID, prompt="Once", max_tokens=20, seed=seed,
                                 extra_body={"guided_regex": "[0-9]{2}"})
        c.completions.create(model=STORIES_ID, prompt="Once", max_tokens=5)   # unconstrained: not counted
        after = s.raw("GET", "/metrics")[2].decode()
        assert _metric(after, "prepack_grammar_requests_total") == 2.0
        assert _metric(after, "prepack_grammar_compiles_total") == 1.0
        assert _metric(after, "prepack_grammar_cache_hits_total") == 1.0
        assert _metric(after, "prepack_grammar_compile_seconds_total") > 0.0
