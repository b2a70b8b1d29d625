#!/usr/bin/env python3
"""Online serving benchmark: chat requests over the OpenAI HTTP API (or
prepackd's gRPC Chat), N concurrent client streams, one server at a time.

Each run starts its server on 127.0.0.1, waits until it answers, sends the
same workload from `--streams` client threads (each sends its share of the
requests one after another, streamed), then stops the server. Reported per
run: time to first token (p50 / p95, ms; the first chunk carrying text),
output tokens/s over the run's wall time, requests/s, and the server's own
prompt-token counters where it has them (prepackd: computed vs submitted).

Servers (--server, repeatable, run in the order given):
  prepack-http   prepackd --http-listen, /v1/chat/completions  (--policy from --prepack-policy,
                 or prepack-http:POLICY, e.g. prepack-http:fcfs beside prepack-http:lru)
  prepack-grpc   prepackd's gRPC Chat (stubs generated from proto/ with grpcio-tools; :POLICY too)
  llamacpp-http  llama-cpp-python's OpenAI server (python -m llama_cpp.server)

Workloads (--workload): every request a different system prompt and
question from a fixed word list (seeded), so no two prompts share a whole
16-token block past the template's first few tokens ("no-sharing"), or one
long system prompt for all with a different question each ("shared-system").

Needs: openai (always), grpcio + grpcio-tools (prepack-grpc), llama-cpp-python
[server] (llamacpp-http), all from PyPI in the Python that runs this script,
e.g. build/bench-venv. Prints a table and one JSON line per run (--json FILE
appends them).

  build/bench-venv/bin/python scripts/bench_http.py --model build/models/SmolLM2-135M-Instruct.Q4_1.gguf \
      --server prepack-http --server llamacpp-http --streams 1 --streams 16
"""
import argparse
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ("the a river town old new light small quiet garden morning evening story market winter summer road "
         "house window letter friend teacher doctor farmer child island mountain forest bridge station train "
         "music paint bread apple water stone paper clock lamp table chair door field cloud rain snow wind sun "
         "moon star ship harbor castle village city library school museum kitchen").split()


def words(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def workload(kind, n, seed, system_words, question_words):
    rng = random.Random(seed)
    shared = "You answer questions about this text. " + words(rng, system_words)
    out = []
    for i in range(n):
        system = shared if kind == "shared-system" else f"Request {i}. " + words(rng, system_words)
        out.append([{"role": "system", "content": system},
                    {"role": "user", "content": f"Question {i}: " + words(rng, question_words) + "?"}])
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url, proc, timeout=300):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before serving")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except Exception:
            time.sleep(0.3)
    raise RuntimeError(f"server did not answer {url} in {timeout} s")


class Prepackd:
    """prepackd on free ports; .http and .grpc addresses."""

    def __init__(self, args, policy):
        self.bin = args.prepackd
        cmd = [self.bin, "--model", args.model, "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0",
               "--threads", str(args.threads), "--policy", policy, "--model-name", "bench"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        grpc_line = self.proc.stdout.readline()
        http_line = self.proc.stdout.readline()
        self.grpc = re.search(r"listening on (\S+)", grpc_line).group(1)
        self.http = "http://" + re.search(r"listening on (\S+)", http_line).group(1)
        wait_http(self.http + "/health", self.proc)
        self.model = "bench"

    def stats(self):
        stats_bin = os.path.join(os.path.dirname(self.bin), "prepackd_stats")
        if not os.path.exists(stats_bin):
            return {}
        out = subprocess.run([stats_bin, self.grpc], capture_output=True, text=True, timeout=30)
        return json.loads(out.stdout) if out.returncode == 0 else {}

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


class LlamaCppServer:
    def __init__(self, args):
        port = free_port()
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", args.model, "--host", "127.0.0.1",
               "--port", str(port), "--n_threads", str(args.threads), "--n_ctx", str(args.n_ctx),
               "--model_alias", "bench",
               # Its default cuts the running request short when another
               # arrives; queued, every request gets its whole answer.
               "--interrupt_requests", "False"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.http = f"http://127.0.0.1:{port}"
        wait_http(self.http + "/v1/models", self.proc)
        self.model = "bench"

    def stats(self):
        return {}

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


def http_request(client, model, messages, max_tokens):
    """One streamed chat request: (ttft seconds, completion tokens, total seconds)."""
    t0 = time.perf_counter()
    ttft = None
    stream = client.chat.completions.create(model=model, messages=messages, max_tokens=max_tokens, temperature=0,
                                            stream=True, stream_options={"include_usage": True})
    tokens = chunks = 0
    for ch in stream:
        if ch.choices and ch.choices[0].delta.content:
            chunks += 1
            if ttft is None:
                ttft = time.perf_counter() - t0
        if ch.usage is not None:
            tokens = ch.usage.completion_tokens
    total = time.perf_counter() - t0
    return ttft if ttft is not None else total, tokens or chunks, total


def grpc_stubs():
    """prepack.v1 stubs generated from proto/ into a temp dir (grpcio-tools)."""
    from grpc_tools import protoc
    import grpc_tools
    out = tempfile.mkdtemp(prefix="prepack-stubs-")
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    rc = protoc.main(["protoc", f"-I{ROOT}/proto", f"-I{include}", f"--python_out={out}", f"--grpc_python_out={out}",
                      f"{ROOT}/proto/prepack/v1/prepack.proto"])
    if rc != 0:
        raise RuntimeError("protoc failed on proto/prepack/v1/prepack.proto")
    sys.path.insert(0, out)
    from prepack.v1 import prepack_pb2, prepack_pb2_grpc
    return prepack_pb2, prepack_pb2_grpc


def grpc_request(stub, pb, messages, max_tokens):
    t0 = time.perf_counter()
    ttft = None
    req = pb.ChatRequest(conversation=pb.Conversation(messages=[pb.ChatMessage(role=m["role"], content=m["content"])
                                                                for m in messages]),
                         sampling=pb.SamplingParams(max_tokens=max_tokens, temperature=0))
    tokens = 0
    for resp in stub.Chat(req):
        if resp.text and ttft is None:
            ttft = time.perf_counter() - t0
        if resp.HasField("usage"):
            tokens = resp.usage.generated_tokens
    total = time.perf_counter() - t0
    return ttft if ttft is not None else total, tokens, total


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def run(server_spec, args, streams, prompts, warmup):
    server_kind, _, policy = server_spec.partition(":")
    policy = policy or args.prepack_policy
    server = LlamaCppServer(args) if server_kind == "llamacpp-http" else Prepackd(args, policy)
    try:
        if server_kind == "prepack-grpc":
            import grpc
            pb, pb_grpc = grpc_stubs()
            channel = grpc.insecure_channel(server.grpc)
            stub = pb_grpc.PrepackStub(channel)
            send = lambda msgs: grpc_request(stub, pb, msgs, args.max_tokens)
        else:
            import openai
            client = openai.OpenAI(base_url=server.http + "/v1", api_key="none", timeout=600, max_retries=0)
            send = lambda msgs: http_request(client, server.model, msgs, args.max_tokens)
        send(warmup)   # (not counted; a prompt of its own, so nothing it caches is reused)
        before = server.stats()
        results = [None] * len(prompts)
        next_index = iter(range(len(prompts)))
        lock = threading.Lock()

        def worker():
            while True:
                with lock:
                    i = next(next_index, None)
                if i is None:
                    return
                results[i] = send(prompts[i])

        t0 = time.perf_counter()
        threads = [threading.Thread(target=worker) for _ in range(streams)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        after = server.stats()
    finally:
        server.stop()
    ttfts = [r[0] * 1000 for r in results]
    out_tokens = sum(r[1] for r in results)
    # Time per output token after the first, per request (vLLM's TPOT).
    tpots = [(r[2] - r[0]) * 1000 / (r[1] - 1) for r in results if r[1] > 1]
    row = {"server": server_kind, "policy": policy if server_kind != "llamacpp-http" else None,
           "workload": args.workload, "streams": streams, "requests": len(prompts), "max_tokens": args.max_tokens,
           "ttft_p50_ms": round(statistics.median(ttfts), 1), "ttft_p95_ms": round(pct(ttfts, 95), 1),
           "tpot_p50_ms": round(statistics.median(tpots), 1) if tpots else None,
           "output_tokens": out_tokens, "wall_s": round(wall, 2), "output_tok_s": round(out_tokens / wall, 1),
           "requests_s": round(len(prompts) / wall, 2), "threads": args.threads,
           "load_at_start": os.getloadavg()[0]}
    if before and after:
        row["prompt_tokens"] = int(after.get("prompt_tokens", 0)) - int(before.get("prompt_tokens", 0))
        row["prompt_tokens_computed"] = (int(after.get("prompt_tokens_computed", 0)) -
                                         int(before.get("prompt_tokens_computed", 0)))
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="GGUF file both servers load")
    ap.add_argument("--server", action="append",
                    help="prepack-http[:POLICY], prepack-grpc[:POLICY] or llamacpp-http (repeatable)")
    ap.add_argument("--streams", action="append", type=int, help="concurrent client streams (repeatable)")
    ap.add_argument("--requests", type=int, default=32, help="requests per run")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--workload", choices=["no-sharing", "shared-system"], default="no-sharing")
    ap.add_argument("--system-words", type=int, default=150)
    ap.add_argument("--question-words", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--n-ctx", type=int, default=2048, help="llama.cpp's context")
    ap.add_argument("--prepack-policy", default="lru")
    ap.add_argument("--prepackd", default=os.path.join(ROOT, "build/bin/prepackd"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="append JSON lines here")
    args = ap.parse_args()
    servers = args.server or ["prepack-http"]
    for spec in servers:
        kind, _, policy = spec.partition(":")
        if kind not in ("prepack-http", "prepack-grpc", "llamacpp-http") or (policy and kind == "llamacpp-http"):
            ap.error(f"--server {spec}: expected prepack-http[:POLICY], prepack-grpc[:POLICY] or llamacpp-http")
    prompts = workload(args.workload, args.requests + 1, args.seed, args.system_words, args.question_words)
    warmup = prompts.pop()
    rows = []
    for streams in args.streams or [1, 16]:
        for kind in servers:
            print(f"bench_http: {kind}, {streams} stream(s), {args.requests} requests ...", file=sys.stderr, flush=True)
            row = run(kind, args, streams, prompts, warmup)
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(row) + "\n")
    print("\n| server | policy | streams | TTFT p50 ms | TTFT p95 ms | TPOT p50 ms | output tokens | output tok/s | req/s "
          "| prompt computed/submitted |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        share = (f"{r['prompt_tokens_computed']:,}/{r['prompt_tokens']:,}" if "prompt_tokens" in r else "-")
        print(f"| {r['server']} | {r['policy'] or '-'} | {r['streams']} | {r['ttft_p50_ms']} | {r['ttft_p95_ms']} | "
              f"{r['tpot_p50_ms']} | {r['output_tokens']:,} | {r['output_tok_s']} | {r['requests_s']} | {share} |")


if __name__ == "__main__":
    main()
