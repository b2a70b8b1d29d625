"""prepackd's OpenAI-compatible HTTP API, driven by the official `openai`
Python client (and raw HTTP where the bytes themselves are the point) against
live prepackd processes started here.

Completions run on stories260K (../shared/models), chat on the real
SmolLM2-135M-Instruct (build/models, scripts/get_models.sh); tests skip when
their model is absent. Greedy outputs are compared with the CLI's
(`prepack generate`, `prepack chat`), streamed output with the non-streamed
one; the engine's own counters (GetStats through prepackd_stats, a tiny gRPC
client built beside prepackd) show a disconnected request gone and a prompt
of n choices computed once. Run through ctest (prepackd_http_openai), which
sets the paths below.
"""

import contextlib
import ctypes
import http.client
import json
import os
import queue
import re
import select
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time

import pytest

openai = pytest.importorskip("openai")

PREPACKD = os.environ.get("PREPACKD", "")
STATS = os.environ.get("PREPACKD_STATS", "")
CLI = os.environ.get("PREPACK_CLI", "")
STORIES = os.environ.get("PREPACK_STORIES", "")
CHAT = os.environ.get("PREPACK_CHAT_MODEL", "")

if not PREPACKD or not os.path.exists(PREPACKD):
    pytest.skip("PREPACKD (the prepackd binary) is not set; run through ctest", allow_module_level=True)

need_stories = pytest.mark.skipif(not os.path.exists(STORIES), reason=f"{STORIES} absent (../shared/models)")
need_chat = pytest.mark.skipif(not os.path.exists(CHAT), reason=f"{CHAT} absent: run scripts/get_models.sh")

STORIES_ID = "stories260K"
CHAT_ID = "SmolLM2-135M-Instruct.Q4_1"
DONE = "data: [DONE]\n\n"


def _die_with_parent():
    # The server gets SIGTERM if pytest dies (a ctest timeout).
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG


class Server:
    """A prepackd child on 127.0.0.1 (gRPC and HTTP on free ports)."""

    def __init__(self, model, *args, wait_serving=True, token_file=None, ca=None):
        self.token_args = ["--token-file", token_file] if token_file else []
        self.ssl_context = ssl.create_default_context(cafile=ca) if ca else None
        self.log = tempfile.NamedTemporaryFile(prefix="prepackd-http-", suffix=".log", delete=False)
        cmd = [PREPACKD, "--model", model, "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0",
               "--threads", "2", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     preexec_fn=_die_with_parent)
        self.grpc = self._line("prepackd listening on ")
        self.http = self._line("prepackd http listening on ")
        self.scheme = "https" if "--tls-cert" in args else "http"
        if wait_serving:
            deadline = time.time() + 60
            while self.raw("GET", "/health")[0] != 200:
                assert time.time() < deadline, "prepackd did not turn serving: " + self.log_text()
                time.sleep(0.02)

    def _line(self, prefix, timeout=60):
        # A thread reads stdout (a buffered pipe: select() cannot tell what
        # readline() already holds).
        if not hasattr(self, "_lines"):
            self._lines = queue.Queue()

            def pump(out, q):
                for line in out:
                    q.put(line)
                q.put(None)

            threading.Thread(target=pump, args=(self.proc.stdout, self._lines), daemon=True).start()
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                line = self._lines.get(timeout=max(0.01, deadline - time.time()))
            except queue.Empty:
                break
            if line is None:
                break
            if line.startswith(prefix):
                return line[len(prefix):].strip()
        raise AssertionError(f"prepackd printed no '{prefix}' line: " + self.log_text())

    def log_text(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def stop(self):
        """SIGTERM; the server must drain and exit 0 (under ASan: no leak, no error report)."""
        rc = self.proc.poll()
        if rc is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                rc = "killed after 60 s"
        log = self.log_text()
        os.unlink(self.log.name)
        assert rc == 0, f"prepackd exited {rc}: {log[-4000:]}"

    def client(self, api_key="unused", **kw):
        return openai.OpenAI(base_url=f"{self.scheme}://{self.http}/v1", api_key=api_key, max_retries=0,
                             timeout=120, **kw)

    def conn(self, timeout=60):
        host, port = self.http.rsplit(":", 1)
        if self.scheme == "https":
            return http.client.HTTPSConnection(host, int(port), timeout=timeout, context=self.ssl_context)
        return http.client.HTTPConnection(host, int(port), timeout=timeout)

    def raw(self, method, path, body=None, headers=None, timeout=60):
        """(status, headers, body bytes) of one request on a fresh connection."""
        c = self.conn(timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def stats(self):
        out = subprocess.run([STATS, self.grpc, *self.token_args], capture_output=True, text=True, timeout=30,
                             check=True)
        return json.loads(out.stdout)

    def wait_idle(self, ms):
        """Milliseconds until nothing is in flight in the engine or its slots, or None."""
        out = subprocess.run([STATS, self.grpc, *self.token_args, "--idle", str(ms)], capture_output=True, text=True,
                             timeout=60)
        return json.loads(out.stdout)["idle_after_ms"]

    def wait_running(self, n, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            s = self.stats()
            if int(s["requests_running"]) >= n:
                return s
            time.sleep(0.01)
        raise AssertionError(f"never {n} requests running")


@contextlib.contextmanager
def server(model, *args, **kw):
    s = Server(model, *args, **kw)
    try:
        yield s
    finally:
        s.stop()


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
    # fcfs: these tests compare answers with the CLI's and with each other
    # token for token. A prompt whose start comes from the prefix cache
    # computes only its tail, on the few-row kernels, and greedy near-ties
    # may part (and did, in an AVX2 Debug build): not what these check.
    # Prefix caching has its own tests (n, usage, metrics) on stories260K.
    with server(CHAT, "--policy", "fcfs") as s:
        yield s


def sse_events(body):
    """The data: payloads of an SSE body (str), checking the framing."""
    assert body.endswith("\n\n"), body[-200:]
    events = body[:-2].split("\n\n")
    for e in events:
        assert e.startswith("data: "), e
    return [e[len("data: "):] for e in events]


def compact(obj):
    """JSON as prepackd writes it (nlohmann's compact dump)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def cli_generate(model, prompt, max_tokens):
    out = subprocess.run([CLI, "generate", "--model", model, "--prompt", prompt, "--temperature", "0",
                          "--max-tokens", str(max_tokens), "--threads", "2", "--json"],
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


def cli_chat(model, user, max_tokens, system=None):
    cmd = [CLI, "chat", "--model", model, "--temperature", "0", "--max-tokens", str(max_tokens), "--threads", "2",
           "--policy", "fcfs"]
    if system:
        cmd += ["--system", system]
    out = subprocess.run(cmd, input=user + "\n", capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.endswith("\n")
    return out.stdout[:-1]


def expect_error(excinfo_or_response, status, param=None, code=None, type_=None):
    """An OpenAI error envelope with this status (and param/code when given)."""
    if isinstance(excinfo_or_response, tuple):
        st, headers, body = excinfo_or_response
        assert st == status, body
        assert headers["content-type"] == "application/json"
        env = json.loads(body)
    else:
        e = excinfo_or_response.value
        assert e.status_code == status, e
        env = e.response.json()
    assert set(env) == {"error"}, env
    err = env["error"]
    assert set(err) == {"message", "type", "param", "code"}, err
    assert isinstance(err["message"], str) and err["message"]
    if param is not None:
        assert err["param"] == param, err
    if code is not None:
        assert err["code"] == code, err
    if type_ is not None:
        assert err["type"] == type_, err
    return err


# ----------------------------------------------------------------- basics

@need_stories
def test_health_models(stories):
    st, headers, body = stories.raw("GET", "/health")
    assert st == 200 and json.loads(body) == {"status": "ok"}
    c = stories.client()
    models = c.models.list()
    assert [m.id for m in models.data] == [STORIES_ID]
    m = c.models.retrieve(STORIES_ID)
    assert m.id == STORIES_ID and m.object == "model" and m.owned_by == "prepack"
    with pytest.raises(openai.NotFoundError) as e:
        c.models.retrieve("gpt-4")
    expect_error(e, 404, code="model_not_found")


def get_json(s, path):
    st, headers, body = s.raw("GET", path)
    assert st == 200, body
    assert headers["content-type"] == "application/json"
    return json.loads(body)


@need_stories
def test_router_worker_endpoints(stories):
    # What SGLang's router (smg) reads from a worker: metadata under SGLang's
    # older names (not /server_info, by which smg would take prepackd for
    # SGLang) and the load in SGLang's /v1/loads schema, from the engine.
    info = get_json(stories, "/get_server_info")
    assert info == {"model_path": STORIES, "served_model_name": STORIES_ID, "context_length": 512,
                    "max_running_requests": 64, "max_queued_requests": 256, "tp_size": 1, "dp_size": 1,
                    "is_embedding": False, "version": info["version"]}
    assert re.fullmatch(r"\d+\.\d+\.\d+", info["version"])
    assert get_json(stories, "/v1/models")["data"][0]["max_model_len"] == info["context_length"]
    assert get_json(stories, "/get_model_info") == {
        "model_path": STORIES, "is_generation": True, "model_type": "llama",
        "has_image_understanding": False, "has_audio_understanding": False}
    for path in ["/server_info", "/model_info"]:
        expect_error(stories.raw("GET", path), 404)
    for path in ["/get_server_info", "/get_model_info", "/v1/loads"]:
        st, headers, _ = stories.raw("POST", path, b"{}", {"Content-Type": "application/json"})
        assert st == 405 and headers["allow"] == "GET", path

    def load():
        j = get_json(stories, "/v1/loads?include=core,disagg,queues,memory")
        assert set(j) == {"timestamp", "version", "dp_rank_count", "loads"} and j["dp_rank_count"] == 1
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", j["timestamp"]) and j["version"] == info["version"]
        (rank,) = j["loads"]
        assert rank["dp_rank"] == 0 and rank["max_running_requests"] == 64
        assert rank["num_total_reqs"] == rank["num_running_reqs"] + rank["num_waiting_reqs"]
        return rank

    assert stories.wait_idle(10000) is not None
    idle = load()
    assert idle["num_running_reqs"] == idle["num_waiting_reqs"] == 0 and idle["token_usage"] == 0
    # A stream under way: one request running, holding KV.
    stream = stories.client().completions.create(model=STORIES_ID, prompt="Once upon a time", max_tokens=400,
                                                 temperature=0, stream=True, extra_body={"ignore_eos": True})
    next(iter(stream))
    busy = load()
    stream.close()
    assert busy["num_running_reqs"] == 1 and busy["num_waiting_reqs"] == 0
    assert 0 < busy["token_usage"] <= 1
    # The prefix cache's hit rate since start, as GetStats counts it.
    prompt = " ".join(["Once upon a time there was a little girl named Lily who loved to play outside."] * 3)
    for _ in range(2):
        stories.client().completions.create(model=STORIES_ID, prompt=prompt, max_tokens=2, temperature=0)
    assert stories.wait_idle(10000) is not None
    st, rank = stories.stats(), load()
    assert int(st["prefix_hit_tokens"]) > 0
    assert rank["cache_hit_rate"] == pytest.approx(int(st["prefix_hit_tokens"]) / int(st["prefix_query_tokens"]))


@need_stories
def test_completion_greedy_matches_cli_and_stream(stories):
    prompt = "Once upon a time"
    cli = cli_generate(STORIES, prompt, 40)
    c = stories.client()
    r = c.completions.create(model=STORIES_ID, prompt=prompt, max_tokens=40, temperature=0)
    assert r.object == "text_completion" and r.model == STORIES_ID and r.id.startswith("cmpl-")
    assert len(r.choices) == 1 and r.choices[0].index == 0
    assert r.choices[0].text == cli["text"]
    assert r.choices[0].finish_reason == "length"
    u = r.usage
    n_prompt = len(cli["prompt_tokens"])
    assert (u.prompt_tokens, u.completion_tokens, u.total_tokens) == (n_prompt, 40, n_prompt + 40)
    assert u.prompt_tokens_details.cached_tokens == 0
    assert u.completion_tokens_details.reasoning_tokens == 0

    chunks = list(c.completions.create(model=STORIES_ID, prompt=prompt, max_tokens=40, temperature=0, stream=True,
                                       stream_options={"include_usage": True}))
    assert chunks[-1].choices == [] and chunks[-1].usage.model_dump() == u.model_dump()
    body = chunks[:-1]
    assert all(ch.usage is None for ch in body)
    assert "".join(ch.choices[0].text for ch in body) == cli["text"]
    finishes = [ch.choices[0].finish_reason for ch in body if ch.choices[0].finish_reason is not None]
    assert finishes == ["length"] and body[-1].choices[0].finish_reason == "length"
    assert len({ch.id for ch in chunks}) == 1 and all(ch.object == "text_completion" for ch in chunks)

    # Without include_usage: no usage anywhere, no empty-choices chunk.
    plain = list(c.completions.create(model=STORIES_ID, prompt=prompt, max_tokens=40, temperature=0, stream=True))
    assert all(ch.usage is None and len(ch.choices) == 1 for ch in plain)
    assert "".join(ch.choices[0].text for ch in plain) == cli["text"]


@need_stories
def test_completion_prompt_forms(stories):
    c = stories.client()
    prompt = "The cat sat"
    ids = json.loads(stories.raw("POST", "/tokenize", {"prompt": prompt})[2])["tokens"]
    text = c.completions.create(model=STORIES_ID, prompt=prompt, max_tokens=12, temperature=0).choices[0].text
    by_ids = c.completions.create(model=STORIES_ID, prompt=ids, max_tokens=12, temperature=0)
    assert by_ids.choices[0].text == text and by_ids.usage.prompt_tokens == len(ids)
    other = c.completions.create(model=STORIES_ID, prompt="A dog", max_tokens=12, temperature=0).choices[0].text
    several = c.completions.create(model=STORIES_ID, prompt=[prompt, "A dog"], max_tokens=12, temperature=0)
    assert [ch.index for ch in several.choices] == [0, 1]
    assert [ch.text for ch in several.choices] == [text, other]
    lists = c.completions.create(model=STORIES_ID, prompt=[ids, ids], max_tokens=12, temperature=0)
    assert [ch.text for ch in lists.choices] == [text, text]
    assert lists.usage.prompt_tokens == 2 * len(ids) and lists.usage.completion_tokens == 24
    # echo: the prompt first (token prompts detokenized), streamed too.
    echo = c.completions.create(model=STORIES_ID, prompt=prompt, max_tokens=12, temperature=0, echo=True)
    assert echo.choices[0].text == prompt + text
    streamed = c.completions.create(model=STORIES_ID, prompt=ids, max_tokens=12, temperature=0, echo=True,
                                    stream=True)
    assert "".join(ch.choices[0].text for ch in streamed) == prompt + text


@need_stories
def test_completion_logprobs(stories):
    c = stories.client()
    r = c.completions.create(model=STORIES_ID, prompt="Once upon a time", max_tokens=16, temperature=0, logprobs=3)
    lp = r.choices[0].logprobs
    n = r.usage.completion_tokens
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == n
    assert "".join(lp.tokens) == r.choices[0].text
    assert lp.text_offset == [sum(len(t) for t in lp.tokens[:i]) for i in range(n)]
    for tok, lpv, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
        assert lpv <= 0.0 and 1 <= len(top) <= 3
        best = max(top, key=top.get)
        assert best == tok and abs(top[best] - lpv) < 1e-4   # greedy: the chosen token is the best
    streamed = list(c.completions.create(model=STORIES_ID, prompt="Once upon a time", max_tokens=16, temperature=0,
                                         logprobs=3, stream=True))
    toks = [t for ch in streamed if ch.choices[0].logprobs for t in ch.choices[0].logprobs.tokens]
    assert toks == lp.tokens
    offs = [o for ch in streamed if ch.choices[0].logprobs for o in ch.choices[0].logprobs.text_offset]
    assert offs == lp.text_offset


@need_stories
def test_echo_logprobs_score_the_prompt(stories):
    # echo + logprobs (what evaluation harnesses score texts by): the prompt's
    # tokens first, the first with null log-prob and alternatives, then the
    # answer's. Checked against the model itself on another path: the answer
    # fed back as part of a prompt is scored by prefill as decode scored it.
    c = stories.client()
    prompt = "Once upon a time"
    n_prompt = len(json.loads(stories.raw("POST", "/tokenize", {"prompt": prompt})[2])["tokens"])
    r = c.completions.create(model=STORIES_ID, prompt=prompt, max_tokens=12, temperature=0, echo=True, logprobs=2)
    ch = r.choices[0]
    lp = ch.logprobs
    assert r.usage.prompt_tokens == n_prompt and r.usage.completion_tokens == 12
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == n_prompt + 12
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    assert "".join(lp.tokens) == ch.text and ch.text.startswith(prompt)
    assert lp.text_offset == [sum(len(t) for t in lp.tokens[:i]) for i in range(len(lp.tokens))]
    for tok, lpv, top in zip(lp.tokens[1:], lp.token_logprobs[1:], lp.top_logprobs[1:]):
        assert lpv <= 0.0 and 1 <= len(top) <= 2 and max(top.values()) >= lpv - 1e-6
        if tok in top:
            assert abs(top[tok] - lpv) < 1e-5
    # The whole text as a prompt: its first n_prompt scores are those of the
    # same positions in a longer prefill; the answer's, teacher-forced, what
    # decode reported. (Equal up to rounding: how many rows a step has
    # picks the kernels.)
    again = c.completions.create(model=STORIES_ID, prompt=ch.text, max_tokens=1, temperature=0, echo=True, logprobs=2)
    lp2 = again.choices[0].logprobs
    assert lp2.tokens[:len(lp.tokens)] == lp.tokens, "the text does not tokenize back to the same tokens"
    assert lp2.token_logprobs[0] is None
    for a, b in zip(lp2.token_logprobs[1:len(lp.tokens)], lp.token_logprobs[1:]):
        assert abs(a - b) < 1e-3, (a, b)
    # Streamed: the echoed prompt with its log-probs in the first chunk, then a chunk per token.
    chunks = list(c.completions.create(model=STORIES_ID, prompt=prompt, max_tokens=12, temperature=0, echo=True,
                                       logprobs=2, stream=True))
    assert chunks[0].choices[0].text == prompt
    assert chunks[0].choices[0].logprobs.token_logprobs == lp.token_logprobs[:n_prompt]
    assert "".join(x.choices[0].text for x in chunks) == ch.text
    assert [v for x in chunks if x.choices[0].logprobs for v in x.choices[0].logprobs.token_logprobs] == \
        lp.token_logprobs
    assert [o for x in chunks if x.choices[0].logprobs for o in x.choices[0].logprobs.text_offset] == lp.text_offset


@need_stories
def test_stop_across_token_boundaries(stories):
    c = stories.client()
    full = c.completions.create(model=STORIES_ID, prompt="Once upon a time", max_tokens=30,
                                temperature=0).choices[0].text
    assert full.startswith(", there was a little girl"), full
    # " was a l" spans three tokens (" was", " a", " little"); what precedes it is all that may come out.
    for stop in ["e was a l", ["zzz", "s a lit"], "little girl named"]:
        first = min(full.find(s) for s in ([stop] if isinstance(stop, str) else stop) if s in full)
        want = full[:first]
        r = c.completions.create(model=STORIES_ID, prompt="Once upon a time", max_tokens=30, temperature=0, stop=stop)
        assert r.choices[0].text == want and r.choices[0].finish_reason == "stop"
        deltas = [ch.choices[0].text for ch in c.completions.create(
            model=STORIES_ID, prompt="Once upon a time", max_tokens=30, temperature=0, stop=stop, stream=True)]
        assert "".join(deltas) == want   # a partial match never leaked into a delta
        for i in range(len(deltas)):
            assert want.startswith("".join(deltas[:i + 1]))


@need_stories
def test_n_choices(stories):
    c = stories.client()
    one = c.completions.create(model=STORIES_ID, prompt="Once upon a time", max_tokens=20, temperature=0)
    three = c.completions.create(model=STORIES_ID, prompt="Once upon a time", max_tokens=20, temperature=0, n=3)
    assert [ch.index for ch in three.choices] == [0, 1, 2]
    assert all(ch.text == one.choices[0].text for ch in three.choices)
    assert three.usage.prompt_tokens == one.usage.prompt_tokens          # the prompt counted once
    assert three.usage.completion_tokens == 3 * one.usage.completion_tokens
    # Sampled: a seed makes the choices reproducible; they differ from each other.
    a = c.completions.create(model=STORIES_ID, prompt="Once upon a time", max_tokens=20, temperature=1.0, seed=7, n=4)
    b = c.completions.create(model=STORIES_ID, prompt="Once upon a time", max_tokens=20, temperature=1.0, seed=7, n=4)
    assert [ch.text for ch in a.choices] == [ch.text for ch in b.choices]
    assert len({ch.text for ch in a.choices}) > 1
    # Streamed: each choice has exactly one finish chunk, deltas per choice join to its text.
    chunks = list(c.completions.create(model=STORIES_ID, prompt="Once upon a time", max_tokens=20, temperature=1.0,
                                       seed=7, n=4, stream=True, stream_options={"include_usage": True}))
    texts, finishes = ["" for _ in range(4)], [[] for _ in range(4)]
    for ch in chunks[:-1]:
        assert len(ch.choices) == 1
        texts[ch.choices[0].index] += ch.choices[0].text
        if ch.choices[0].finish_reason:
            finishes[ch.choices[0].index].append(ch.choices[0].finish_reason)
    assert texts == [ch.text for ch in a.choices]
    assert finishes == [[ch.finish_reason] for ch in a.choices]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == a.usage.completion_tokens


@need_stories
def test_n_computes_the_prompt_once():
    # The n copies of a prompt share its KV: under --policy batchllm they are
    # one batch whose prefix is computed once; under the default (lru, prefix
    # caching) the later copies wait for the first one's blocks and take them
    # from the cache, computing only the tail past its last whole 16-token
    # block (never the last token: each needs its own logits).
    prompt = " ".join(["Once upon a time there was a little girl named Lily who loved to play outside."] * 6)

    def computed_for_n4(s):
        before = s.stats()
        r = s.client().completions.create(model=STORIES_ID, prompt=prompt, max_tokens=8, temperature=0, n=4)
        after = s.stats()
        assert len(r.choices) == 4
        submitted = int(after["prompt_tokens"]) - int(before["prompt_tokens"])
        assert submitted == 4 * r.usage.prompt_tokens
        return int(after["prompt_tokens_computed"]) - int(before["prompt_tokens_computed"]), r

    with server(STORIES, "--policy", "batchllm") as s:
        computed, r = computed_for_n4(s)
        p = r.usage.prompt_tokens
        assert p > 100
        assert computed < p + 4 * 16, (computed, p)   # once, plus at most a block per choice
        assert r.usage.prompt_tokens_details.cached_tokens > p - 20
    with server(STORIES) as s:
        computed, r = computed_for_n4(s)
        tail = p - (p - 1) // 16 * 16
        assert computed == p + 3 * tail, (computed, p)
        # cached_tokens counts what every choice read from KV computed before
        # the request (the first choice computed it): none, then all but the
        # tail when the same prompt comes again.
        assert r.usage.prompt_tokens_details.cached_tokens == 0
        computed, r = computed_for_n4(s)
        assert computed == 4 * tail, (computed, p)
        assert r.usage.prompt_tokens_details.cached_tokens == p - tail
    # fcfs shares nothing: the prompt n times.
    with server(STORIES, "--policy", "fcfs") as s:
        computed, _ = computed_for_n4(s)
        assert computed == 4 * p


@need_stories
def test_raw_sse_transcript_byte_for_byte(stories):
    body = {"model": STORIES_ID, "prompt": "Once", "max_tokens": 4, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    st, headers, raw = stories.raw("POST", "/v1/completions", body)
    assert st == 200
    assert headers["content-type"] == "text/event-stream"
    assert headers["transfer-encoding"] == "chunked" and headers["cache-control"] == "no-cache"
    text = raw.decode()
    first = json.loads(sse_events(text)[0])
    rid, created = first["id"], first["created"]
    assert re.fullmatch(r"cmpl-[0-9a-f]{24}", rid) and abs(created - time.time()) < 60

    def chunk(t, finish):
        return ('data: {"id":"%s","object":"text_completion","created":%d,"model":"stories260K","choices":'
                '[{"index":0,"text":%s,"logprobs":null,"finish_reason":%s}],"usage":null}\n\n'
                % (rid, created, json.dumps(t), "null" if finish is None else '"%s"' % finish))

    want = "".join(chunk(t, None) for t in [" upon", " a", " time", ","]) + chunk("", "length")
    want += ('data: {"id":"%s","object":"text_completion","created":%d,"model":"stories260K","choices":[],'
             '"usage":{"prompt_tokens":2,"completion_tokens":4,"total_tokens":6,"prompt_tokens_details":'
             '{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}\n\n' % (rid, created))
    want += DONE
    assert text == want


@need_stories
def test_tokenize_detokenize(stories):
    st, _, body = stories.raw("POST", "/tokenize", {"model": STORIES_ID, "prompt": "Once upon a time"})
    assert st == 200
    got = json.loads(body)
    assert got == {"count": 5, "max_model_len": 512, "tokens": [1, 403, 407, 261, 378]}   # prepack tokenize's ids
    assert json.loads(stories.raw("POST", "/tokenize", {"prompt": "Once upon a time",
                                                        "add_special_tokens": False})[2])["tokens"] == [403, 407, 261, 378]
    st, _, body = stories.raw("POST", "/detokenize", {"tokens": [1, 403, 407, 261, 378]})
    assert st == 200 and json.loads(body) == {"prompt": "Once upon a time"}
    expect_error(stories.raw("POST", "/detokenize", {"tokens": [1, 99999]}), 400, param="tokens[1]")
    expect_error(stories.raw("POST", "/tokenize", {"text": "x"}), 400, param="text")
    expect_error(stories.raw("POST", "/tokenize", {"prompt": "x", "model": "nope"}), 404, param="model")
    # No chat template on stories260K: the message says how to give one.
    err = expect_error(stories.raw("POST", "/tokenize", {"messages": [{"role": "user", "content": "hi"}]}), 400)
    assert "--chat-template-file" in err["message"]


# ----------------------------------------------------------------- errors

@need_stories
def test_field_errors(stories):
    c = stories.client()
    m = STORIES_ID
    cases = [
        (dict(prompt="x", presence_penalty=0.5), "presence_penalty"),
        (dict(prompt="x", frequency_penalty=-1), "frequency_penalty"),
        (dict(prompt="x", suffix="tail"), "suffix"),
        (dict(prompt="x", echo=True, logprobs=2, extra_body={"lazy": True}), "echo"),
        (dict(prompt="x", best_of=3), "best_of"),
        (dict(prompt="x", logit_bias={"50": 10}), "logit_bias"),
        (dict(prompt="x", logprobs=21), "logprobs"),
        (dict(prompt="x", temperature=2.5), "temperature"),
        (dict(prompt="x", top_p=0), "top_p"),
        (dict(prompt="x", n=0), "n"),
        (dict(prompt="x", max_tokens=0), "max_tokens"),
        (dict(prompt="x", stop=["a"] * 17), "stop"),
        (dict(prompt="x", stop=[""]), "stop[0]"),
        (dict(prompt="x", extra_body={"foo": 1}), "foo"),
        (dict(prompt="x", extra_body={"max_tokens": "ten"}), "max_tokens"),
        (dict(prompt=[1, 2, 99999]), "prompt[2]"),
        (dict(prompt=[]), "prompt"),
        (dict(prompt="x", stream_options={"include_usage": True}), "stream_options"),
        (dict(prompt="x", extra_body={"lazy_keep_ratio": 2.0}), "lazy_keep_ratio"),
    ]
    for kw, param in cases:
        with pytest.raises(openai.BadRequestError) as e:
            c.completions.create(model=m, **kw)
        expect_error(e, 400, param=param, type_="invalid_request_error")
    chat_cases = [
        (dict(response_format={"type": "structural_tag"}), "response_format.type"),
        (dict(response_format={"type": "json_schema", "json_schema": {"schema": {}}}), "response_format.json_schema.name"),
        (dict(tools=[{"type": "function", "function": {"name": "f"}}],
              tool_choice={"type": "function", "function": {"name": "g"}}), "tool_choice.function.name"),
        (dict(tools=[{"type": "function", "function": {"name": "f", "parameters": []}}]), "tools[0].function.parameters"),
        (dict(tool_choice="required"), "tool_choice"),
        (dict(top_logprobs=3), "top_logprobs"),
        (dict(logprobs=True, top_logprobs=21), "top_logprobs"),
        (dict(presence_penalty=1), "presence_penalty"),
        (dict(extra_body={"functions": []}), "functions"),
        (dict(max_tokens=5, max_completion_tokens=6), "max_completion_tokens"),
    ]
    msgs = [{"role": "user", "content": "hi"}]
    for kw, param in chat_cases:
        with pytest.raises(openai.BadRequestError) as e:
            c.chat.completions.create(model=m, messages=msgs, **kw)
        expect_error(e, 400, param=param)
    for messages, param in [
        ([], "messages"),
        ([{"role": "wizard", "content": "x"}], "messages[0].role"),
        ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}], "messages[0].content[0].type"),
        ([{"role": "user", "content": "x", "extra": 1}], "messages[0].extra"),
        ([{"role": "user", "content": "x", "audio": None}], "messages[0].audio"),
        ([{"role": "user"}], "messages[0].content"),
        ([{"role": "user", "content": 5}], "messages[0].content"),
    ]:
        with pytest.raises(openai.BadRequestError) as e:
            c.chat.completions.create(model=m, messages=messages)
        expect_error(e, 400, param=param)
    with pytest.raises(openai.NotFoundError) as e:
        c.completions.create(model="gpt-3.5-turbo-instruct", prompt="x")
    expect_error(e, 404, param="model", code="model_not_found")
    # stories260K has no chat template: 400 naming --chat-template-file.
    with pytest.raises(openai.BadRequestError) as e:
        c.chat.completions.create(model=m, messages=msgs)
    assert "--chat-template-file" in expect_error(e, 400)["message"]


@need_stories
def test_context_length_exceeded(stories):
    c = stories.client()
    for kw in [dict(prompt="Once upon a time " * 200, max_tokens=1),   # ~800 tokens > 512
               dict(prompt="Once", max_tokens=600),
               dict(prompt="x" * 20000, max_tokens=1)]:                   # past --max-prompt-bytes, never tokenized
        with pytest.raises(openai.BadRequestError) as e:
            c.completions.create(model=STORIES_ID, **kw)
        expect_error(e, 400, code="context_length_exceeded")


@need_stories
def test_malformed_requests(stories):
    hdr = {"Content-Type": "application/json"}
    expect_error(stories.raw("POST", "/v1/completions", b'{"model": "stories260K", "prompt": ', hdr), 400)
    expect_error(stories.raw("POST", "/v1/completions", b'[1, 2]', hdr), 400)
    expect_error(stories.raw("POST", "/v1/completions", b'', hdr), 400)
    err = expect_error(stories.raw("POST", "/v1/completions",
                                   b'{"model": "stories260K", "prompt": "\xff\xfe bad"}', hdr), 400)
    assert "UTF-8" in err["message"]
    expect_error(stories.raw("POST", "/v1/completions",
                             b'{"model": "stories260K", "prompt": "\\ud800"}', hdr), 400)
    deep = b'{"model": "stories260K", "prompt": "x", "stop": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    expect_error(stories.raw("POST", "/v1/completions", deep, hdr), 400)
    expect_error(stories.raw("GET", "/v1/nothing"), 404)
    st, headers, _ = stories.raw("GET", "/v1/completions")
    assert st == 405 and headers["allow"] == "POST"
    # A body past the limit (16 MiB, --max-message-bytes) is refused from its
    # Content-Length, before any of it is read.
    host, port = stories.http.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        t0 = time.time()
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100000000\r\n\r\n{\"model\": ")
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
            data = sock.recv(65536)
            if not data:
                break
            reply += data
        assert time.time() - t0 < 2.0
    head, _, payload = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), head
    assert json.loads(payload)["error"]["code"] == "request_too_large"


@need_stories
def test_auth():
    with tempfile.NamedTemporaryFile("w", suffix=".token", delete=False) as f:
        f.write("s3cret\n")
    try:
        with server(STORIES, "--auth-token-file", f.name, token_file=f.name) as s:
            assert s.raw("GET", "/health")[0] == 200                       # probes need no secret
            for headers in [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic czNjcmV0"},
                            {"Authorization": "s3cret"}]:
                err = expect_error(s.raw("GET", "/v1/models", headers=headers), 401, code="invalid_api_key",
                                   type_="authentication_error")
                assert err["message"]
            with pytest.raises(openai.AuthenticationError) as e:
                s.client(api_key="wrong").completions.create(model=STORIES_ID, prompt="x", max_tokens=2)
            expect_error(e, 401)
            for scheme in ["Bearer", "bearer", "BEARER"]:
                st, _, _ = s.raw("POST", "/v1/completions", {"model": STORIES_ID, "prompt": "x", "max_tokens": 2},
                                 {"Authorization": scheme + " s3cret"})
                assert st == 200, scheme
            r = s.client(api_key="s3cret").completions.create(model=STORIES_ID, prompt="x", max_tokens=2)
            assert r.usage.completion_tokens == 2
            expect_error(s.raw("POST", "/tokenize", {"prompt": "x"}), 401)
            for path in ["/get_server_info", "/get_model_info", "/v1/loads"]:   # a router sends the token
                expect_error(s.raw("GET", path), 401)
                assert s.raw("GET", path, headers={"Authorization": "Bearer s3cret"})[0] == 200
            assert "UNAUTHENTICATED" in s.stats()["finished_by_status"]   # counted like gRPC's refusals
    finally:
        os.unlink(f.name)


@need_stories
def test_loading_is_503():
    # The model "file" is a FIFO nobody writes: the load waits, the HTTP port is open.
    d = tempfile.mkdtemp()
    fifo = os.path.join(d, "model.gguf")
    os.mkfifo(fifo)
    try:
        with server(fifo, wait_serving=False) as s:
            expect_error(s.raw("GET", "/health"), 503, code="service_unavailable", type_="server_error")
            with pytest.raises(openai.InternalServerError) as e:
                s.client().completions.create(model="model", prompt="x")
            expect_error(e, 503)
            expect_error(s.raw("GET", "/v1/models"), 503)
            for path in ["/get_server_info", "/get_model_info", "/v1/loads"]:
                expect_error(s.raw("GET", path), 503)
    finally:
        shutil.rmtree(d)


# ------------------------------------------------------------ concurrency

@need_stories
def test_64_concurrent_streams(stories):
    c = stories.client()
    prompts = ["Once upon a time", "The little dog", "Lily and Ben", "One day"]
    solo = {p: c.completions.create(model=STORIES_ID, prompt=p, max_tokens=48, temperature=0).choices[0].text
            for p in prompts}
    results, errors = [None] * 64, []

    def run(i):
        try:
            p = prompts[i % len(prompts)]
            chunks = list(c.completions.create(model=STORIES_ID, prompt=p, max_tokens=48, temperature=0, stream=True,
                                               stream_options={"include_usage": True}))
            results[i] = (p, "".join(ch.choices[0].text for ch in chunks if ch.choices),
                          [ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason],
                          chunks[-1].usage.completion_tokens)
        except Exception as e:   # noqa: BLE001 - reported below
            errors.append(repr(e))

    t0 = time.time()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[:3]
    assert time.time() - t0 < 90
    for p, text, finishes, tokens in results:
        assert text == solo[p] and finishes == ["length"] and tokens == 48
    assert stories.wait_idle(2000) is not None


# ------------------------------------------------------------------- chat

CONVERSATION = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "What is the capital of France?"}]


@need_chat
def test_chat_greedy_matches_cli_and_stream(smol):
    cli = cli_chat(CHAT, "What is the capital of France?", 24, system="You are a helpful assistant.")
    c = smol.client()
    r = c.chat.completions.create(model=CHAT_ID, messages=CONVERSATION, max_tokens=24, temperature=0)
    assert r.object == "chat.completion" and r.id.startswith("chatcmpl-") and r.model == CHAT_ID
    msg = r.choices[0].message
    assert msg.role == "assistant" and msg.content == cli
    rendered = json.loads(smol.raw("POST", "/tokenize", {"messages": CONVERSATION})[2])
    assert r.usage.prompt_tokens == rendered["count"]
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens

    chunks = list(c.chat.completions.create(model=CHAT_ID, messages=CONVERSATION, max_tokens=24, temperature=0,
                                            stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant" and chunks[0].choices[0].delta.content == ""
    assert all(ch.choices[0].delta.role is None for ch in chunks[1:-1])
    assert "".join(ch.choices[0].delta.content or "" for ch in chunks[:-1]) == cli
    finishes = [ch.choices[0].finish_reason for ch in chunks[:-1] if ch.choices[0].finish_reason]
    assert finishes == [r.choices[0].finish_reason]
    assert chunks[-1].choices == [] and chunks[-1].usage.model_dump() == r.usage.model_dump()
    assert all(ch.object == "chat.completion.chunk" for ch in chunks)


@need_chat
def test_chat_sse_format_byte_for_byte(smol):
    body = {"model": CHAT_ID, "messages": CONVERSATION, "max_tokens": 8, "temperature": 0, "stream": True}
    st, headers, raw = smol.raw("POST", "/v1/chat/completions", body)
    assert st == 200 and headers["content-type"] == "text/event-stream"
    text = raw.decode()
    events = sse_events(text)
    assert events[-1] == "[DONE]"
    objs = [json.loads(e) for e in events[:-1]]
    rid, created = objs[0]["id"], objs[0]["created"]

    def chunk(delta, finish):
        return {"id": rid, "object": "chat.completion.chunk", "created": created, "model": CHAT_ID,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    want = [chunk({"role": "assistant", "content": ""}, None)]
    want += [chunk({"content": o["choices"][0]["delta"]["content"]}, None) for o in objs[1:-1]]
    want.append(chunk({}, objs[-1]["choices"][0]["finish_reason"]))
    assert text == "".join("data: " + compact(w) + "\n\n" for w in want) + DONE
    assert all(o["choices"][0]["delta"]["content"] for o in objs[1:-1])   # no empty deltas


@need_chat
def test_chat_fields(smol):
    c = smol.client()
    # Text parts, names, a tool-call turn and its answer, stop, seed, n.
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "You are terse."}]},
        {"role": "user", "content": "What is the weather in Paris?", "name": "ann"},
        {"role": "assistant", "content": "",   # SmolLM2's template writes content as a string
         "tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"},
    ]
    r = c.chat.completions.create(model=CHAT_ID, messages=messages, max_tokens=16, temperature=0, user="u-1")
    assert r.choices[0].message.content
    tools = [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}]
    r2 = c.chat.completions.create(model=CHAT_ID, messages=messages, max_tokens=16, temperature=0, tools=tools,
                                   tool_choice="none")
    assert r2.choices[0].message.content is not None
    # Logprobs in chat's shape.
    r = c.chat.completions.create(model=CHAT_ID, messages=CONVERSATION, max_tokens=10, temperature=0, logprobs=True,
                                  top_logprobs=2)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens
    for t in content:
        assert len(t.top_logprobs) == 2 and t.top_logprobs[0].token == t.token
        assert bytes(t.bytes).decode(errors="replace") == t.token and t.logprob <= 0
    assert "".join(t.token for t in content).startswith(r.choices[0].message.content)
    r0 = c.chat.completions.create(model=CHAT_ID, messages=CONVERSATION, max_tokens=4, temperature=0, logprobs=True)
    assert all(t.top_logprobs == [] for t in r0.choices[0].logprobs.content)
    # n choices, greedy: identical; a stop string.
    full = c.chat.completions.create(model=CHAT_ID, messages=CONVERSATION, max_tokens=12, temperature=0)
    n3 = c.chat.completions.create(model=CHAT_ID, messages=CONVERSATION, max_tokens=12, temperature=0, n=3)
    assert [ch.message.content for ch in n3.choices] == [full.choices[0].message.content] * 3
    text = full.choices[0].message.content
    stop = text[5:9]
    s = c.chat.completions.create(model=CHAT_ID, messages=CONVERSATION, max_tokens=12, temperature=0, stop=stop)
    assert s.choices[0].message.content == text[:text.find(stop)] and s.choices[0].finish_reason == "stop"
    # Without max_tokens the answer may run to the context's end; it ends at <|im_end|> here.
    free = c.chat.completions.create(model=CHAT_ID, messages=CONVERSATION, temperature=0)
    assert free.choices[0].finish_reason == "stop"
    assert free.choices[0].message.content.startswith(text)
    # chat_template_kwargs, add_generation_prompt reach the template.
    k = c.chat.completions.create(model=CHAT_ID, messages=CONVERSATION, max_tokens=4, temperature=0,
                                  extra_body={"chat_template_kwargs": {"unused": 1}, "top_k": 1, "min_p": 0.0,
                                              "repetition_penalty": 1.0, "ignore_eos": False})
    assert k.choices[0].message.content == text[:len(k.choices[0].message.content)]
    # A user's <|im_end|> stays text: one more message is no new turn.
    t = json.loads(smol.raw("POST", "/tokenize", {"messages": [{"role": "user", "content": "a<|im_end|>b"}]})[2])
    t2 = json.loads(smol.raw("POST", "/tokenize", {"messages": [{"role": "user", "content": "ab"}]})[2])
    assert t["count"] > t2["count"]


@need_stories
def test_chat_with_template_file_and_reasoning():
    # stories260K has no template: give it one whose answer opens a <think>
    # section it never closes, so everything it writes is thinking.
    d = tempfile.mkdtemp()
    try:
        path = os.path.join(d, "think.jinja")
        with open(path, "w") as f:
            f.write("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
                    "{% if add_generation_prompt %}assistant: <think>\n{% endif %}")
        with server(STORIES, "--chat-template-file", path) as s:
            c = s.client()
            msgs = [{"role": "user", "content": "Once upon a time"}]
            r = c.chat.completions.create(model=STORIES_ID, messages=msgs, max_tokens=16, temperature=0,
                                          extra_body={"ignore_eos": True})
            msg = r.choices[0].message
            thinking = msg.model_extra["reasoning_content"]
            assert msg.content == "" and thinking
            assert r.usage.completion_tokens == 16
            assert r.usage.completion_tokens_details.reasoning_tokens == 16
            chunks = list(c.chat.completions.create(model=STORIES_ID, messages=msgs, max_tokens=16, temperature=0,
                                                    stream=True, extra_body={"ignore_eos": True}))
            deltas = [ch.choices[0].delta for ch in chunks[1:-1]]
            assert "".join(dl.model_extra["reasoning_content"] for dl in deltas) == thinking
            assert all(dl.content is None for dl in deltas)
    finally:
        shutil.rmtree(d)


# ------------------------------------------- disconnects, queue, lifecycle

def _stream_request(s, body):
    """Starts a streamed completion on a raw socket; returns (socket, first bytes of the body)."""
    host, port = s.http.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=60)
    payload = json.dumps(body).encode()
    sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(payload) + payload)
    got = b""
    while b"data: " not in got:
        data = sock.recv(65536)
        assert data, got
        got += data
    return sock, got


@need_chat
def test_disconnect_cancels_and_queue_is_shared():
    long = {"model": CHAT_ID, "prompt": "Once upon a time", "max_tokens": 3000, "temperature": 0, "ignore_eos": True,
            "stream": True}
    with server(CHAT, "--max-queue", "1") as s:
        c = s.client()
        # A stream holds the only slot: HTTP and gRPC share the admission slots.
        sock, _ = _stream_request(s, long)
        assert int(s.stats()["in_flight"]) == 1
        with pytest.raises(openai.RateLimitError) as e:
            c.completions.create(model=CHAT_ID, prompt="x", max_tokens=2)
        expect_error(e, 429, type_="rate_limit_error", code="rate_limit_exceeded")
        assert e.value.response.headers["retry-after"] == "1"
        # The client goes: the request leaves the engine within a second.
        sock.close()
        t0 = time.time()
        idle = s.wait_idle(1000)
        assert idle is not None, "still running a second after the client left"
        assert time.time() - t0 < 2.0
        # Not streamed: the client leaves while it generates.
        host, port = s.http.rsplit(":", 1)
        sock = socket.create_connection((host, int(port)), timeout=60)
        payload = json.dumps(dict(long, stream=False)).encode()
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(payload)
                     + payload)
        s.wait_running(1)
        sock.close()
        assert s.wait_idle(1000) is not None, "a non-streamed request outlived its client by a second"
        # And the server serves normally afterwards.
        r = c.completions.create(model=CHAT_ID, prompt="Hello", max_tokens=4, temperature=0)
        assert r.usage.completion_tokens == 4
        log = s.log_text()
        assert log.count("status=CANCELLED") >= 2, log
        generated = [int(m) for m in re.findall(r"rpc=http:/v1/completions prompt_tokens=\d+ tokens=(\d+).*status=CANCELLED", log)]
        assert generated and all(g < 3000 for g in generated)


@need_chat
def test_drain_then_error_event():
    # SIGTERM: /health and new work 503 at once, the running stream finishes within the grace.
    with server(CHAT, "--grace-seconds", "60") as s:
        sock, got = _stream_request(s, {"model": CHAT_ID, "prompt": "Once upon a time", "max_tokens": 300,
                                        "temperature": 0, "ignore_eos": True, "stream": True})
        s.proc.send_signal(signal.SIGTERM)
        deadline = time.time() + 10
        while s.raw("GET", "/health")[0] == 200:   # until the signal is taken
            assert time.time() < deadline
            time.sleep(0.01)
        expect_error(s.raw("GET", "/health"), 503, code="service_unavailable")
        expect_error(s.raw("POST", "/v1/completions", {"model": CHAT_ID, "prompt": "x"}), 503)
        sock.settimeout(60)
        while not got.endswith(b"0\r\n\r\n"):
            data = sock.recv(65536)
            if not data:
                break
            got += data
        sock.close()
        assert b"data: [DONE]" in got and b'"finish_reason":"length"' in got
        assert s.proc.wait(30) == 0
    # No grace: the stream is cut short with an error event, and no [DONE].
    with server(CHAT, "--grace-seconds", "0") as s:
        sock, got = _stream_request(s, {"model": CHAT_ID, "prompt": "Once upon a time", "max_tokens": 3000,
                                        "temperature": 0, "ignore_eos": True, "stream": True})
        s.proc.send_signal(signal.SIGTERM)
        sock.settimeout(60)
        while True:
            data = sock.recv(65536)
            if not data:
                break
            got += data
            if got.endswith(b"0\r\n\r\n"):
                break
        sock.close()
        assert b"[DONE]" not in got
        last = [line for line in got.decode(errors="replace").split("\n") if line.startswith("data: ")][-1]
        err = json.loads(last[len("data: "):])["error"]
        assert err["code"] == "service_unavailable" and err["type"] == "server_error"


@need_stories
def test_tls():
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl to make a certificate")
    d = tempfile.mkdtemp()
    try:
        cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
        subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"],
                       check=True, capture_output=True, timeout=60)
        with server(STORIES, "--tls-cert", cert, "--tls-key", key, ca=cert) as s:
            c = s.client(http_client=openai.DefaultHttpxClient(verify=s.ssl_context))
            assert s.raw("GET", "/health")[0] == 200
            r = c.completions.create(model=STORIES_ID, prompt="Once upon a time", max_tokens=8, temperature=0)
            chunks = list(c.completions.create(model=STORIES_ID, prompt="Once upon a time", max_tokens=8,
                                               temperature=0, stream=True))
            assert "".join(ch.choices[0].text for ch in chunks) == r.choices[0].text
            # Plaintext on the TLS port gets nothing served.
            host, port = s.http.rsplit(":", 1)
            with socket.create_connection((host, int(port)), timeout=10) as sock:
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                try:
                    assert b"200 OK" not in sock.recv(4096)
                except (ConnectionResetError, socket.timeout):
                    pass
    finally:
        shutil.rmtree(d)


@need_stories
def test_http_off_and_port_conflict():
    with server(STORIES) as s:
        # A second server on the same HTTP port fails to start, naming the flag.
        p = subprocess.run([PREPACKD, "--model", STORIES, "--listen", "127.0.0.1:0", "--http-listen", s.http],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode != 0 and "--http-listen" in p.stderr
    p = subprocess.Popen([PREPACKD, "--model", STORIES, "--listen", "127.0.0.1:0", "--http-listen", "off"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, preexec_fn=_die_with_parent)
    try:
        assert p.stdout.readline().startswith("prepackd listening on ")
        ready, _, _ = select.select([p.stdout], [], [], 1.0)
        assert not ready or p.stdout.readline() == ""   # no HTTP line
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(30)
        p.stdout.close()


# ----------------------------------------------------------------- /metrics

# What GET /metrics must serve, as prometheus_client's parser names the
# families (a counter's without its _total) and types them.
METRIC_TYPES = {
    # vLLM's, under prepack_.
    "prepack_num_requests_running": "gauge",
    "prepack_num_requests_waiting": "gauge",
    "prepack_kv_cache_usage_perc": "gauge",
    "prepack_prompt_tokens": "counter",
    "prepack_generation_tokens": "counter",
    "prepack_num_preemptions": "counter",
    "prepack_prefix_cache_queries": "counter",
    "prepack_prefix_cache_hits": "counter",
    "prepack_request_success": "counter",
    "prepack_time_to_first_token_seconds": "histogram",
    "prepack_time_per_output_token_seconds": "histogram",
    "prepack_e2e_request_latency_seconds": "histogram",
    "prepack_request_queue_time_seconds": "histogram",
    "prepack_request_inference_time_seconds": "histogram",
    "prepack_request_prefill_time_seconds": "histogram",
    "prepack_request_decode_time_seconds": "histogram",
    "prepack_request_prompt_tokens": "histogram",
    "prepack_request_generation_tokens": "histogram",
    # prepack's own.
    "prepack_prefix_cache_hit_rate": "gauge",
    "prepack_prefix_cache_query_requests": "counter",
    "prepack_prefix_cache_hit_requests": "counter",
    "prepack_prompt_tokens_computed": "counter",
    "prepack_steps": "counter",
    "prepack_prefill_steps": "counter",
    "prepack_prefill_step_tokens": "counter",
    "prepack_prefill_step_capacity_tokens": "counter",
    "prepack_prefill_packing_efficiency": "gauge",
    "prepack_prompt_token_layers": "counter",
    "prepack_lazyllm_pruned_token_layers": "counter",
}
LATENCY_HISTOGRAMS = ["prepack_e2e_request_latency_seconds", "prepack_request_queue_time_seconds",
                      "prepack_request_inference_time_seconds", "prepack_request_prompt_tokens",
                      "prepack_request_generation_tokens"]


class Scrape:
    """One GET /metrics, parsed by prometheus_client's parser."""

    def __init__(self, s, model_name=STORIES_ID):
        parser = pytest.importorskip("prometheus_client.parser")
        st, headers, body = s.raw("GET", "/metrics")
        assert st == 200, body
        assert headers["content-type"].startswith("text/plain; version=0.0.4"), headers
        self.families = {f.name: f for f in parser.text_string_to_metric_families(body.decode())}
        for f in self.families.values():
            for sample in f.samples:
                assert sample.labels.get("model_name") == model_name, sample

    def get(self, sample, **labels):
        """The value of the one sample of this name with these labels (besides model_name)."""
        found = [x.value for f in self.families.values() for x in f.samples
                 if x.name == sample and {k: v for k, v in x.labels.items() if k != "model_name"} == labels]
        assert len(found) == 1, (sample, labels, found)
        return found[0]

    def count(self, histogram):
        return self.get(histogram + "_count")


def _delta(before, after, sample, **labels):
    return after.get(sample, **labels) - before.get(sample, **labels)


@need_stories
def test_metrics_count_a_known_workload():
    # A step budget of 64 tokens chunks the long prompt, so packing has
    # steps to count; under batchllm the n choices of one prompt share it.
    budget = 64
    with server(STORIES, "--policy", "batchllm", "--max-batch-tokens", str(budget)) as s:
        c = s.client()
        first = Scrape(s)
        for name, typ in METRIC_TYPES.items():
            assert name in first.families, name
            assert first.families[name].type == typ, (name, first.families[name].type)
        for reason in ["stop", "length", "abort", "error"]:   # every reason exists from the start
            assert first.get("prepack_request_success_total", finished_reason=reason) == 0

        # The workload: 3 requests ending by length, 1 by a stop string, and
        # a prompt of 2 choices (2 engine requests sharing its prefix).
        ended = []   # (choices, usage) per HTTP request
        for i, max_tokens in enumerate([5, 7, 9]):
            r = c.completions.create(model=STORIES_ID, prompt=f"Once upon a time, {i} cats", max_tokens=max_tokens,
                                     temperature=0, extra_body={"ignore_eos": True})
            assert r.choices[0].finish_reason == "length" and r.usage.completion_tokens == max_tokens
            ended.append((1, r.usage))
        text = r.choices[0].text
        stop = text[len(text) // 2:len(text) // 2 + 3]
        r = c.completions.create(model=STORIES_ID, prompt="Once upon a time, 2 cats", max_tokens=9, temperature=0,
                                 stop=stop, extra_body={"ignore_eos": True})
        assert r.choices[0].finish_reason == "stop", (text, stop, r.choices[0].text)
        ended.append((1, r.usage))
        shared = " ".join(["Once upon a time there was a little girl named Lily who loved to play outside."] * 6)
        r = c.completions.create(model=STORIES_ID, prompt=shared, max_tokens=4, temperature=0, n=2,
                                 extra_body={"ignore_eos": True})
        assert [ch.finish_reason for ch in r.choices] == ["length", "length"]
        ended.append((2, r.usage))
        assert s.wait_idle(10000) is not None
        second = Scrape(s)

        requests = sum(n for n, _ in ended)
        prompt_tokens = sum(n * u.prompt_tokens for n, u in ended)
        completions = [u.completion_tokens // n for n, u in ended for _ in range(n)]   # per engine request
        d = lambda sample, **labels: _delta(first, second, sample, **labels)   # noqa: E731
        assert d("prepack_generation_tokens_total") == sum(completions)
        assert sum(completions) == 5 + 7 + 9 + ended[3][1].completion_tokens + 2 * 4
        assert d("prepack_prompt_tokens_total") == prompt_tokens
        assert d("prepack_request_success_total", finished_reason="length") == 5
        assert d("prepack_request_success_total", finished_reason="stop") == 1
        assert d("prepack_request_success_total", finished_reason="abort") == 0
        assert d("prepack_request_success_total", finished_reason="error") == 0
        for h in LATENCY_HISTOGRAMS + ["prepack_time_to_first_token_seconds", "prepack_request_prefill_time_seconds",
                                       "prepack_request_decode_time_seconds"]:
            assert d(h + "_count") == requests, h
            assert second.get(h + "_bucket", le="+Inf") == second.count(h), h
        assert d("prepack_time_per_output_token_seconds_count") == sum(1 for t in completions if t >= 2)
        assert d("prepack_request_prompt_tokens_sum") == prompt_tokens
        assert d("prepack_request_generation_tokens_sum") == sum(completions)
        assert 0 < d("prepack_time_to_first_token_seconds_sum") <= d("prepack_e2e_request_latency_seconds_sum")
        # Prefix sharing: every engine request was looked up; the 2 choices
        # read the shared prompt. Usage's cached_tokens is what every choice
        # of a prompt read, and under batchllm each read the same group
        # prefix, so the engine counted it once per choice.
        cached = sum(n * u.prompt_tokens_details.cached_tokens for n, u in ended)
        assert ended[4][1].prompt_tokens_details.cached_tokens > ended[4][1].prompt_tokens - 20
        assert d("prepack_prefix_cache_hits_total") == cached
        assert d("prepack_prefix_cache_queries_total") == prompt_tokens
        assert d("prepack_prefix_cache_query_requests_total") == requests
        assert d("prepack_prefix_cache_hit_requests_total") == 2
        assert second.get("prepack_prefix_cache_hit_rate") == pytest.approx(
            second.get("prepack_prefix_cache_hits_total") / second.get("prepack_prefix_cache_queries_total"))
        # Packing: every prompt token computed went through a prefill step,
        # each of which had the step budget.
        steps = d("prepack_prefill_steps_total")
        assert steps >= 1 and d("prepack_steps_total") >= steps
        assert d("prepack_prefill_step_capacity_tokens_total") == steps * budget
        assert d("prepack_prompt_tokens_computed_total") <= d("prepack_prefill_step_tokens_total") <= steps * budget
        assert d("prepack_prompt_tokens_computed_total") < prompt_tokens   # the shared prompt once
        assert second.get("prepack_prefill_packing_efficiency") == pytest.approx(
            second.get("prepack_prefill_step_tokens_total") / second.get("prepack_prefill_step_capacity_tokens_total"))
        # No LazyLLM yet: every prompt token through every layer.
        layers = d("prepack_prompt_token_layers_total")
        assert layers > 0 and layers % d("prepack_prompt_tokens_computed_total") == 0
        assert d("prepack_lazyllm_pruned_token_layers_total") == 0
        # Idle: nothing running, waiting or holding KV.
        assert second.get("prepack_num_requests_running") == 0 and second.get("prepack_num_requests_waiting") == 0
        assert second.get("prepack_kv_cache_usage_perc") == 0

        # LazyLLM prunes part of a prompt's token-layers.
        c.completions.create(model=STORIES_ID, prompt=shared + " The end.", max_tokens=2, temperature=0,
                             extra_body={"lazy_keep_ratio": 0.5})
        assert s.wait_idle(10000) is not None
        third = Scrape(s)
        pruned = _delta(second, third, "prepack_lazyllm_pruned_token_layers_total")
        assert 0 < pruned < _delta(second, third, "prepack_prompt_token_layers_total")

        # GetStats reports the same counters.
        g = s.stats()
        for sample, field in [("prepack_prompt_tokens_total", "prompt_tokens"),
                              ("prepack_generation_tokens_total", "generated_tokens"),
                              ("prepack_num_preemptions_total", "preemptions"),
                              ("prepack_num_requests_running", "requests_running"),
                              ("prepack_num_requests_waiting", "requests_waiting"),
                              ("prepack_prompt_tokens_computed_total", "prompt_tokens_computed"),
                              ("prepack_prefix_cache_queries_total", "prefix_query_tokens"),
                              ("prepack_prefix_cache_hits_total", "prefix_hit_tokens"),
                              ("prepack_prefix_cache_query_requests_total", "prefix_query_requests"),
                              ("prepack_prefix_cache_hit_requests_total", "prefix_hit_requests"),
                              ("prepack_steps_total", "steps"),
                              ("prepack_prefill_steps_total", "prefill_steps"),
                              ("prepack_prefill_step_tokens_total", "prefill_step_tokens"),
                              ("prepack_prefill_step_capacity_tokens_total", "prefill_step_capacity"),
                              ("prepack_prompt_token_layers_total", "prompt_token_layers")]:
            assert third.get(sample) == int(g[field]), (sample, field, g)
        assert third.get("prepack_lazyllm_pruned_token_layers_total") == \
            int(g["prompt_token_layers"]) - int(g["prompt_token_layers_computed"])
        assert third.get("prepack_kv_cache_usage_perc") == int(g["kv_bytes_used"]) / int(g["kv_bytes_total"])
        for reason, n in g["finished_by_reason"].items():
            assert third.get("prepack_request_success_total", finished_reason=reason) == int(n)
        assert sum(int(n) for n in g["finished_by_reason"].values()) == requests + 1


@need_stories
def test_metrics_auth_and_model_name():
    with tempfile.NamedTemporaryFile("w", suffix=".token", delete=False) as f:
        f.write("s3cret\n")
    try:
        with server(STORIES, "--auth-token-file", f.name, "--model-name", "tiny-stories", token_file=f.name) as s:
            # The token guards /metrics as it does the API; POST is 405.
            expect_error(s.raw("GET", "/metrics"), 401, code="invalid_api_key")
            auth = {"Authorization": "Bearer s3cret"}
            assert s.raw("POST", "/metrics", headers=auth)[0] == 405

            class Authed:   # Scrape over the token
                def raw(self, method, path):
                    return s.raw(method, path, headers=auth)

            before = Scrape(Authed(), model_name="tiny-stories")   # every series labelled with --model-name
            c = s.client(api_key="s3cret")
            with pytest.raises(openai.BadRequestError):   # refused before the engine: no finished request
                c.completions.create(model="tiny-stories", prompt="Once", max_tokens=600)
            r = c.completions.create(model="tiny-stories", prompt="Once", max_tokens=3, temperature=0,
                                     extra_body={"ignore_eos": True})
            assert r.usage.completion_tokens == 3
            assert s.wait_idle(10000) is not None
            after = Scrape(Authed(), model_name="tiny-stories")
            assert _delta(before, after, "prepack_request_success_total", finished_reason="length") == 1
            assert _delta(before, after, "prepack_request_success_total", finished_reason="error") == 0
            assert _delta(before, after, "prepack_e2e_request_latency_seconds_count") == 1
    finally:
        os.unlink(f.name)
