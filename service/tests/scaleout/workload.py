"""A shared-prefix workload sent over gRPC or HTTP, and the replicas' own
counters.

The gRPC client is a plain Python gRPC client (stubs generated from proto/ by
grpcio-tools at run time) that sets x-prepack-prefix-key by the documented
rule (prefix_key.py), as any client of the rule would; it reads which
replica answered from Envoy's x-prepack-upstream response header. The HTTP
client sends the same prompts as OpenAI completions (http.client, no key:
a router such as smg reads the prompt itself) and reads which replica
answered from smg's x-smg-routed-worker-id response header.
"""
import atexit
import collections
import concurrent.futures
import http.client
import importlib
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time

import grpc

import prefix_key

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
_stubs = None


def stubs():
    """(prepack_pb2, prepack_pb2_grpc), generated once per process."""
    global _stubs
    if _stubs is None:
        from grpc_tools import protoc
        out = tempfile.mkdtemp(prefix="prepack-stubs-")
        atexit.register(shutil.rmtree, out, True)
        proto = os.path.join(ROOT, "proto")
        rc = protoc.main(["protoc", "-I" + proto, "-I" + os.path.join(os.path.dirname(protoc.__file__), "_proto"),
                          "--python_out=" + out, "--grpc_python_out=" + out,
                          os.path.join(proto, "prepack", "v1", "prepack.proto")])
        if rc != 0:
            raise RuntimeError("protoc failed on proto/prepack/v1/prepack.proto")
        sys.path.insert(0, out)
        _stubs = (importlib.import_module("prepack.v1.prepack_pb2"),
                  importlib.import_module("prepack.v1.prepack_pb2_grpc"))
    return _stubs


# Words a TinyStories model (stories260K) knows, so prompts tokenize to
# ordinary pieces (about 3 bytes a token).
_WORDS = ("the a little girl boy dog cat ball tree park sun big red happy sad friend mom dad play run "
          "jump saw said was and then one day she he they went home to with in on of toy bird "
          "fish water box car blue green small good new old named lily tom ben sue").split()


def make_requests(prefixes=16, per_prefix=12, prefix_bytes=600, seed=1):
    """prefixes x per_prefix prompts, shuffled: each a shared prefix of about
    prefix_bytes (well past the key's 256 bytes, so a prefix's requests share
    one key) and a short suffix of its own."""
    rng = random.Random(seed)
    heads = []
    for p in range(prefixes):
        words = ["Story %d." % p]
        while len(" ".join(words)) < prefix_bytes:
            words.append(rng.choice(_WORDS))
        heads.append(" ".join(words))
    reqs = [(p, "%s Question %d: %s" % (heads[p], j, " ".join(rng.choice(_WORDS) for _ in range(6))))
            for p in range(prefixes) for j in range(per_prefix)]
    rng.shuffle(reqs)
    return reqs


# errors: "CODE: details" of each failed try (retried or last).
Result = collections.namedtuple("Result", "prefix key ok code upstream client_tries errors")

# What a client sees when the replica serving its stream dies: Envoy
# resets the stream (INTERNAL, "RST_STREAM") or answers UNAVAILABLE. Both
# are retried: a generation is safe to run again.
_RETRY = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL)


def generate(stub, text, max_tokens=4, tries=5):
    """One greedy Generate with the prefix key set; (ok, code, upstream,
    tries used, errors of the failed tries)."""
    pb2, _ = stubs()
    req = pb2.GenerateRequest(text=text, sampling=pb2.SamplingParams(max_tokens=max_tokens, temperature=0))
    md = [(prefix_key.HEADER, prefix_key.text_key(text))]
    code, errors = None, []
    for attempt in range(1, tries + 1):
        call = stub.Generate(req, metadata=md, timeout=60)
        try:
            finished = False
            for resp in call:
                finished = finished or resp.finish_reason != 0
            upstream = dict(call.initial_metadata()).get("x-prepack-upstream")
            return finished, grpc.StatusCode.OK, upstream, attempt, errors
        except grpc.RpcError as e:
            code = e.code()
            errors.append("%s: %s" % (code.name, e.details()))
            if code not in _RETRY:
                break
            time.sleep(0.1 * attempt)
    return False, code, None, attempt, errors


def run(addr, requests, concurrency=8, after=None):
    """Sends (prefix, text) requests through addr with `concurrency` in
    flight; after=(n, fn) calls fn() once n requests have finished (the
    replica-stop tests). Returns one Result per request."""
    _, pb2_grpc = stubs()
    with grpc.insecure_channel(addr) as ch:
        stub = pb2_grpc.PrepackStub(ch)
        return _send_all(lambda text: generate(stub, text), requests, concurrency, after)


def _send_all(send, requests, concurrency, after):
    """The request loop of run and run_http: send(text) -> (ok, code,
    upstream, tries, errors) for each (prefix, text), `concurrency` in
    flight, after=(n, fn) fired once n have finished."""
    done = [0]
    lock = threading.Lock()

    def one(item):
        p, text = item
        ok, code, upstream, tries, errors = send(text)
        with lock:
            done[0] += 1
            fire = after is not None and done[0] == after[0]
        if fire:
            after[1]()
        return Result(p, prefix_key.text_key(text), ok, code, upstream, tries, errors)

    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        return list(pool.map(one, requests))


def stats(addr):
    """GetStats of one replica, straight (not through Envoy)."""
    pb2, pb2_grpc = stubs()
    with grpc.insecure_channel(addr) as ch:
        return pb2_grpc.PrepackStub(ch).GetStats(pb2.GetStatsRequest(), timeout=10)


def prompt_totals(addrs):
    """(prompt tokens, prompt tokens computed) summed over replicas."""
    total = computed = 0
    for a in addrs:
        s = stats(a)
        total += s.prompt_tokens
        computed += s.prompt_tokens_computed
    return total, computed


def wait_serving(addr, timeout=30):
    """Until the replica's grpc.health.v1 Check says SERVING (raw bytes: the
    empty request; the answer is field 1 = 1)."""
    with grpc.insecure_channel(addr) as ch:
        check = ch.unary_unary("/grpc.health.v1.Health/Check")
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                if check(b"", timeout=2) == b"\x08\x01":
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.05)
    raise TimeoutError("%s not SERVING within %d s" % (addr, timeout))


def probe(addr, n=200):
    """Where n distinct keys land, one request at a time (so bounded load
    never spills one): {key: upstream}."""
    _, pb2_grpc = stubs()
    where = {}
    with grpc.insecure_channel(addr) as ch:
        stub = pb2_grpc.PrepackStub(ch)
        for i in range(n):
            text = "probe %d" % i
            ok, code, upstream, _, errors = generate(stub, text, max_tokens=1)
            if not ok:
                raise RuntimeError("probe %d failed: %s" % (i, errors))
            where[prefix_key.text_key(text)] = upstream
    return where


# ------------------------------------------------------------ over HTTP

# What the HTTP client retries: the router (or replica) answered that it
# cannot serve the request now (every retry of the router's spent, a
# replica draining or gone) or the connection broke. A completion is safe
# to run again.
_HTTP_RETRY = (429, 500, 502, 503, 504)


def model_id(http_addr):
    """The id a replica serves its model under (GET /v1/models)."""
    c = http.client.HTTPConnection(*http_addr.rsplit(":", 1), timeout=10)
    try:
        c.request("GET", "/v1/models")
        return json.loads(c.getresponse().read())["data"][0]["id"]
    finally:
        c.close()


def complete_http(conns, addr, model, text, max_tokens=4, tries=5):
    """One greedy POST /v1/completions on this thread's keep-alive
    connection to addr (conns: a threading.local); (ok, HTTP status or
    None, upstream, tries used, errors of the failed tries)."""
    body = json.dumps({"model": model, "prompt": text, "max_tokens": max_tokens, "temperature": 0})
    status, errors = None, []
    for attempt in range(1, tries + 1):
        c = getattr(conns, "c", None)
        if c is None:
            c = conns.c = http.client.HTTPConnection(*addr.rsplit(":", 1), timeout=60)
        try:
            c.request("POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"})
            r = c.getresponse()
            status, payload = r.status, r.read()
            if status == 200:
                choice = json.loads(payload)["choices"][0]
                return choice["finish_reason"] is not None, status, r.getheader("x-smg-routed-worker-id"), \
                    attempt, errors
            errors.append("HTTP %d: %s" % (status, payload[:300].decode(errors="replace")))
            if status not in _HTTP_RETRY:
                break
        except (OSError, http.client.HTTPException) as e:
            status = None
            errors.append("%s: %s" % (type(e).__name__, e))
            c.close()
            conns.c = None
        time.sleep(0.1 * attempt)
    return False, status, None, attempt, errors


def run_http(addr, model, requests, concurrency=8, after=None):
    """workload.run over HTTP: (prefix, text) requests as completions
    through addr ("host:port" of a router or a replica), `concurrency` in
    flight; after=(n, fn) calls fn() once n requests have finished. Returns
    one Result per request (code: the last HTTP status, None for a broken
    connection; upstream: the worker URL smg names, None straight to a
    replica)."""
    conns = threading.local()
    return _send_all(lambda text: complete_http(conns, addr, model, text), requests, concurrency, after)
