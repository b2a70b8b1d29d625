#!/usr/bin/env python3
"""Structured output side by side: prepack's grammar engine against XGrammar
and llguidance on the same vocabularies, grammars and token sequences.

What it does (issue 47's measurements):
  1. `prepack bench grammar` on SmolLM2-135M-Instruct: greedy constrained
     generation per grammar of tests/data/grammar/bench, our compile and
     per-token mask times, and (with --batch-sizes) constrained against
     unconstrained decode throughput. It dumps the vocabulary's token bytes,
     each grammar's GBNF, the generated ids and our masks (--dump-dir).
  2. The same on a 151k Qwen2 vocabulary (a vocabulary-only GGUF: no
     weights), replaying SmolLM2's generated texts tokenized by Qwen2.
  3. XGrammar and llguidance (PyPI) load the dumped token bytes, compile each
     grammar (a JSON Schema through each engine's own schema compiler, for
     compile and mask times; and our GBNF text through XGrammar's EBNF and
     llguidance's GBNF support, for masks compared bit by bit with ours),
     and replay the same ids timing every mask.
  4. Rounds alternate (prepack, peers, prepack, peers, ...) so that a busy
     machine slows every engine alike; each figure is the median over rounds.

Peers run through their Python bindings: each mask call carries about a
microsecond of Python call overhead that prepack's C++ timing does not.
Percentiles are nearest-rank, as in prepack's report.

This script installs the peers (into a venv it makes: build/.venv-bench-grammar
unless --venv says otherwise); CI never runs it.

  python3 scripts/bench_grammar.py --prepack build/bin/prepack --out build/bench-grammar
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PEERS = ["xgrammar", "llguidance", "numpy"]


# ---- environment -----------------------------------------------------------

def ensure_peers(venv: Path) -> None:
    """Re-executes this script inside a venv that has the peers, making it
    (pip install from PyPI) when needed."""
    try:
        import xgrammar  # noqa: F401
        import llguidance  # noqa: F401
        import numpy  # noqa: F401
        return
    except ImportError:
        pass
    if os.environ.get("BENCH_GRAMMAR_IN_VENV"):
        sys.exit("bench_grammar: the venv lacks xgrammar/llguidance even after installing them")
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"bench_grammar: making {venv} with {' '.join(PEERS)} (PyPI)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PEERS], check=True)
    env = dict(os.environ, BENCH_GRAMMAR_IN_VENV="1")
    os.execve(str(python), [str(python), __file__, *sys.argv[1:]], env)


# ---- statistics ------------------------------------------------------------

def percentile(values, p):
    """Nearest rank: the smallest sample with at least p% at or below it."""
    if not values:
        return 0.0
    v = sorted(values)
    i = max(1, math.ceil(p / 100.0 * len(v))) - 1
    return v[min(i, len(v) - 1)]


def distribution(values):
    return {"n": len(values), "p50": percentile(values, 50), "p99": percentile(values, 99),
            "max": max(values) if values else 0.0,
            "mean": sum(values) / len(values) if values else 0.0}


def median_of(dists, key):
    vals = [d[key] for d in dists if d and d.get("n", 0) > 0]
    return statistics.median(vals) if vals else None


# ---- prepack ---------------------------------------------------------------

def run_prepack(prepack, model, schemas, out_dir, args, texts=None, batch_sizes=None, dump=True):
    cmd = [prepack, "bench", "grammar", "--model", model, "--schemas", schemas, "--json-object", "--json",
           "--threads", str(args.threads), "--max-tokens", str(args.max_tokens),
           "--compile-repeats", str(args.compile_repeats), "--cold-replays", str(args.cold_replays),
           "--warm-replays", str(args.warm_replays)]
    if dump:
        cmd += ["--dump-dir", str(out_dir)]
    if texts is not None:
        cmd += ["--texts", str(texts)]
    if batch_sizes:
        cmd += ["--batch-sizes", batch_sizes, "--throughput-repeats", str(args.throughput_repeats),
                "--throughput-max-tokens", str(args.throughput_max_tokens)]
    print("bench_grammar: $ " + " ".join(cmd), file=sys.stderr)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"bench_grammar: prepack failed ({r.returncode})")
    return json.loads(r.stdout)


class Dump:
    """What `prepack bench grammar --dump-dir` wrote."""

    def __init__(self, d: Path, report):
        import numpy as np
        self.dir = d
        v = json.loads((d / "vocab.json").read_text())
        self.vocab_type = v["vocab_type"]
        self.tokens = [bytes.fromhex(h) for h in v["token_bytes_hex"]]
        self.end_tokens = v["end_tokens"]
        self.n = len(self.tokens)
        self.report = report
        self.grammars = []
        for g in report["grammars"]:
            name = g["name"]
            words = (self.n + 63) // 64
            raw = np.fromfile(d / "masks" / f"{name}.bin", dtype=np.uint8)
            masks = raw.reshape(-1, words * 8) if raw.size else raw.reshape(0, words * 8)
            schema_path = d / "grammars" / f"{name}.schema.json"
            self.grammars.append({
                "name": name, "kind": g["kind"],
                "gbnf": (d / "grammars" / f"{name}.gbnf").read_text(),
                "schema": schema_path.read_text() if schema_path.exists() else None,
                "ids": g["dump"]["ids"], "text": g["dump"]["text"],
                "allowed": g["dump"]["allowed_per_step"], "masks": masks,
            })

    def content_ids(self, g):
        ids = list(g["ids"])
        if ids and ids[-1] in self.end_tokens:
            ids.pop()
        return ids


# ---- the peers -------------------------------------------------------------

def gbnf_for_xgrammar(gbnf: str) -> str:
    """llama.cpp's GBNF reads exactly two hex digits after \\x; XGrammar's
    EBNF parser reads on while hex digits follow ("[\\x2D0-9]" is, to it, the
    range 0x2D0-'9', refused). Printable bytes so written become themselves
    (escaped where a class would read them as syntax); the language is the same."""
    import re

    def literal(m):
        c = chr(int(m.group(2), 16))
        if not (0x20 <= ord(c) < 0x7F):
            return m.group(0)
        return m.group(1) + ("\\" + c if c in "]-\\^[\"" else c)
    # An \x escape not itself escaped: preceded by an even run of backslashes.
    return re.sub(r"(?<!\\)((?:\\\\)*)\\x([0-9a-fA-F]{2})", literal, gbnf)


class XGrammarEngine:
    name = "xgrammar"

    def __init__(self, dump: Dump, threads: int):
        import xgrammar as xgr
        self.xgr = xgr
        # RAW: the dump holds each token's bytes as they decode (SentencePiece's
        # "▁" and byte-level BPE's mapping are already undone).
        self.info = xgr.TokenizerInfo(dump.tokens, xgr.VocabType.RAW, vocab_size=dump.n,
                                      stop_token_ids=dump.end_tokens)
        self.threads = threads
        self.bitmask = xgr.allocate_token_bitmask(1, dump.n)

    def compiler(self):
        return self.xgr.GrammarCompiler(self.info, max_threads=self.threads, cache_enabled=False)

    def compile_native(self, g):
        c = self.compiler()
        if g["kind"] == "json_schema":
            return c.compile_json_schema(g["schema"], any_whitespace=True, strict_mode=True)
        if g["kind"] == "json_object":
            return c.compile_builtin_json_grammar()
        return c.compile_grammar(gbnf_for_xgrammar(g["gbnf"]), root_rule_name="root")

    def compile_gbnf(self, g):
        return self.compiler().compile_grammar(gbnf_for_xgrammar(g["gbnf"]), root_rule_name="root")

    def matcher(self, compiled):
        return self.xgr.GrammarMatcher(compiled)

    def fill(self, m):
        m.fill_next_token_bitmask(self.bitmask)

    def mask_bytes(self):
        return self.bitmask.numpy().view("uint8")[0]

    def accept(self, m, tok):
        return m.accept_token(tok)

    def rewind(self, m, compiled):
        return self.xgr.GrammarMatcher(compiled)


class LLGuidanceEngine:
    name = "llguidance"

    def __init__(self, dump: Dump, threads: int):
        import llguidance as llg
        import numpy as np
        self.llg = llg

        class Vocabulary:
            # llguidance's TokenizerWrapper protocol. Tokens without bytes
            # (control, unused) get llguidance's special-token form (0xFF, then
            # a name): never allowed by a grammar, as in prepack.
            def __init__(s):
                s.eos_token_id = dump.end_tokens[0] if dump.end_tokens else 0
                s.bos_token_id = None
                s.tokens = [t if t else b"\xff[%d]" % i for i, t in enumerate(dump.tokens)]
                s.special_token_ids = [i for i, t in enumerate(dump.tokens) if not t]
                s._by_bytes = {}
                for i, t in enumerate(dump.tokens):
                    if t and i not in dump.end_tokens:
                        s._by_bytes.setdefault(t, i)
                s._longest = max(len(t) for t in s._by_bytes)

            def __call__(s, text):
                # llguidance tokenizes text the grammar forces and then allows
                # only that tokenization's first token there; the longest token
                # at each position stands in for the model's BPE (a byte-wise
                # tokenizer here would narrow its forced masks to single bytes).
                data = text if isinstance(text, bytes) else text.encode()
                out, at = [], 0
                while at < len(data):
                    for n in range(min(s._longest, len(data) - at), 0, -1):
                        tid = s._by_bytes.get(data[at:at + n])
                        if tid is not None:
                            out.append(tid)
                            at += n
                            break
                    else:
                        at += 1   # a byte no token spells: skipped
                return out

        self.tok = llg.LLTokenizer(llg.TokenizerWrapper(Vocabulary()), n_vocab=dump.n,
                                   eos_token=list(dump.end_tokens) or None)
        self.words = (dump.n + 31) // 32
        self.buf = np.zeros(self.words, dtype=np.int32)

    def _matcher(self, grammar):
        m = self.llg.LLMatcher(self.tok, grammar, log_level=0)
        if m.is_error():
            raise RuntimeError(m.get_error())
        return m

    def compile_native(self, g):
        if g["kind"] == "json_schema":
            grammar = self.llg.LLMatcher.grammar_from_json_schema(
                g["schema"], defaults={"whitespace_flexible": True})
        elif g["kind"] == "json_object":
            grammar = self.llg.LLMatcher.grammar_from_json_schema(
                '{"type": "object"}', defaults={"whitespace_flexible": True})
        else:
            grammar = self.llg.grammar_from("gbnf", g["gbnf"])
        return self._matcher(grammar)   # the matcher's construction is the compile

    def compile_gbnf(self, g):
        return self._matcher(self.llg.grammar_from("gbnf", g["gbnf"]))

    def matcher(self, compiled):
        return compiled

    def fill(self, m):
        m.unsafe_compute_mask_ptr(self.buf.ctypes.data, self.buf.nbytes)

    def mask_bytes(self):
        return self.buf.view("uint8")

    def accept(self, m, tok):
        return m.consume_token(tok) and not m.is_error()

    def rewind(self, m, compiled):
        m.reset()   # the same matcher: its lexer caches stay warm
        return m


def replay(engine, compiled, ids, n, keep_masks):
    """The masks before each id and after the last, timed. Returns
    (microseconds per mask, masks or None, the step where a token was
    refused or None)."""
    import numpy as np
    m = engine.matcher(compiled)
    times, masks = [], []
    nbytes = (n + 7) // 8
    for step in range(len(ids) + 1):
        t0 = time.perf_counter_ns()
        engine.fill(m)
        t1 = time.perf_counter_ns()
        times.append((t1 - t0) / 1e3)
        if keep_masks:
            masks.append(np.array(engine.mask_bytes()[:nbytes], copy=True))
        if step == len(ids):
            break
        if not engine.accept(m, ids[step]):
            return times, masks, step
    return times, masks, None


def replay_warm(engine, compiled, ids, n, m_holder):
    import numpy as np  # noqa: F401
    m = engine.rewind(m_holder, compiled)
    times = []
    for step in range(len(ids) + 1):
        t0 = time.perf_counter_ns()
        engine.fill(m)
        t1 = time.perf_counter_ns()
        times.append((t1 - t0) / 1e3)
        if step == len(ids) or not engine.accept(m, ids[step]):
            break
    return times


def compare_masks(dump: Dump, g, peer_masks, limit=5):
    """Bit-by-bit comparison with prepack's masks. Returns the differing steps
    and a few examples (step, token, its bytes, which side allows it)."""
    import numpy as np
    ours = g["masks"]
    n = dump.n
    steps = min(len(ours), len(peer_masks))
    differing, tokens, ours_only, peer_only, examples = 0, 0, 0, 0, []
    text_so_far = b""
    ids = dump.content_ids(g)
    for s in range(steps):
        a = np.unpackbits(ours[s], bitorder="little")[:n]
        b = np.unpackbits(peer_masks[s], bitorder="little")[:n]
        diff = np.nonzero(a != b)[0]
        if len(diff):
            differing += 1
            tokens += len(diff)
            ours_only += int(a[diff].sum())
            peer_only += int(len(diff) - a[diff].sum())
            if len(examples) < limit:
                examples.append({
                    "step": s, "prefix_tail": text_so_far[-40:].decode("utf-8", "replace"),
                    "tokens": [{"id": int(t), "bytes": dump.tokens[t].decode("utf-8", "replace"),
                                "allowed_by": "prepack" if a[t] else "peer"} for t in diff[:6]],
                    "count": int(len(diff))})
        if s < len(ids):
            text_so_far += dump.tokens[ids[s]]
    return {"steps_compared": steps, "differing_steps": differing, "differing_tokens": tokens,
            "allowed_by_prepack_only": ours_only, "allowed_by_peer_only": peer_only, "examples": examples}


def bench_peers(dump: Dump, engines, args, compare):
    """One round over every grammar: compile (native and GBNF), cold and warm
    replays, engines interleaved. `compare`: also the bit-by-bit check."""
    out = {}
    for g in dump.grammars:
        ids = dump.content_ids(g)
        res = {e.name: {"compile_ms": [], "gbnf_compile_ms": [], "cold_us": [], "warm_us": [],
                        "first_mask_us": [], "errors": []} for e in engines}
        # Compiles, interleaved.
        for _ in range(args.peer_compile_repeats):
            for e in engines:
                r = res[e.name]
                for key, fn in (("compile_ms", e.compile_native), ("gbnf_compile_ms", e.compile_gbnf)):
                    try:
                        t0 = time.perf_counter_ns()
                        fn(g)
                        r[key].append((time.perf_counter_ns() - t0) / 1e6)
                    except Exception as ex:  # a grammar the peer refuses: reported, not fatal
                        msg = f"{key}: {str(ex)[:300]}"
                        if msg not in r["errors"]:
                            r["errors"].append(msg)
        # Replays on the engines' own compile of the schema.
        for rep in range(args.cold_replays):
            for e in engines:
                r = res[e.name]
                try:
                    compiled = e.compile_native(g)
                except Exception:
                    continue
                times, _, refused = replay(e, compiled, ids, dump.n, keep_masks=False)
                r["cold_us"] += times
                r["first_mask_us"].append(times[0])
                if refused is not None:
                    r["errors"].append(f"native grammar refused token {ids[refused]} "
                                       f"({dump.tokens[ids[refused]]!r}) at step {refused}")
                if rep == args.cold_replays - 1:
                    holder = e.matcher(compiled)
                    for _ in range(args.warm_replays):
                        r["warm_us"] += replay_warm(e, compiled, ids, dump.n, holder)
        if compare:
            for e in engines:
                r = res[e.name]
                try:
                    compiled = e.compile_gbnf(g)
                except Exception as ex:
                    r["mask_compare"] = {"error": f"cannot compile prepack's GBNF: {str(ex)[:300]}"}
                    continue
                _, masks, refused = replay(e, compiled, ids, dump.n, keep_masks=True)
                cmp = compare_masks(dump, g, masks)
                if refused is not None:
                    cmp["refused_step"] = refused
                r["mask_compare"] = cmp
        out[g["name"]] = res
    return out


# ---- the report ------------------------------------------------------------

def summarize(dump: Dump, prepack_rounds, peer_rounds, engines):
    """Per grammar and overall, each engine's figures: medians over rounds
    of each round's distribution."""
    names = [g["name"] for g in dump.grammars]
    table = []
    overall = {"prepack": {"compile": [], "cold": [], "warm": []}}
    for e in engines:
        overall[e] = {"compile": [], "cold": [], "warm": []}
    for name in names:
        row = {"grammar": name}
        ours = [next(x for x in r["grammars"] if x["name"] == name) for r in prepack_rounds]
        row["prepack"] = {
            "compile_ms_p50": median_of([o["compile_ms"] for o in ours], "p50"),
            "compile_ms_p99": median_of([o["compile_ms"] for o in ours], "p99"),
            "compile_plus_first_mask_ms_p50": median_of([o["compile_plus_first_mask_ms"] for o in ours], "p50"),
            "cold_us": {k: median_of([o["mask_us"]["cold"] for o in ours], k) for k in ("p50", "p99", "max")},
            "warm_us": {k: median_of([o["mask_us"]["warm"] for o in ours], k) for k in ("p50", "p99", "max")},
            "steps": ours[0]["steps"],
        }
        for e in engines:
            rs = [pr[name][e] for pr in peer_rounds]
            comp = [distribution(r["compile_ms"]) for r in rs]
            gcomp = [distribution(r["gbnf_compile_ms"]) for r in rs]
            cold = [distribution(r["cold_us"]) for r in rs]
            warm = [distribution(r["warm_us"]) for r in rs]
            fm = [distribution([c + f / 1e3 for c, f in zip(r["compile_ms"], r["first_mask_us"])]) for r in rs]
            row[e] = {
                "compile_ms_p50": median_of(comp, "p50"), "compile_ms_p99": median_of(comp, "p99"),
                "gbnf_compile_ms_p50": median_of(gcomp, "p50"),
                "compile_plus_first_mask_ms_p50": median_of(fm, "p50"),
                "cold_us": {k: median_of(cold, k) for k in ("p50", "p99", "max")},
                "warm_us": {k: median_of(warm, k) for k in ("p50", "p99", "max")},
                "errors": sorted({x for r in rs for x in r["errors"]}),
            }
            cmp = next((r["mask_compare"] for r in rs if "mask_compare" in r), None)
            if cmp is not None:
                row[e]["mask_compare"] = cmp
        table.append(row)
    # Overall: per round, every grammar's samples pooled; then the median over rounds.
    def pooled_ours(key):
        per_round = []
        for r in prepack_rounds:
            per_round.append(r["summary"][key])
        return {k: statistics.median(d[k] for d in per_round) for k in ("p50", "p99", "max")}

    summary = {"prepack": {"compile_ms": pooled_ours("compile_ms_pooled"), "mask_us_cold": pooled_ours("mask_us_cold"),
                           "mask_us_warm": pooled_ours("mask_us_warm")}}
    for e in engines:
        per = {"compile_ms": [], "mask_us_cold": [], "mask_us_warm": []}
        for pr in peer_rounds:
            comp, cold, warm = [], [], []
            for name in names:
                r = pr[name][e]
                comp += r["compile_ms"]
                cold += r["cold_us"]
                warm += r["warm_us"]
            per["compile_ms"].append(distribution(comp))
            per["mask_us_cold"].append(distribution(cold))
            per["mask_us_warm"].append(distribution(warm))
        summary[e] = {k: {q: statistics.median(d[q] for d in v) for q in ("p50", "p99", "max")}
                      for k, v in per.items()}
    return table, summary


def targets(summary):
    ours, xg, ll = summary["prepack"], summary.get("xgrammar"), summary.get("llguidance")
    t = {}
    for phase in ("cold", "warm"):
        k = f"mask_us_{phase}"
        if ll:
            t[f"mask_p99_{phase}_le_llguidance"] = {"ours": ours[k]["p99"], "peer": ll[k]["p99"],
                                                   "met": ours[k]["p99"] <= ll[k]["p99"]}
        if xg:
            t[f"mask_p50_{phase}_le_xgrammar"] = {"ours": ours[k]["p50"], "peer": xg[k]["p50"],
                                                 "met": ours[k]["p50"] <= xg[k]["p50"]}
    t["compile_p50_le_2ms"] = {"ours": ours["compile_ms"]["p50"], "met": ours["compile_ms"]["p50"] <= 2.0}
    return t


def print_table(title, table, summary, engines):
    print(f"\n== {title}")
    hdr = f"{'grammar':<20} {'engine':<10} {'comp p50':>9} {'comp p99':>9} {'c+mask1':>9} " \
          f"{'cold p50':>9} {'cold p99':>9} {'warm p50':>9} {'warm p99':>9} {'warm max':>9} {'mask diff':>12}"
    print(hdr)
    print(f"{'':<20} {'':<10} {'ms':>9} {'ms':>9} {'ms':>9} {'us':>9} {'us':>9} {'us':>9} {'us':>9} {'us':>9} "
          f"{'st/ours/peer':>12}")

    def f(x, w=9, d=3):
        return f"{x:>{w}.{d}f}" if isinstance(x, (int, float)) else f"{'-':>{w}}"
    for row in table:
        for e in ["prepack", *engines]:
            r = row[e]
            diff = ""
            if "mask_compare" in r:
                c = r["mask_compare"]
                diff = "n/a" if "error" in c else \
                    f"{c['differing_steps']}/{c['allowed_by_prepack_only']}/{c['allowed_by_peer_only']}"
                if "refused_step" in c:
                    diff += "!"
            print(f"{row['grammar'][:20]:<20} {e:<10} {f(r['compile_ms_p50'])} {f(r['compile_ms_p99'])} "
                  f"{f(r['compile_plus_first_mask_ms_p50'])} {f(r['cold_us']['p50'], d=1)} {f(r['cold_us']['p99'], d=1)} "
                  f"{f(r['warm_us']['p50'], d=1)} {f(r['warm_us']['p99'], d=1)} {f(r['warm_us']['max'], d=1)} {diff:>12}")
    print("all grammars (pooled samples, median over rounds):")
    for e in ["prepack", *engines]:
        s = summary[e]
        print(f"  {e:<10} compile p50 {s['compile_ms']['p50']:.3f} p99 {s['compile_ms']['p99']:.3f} ms; "
              f"masks cold p50 {s['mask_us_cold']['p50']:.1f} p99 {s['mask_us_cold']['p99']:.1f} "
              f"max {s['mask_us_cold']['max']:.1f} us; warm p50 {s['mask_us_warm']['p50']:.1f} "
              f"p99 {s['mask_us_warm']['p99']:.1f} max {s['mask_us_warm']['max']:.1f} us")


def bench_vocabulary(title, model, out: Path, args, texts=None, batch_sizes=None):
    engines_cls = [XGrammarEngine, LLGuidanceEngine]
    first = run_prepack(args.prepack, model, args.schemas, out, args, texts=texts, batch_sizes=batch_sizes)
    dump = Dump(out, first)
    # Later prepack rounds replay exactly the first round's ids.
    ids_file = out / "ids.json"
    ids_file.write_text(json.dumps({g["name"]: g["ids"] for g in dump.grammars}))
    t0 = time.time()
    engines = [cls(dump, args.peer_threads) for cls in engines_cls]
    print(f"bench_grammar: {title}: peers loaded the vocabulary in {time.time() - t0:.1f} s", file=sys.stderr)
    prepack_rounds, peer_rounds = [first], []
    for rnd in range(args.rounds):
        print(f"bench_grammar: {title}: round {rnd + 1}/{args.rounds}", file=sys.stderr)
        peer_rounds.append(bench_peers(dump, engines, args, compare=(rnd == 0)))
        if rnd + 1 < args.rounds:
            prepack_rounds.append(run_prepack(args.prepack, model, args.schemas, out, args, texts=ids_file,
                                              dump=False))
    names = [e.name for e in engines]
    table, summary = summarize(dump, prepack_rounds, peer_rounds, names)
    return {"title": title, "model": model, "vocab_size": dump.n, "vocab_type": dump.vocab_type,
            "vocab_build_ms": first["vocab"]["build_ms"], "grammars": table, "summary": summary,
            "targets": targets(summary), "throughput": first.get("throughput"),
            "texts": {g["name"]: g["text"] for g in dump.grammars}}, names


def machine():
    info = {}
    try:
        out = subprocess.run(["lscpu"], stdout=subprocess.PIPE, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                info["cpu"] = line.split(":", 1)[1].strip()
            if line.startswith("Flags:"):
                flags = line.split(":", 1)[1].split()
                info["isa"] = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if f in flags]
        info["cores"] = os.cpu_count()
        info["loadavg_start"] = os.getloadavg()
    except OSError:
        pass
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prepack", default=str(REPO / "build" / "bin" / "prepack"))
    ap.add_argument("--schemas", default=str(REPO / "tests" / "data" / "grammar" / "bench"))
    ap.add_argument("--model", default=str(REPO / "build" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--qwen2-vocab", default=str(REPO.parent / "shared" / "models" / "vocab" / "ggml-vocab-qwen2.gguf"),
                    help="a vocabulary-only GGUF with the 151k Qwen2 vocabulary ('' to skip)")
    ap.add_argument("--out", default=str(REPO / "build" / "bench-grammar"))
    ap.add_argument("--venv", default=str(REPO / "build" / ".venv-bench-grammar"))
    ap.add_argument("--threads", type=int, default=0, help="prepack's threads (0 = all)")
    ap.add_argument("--peer-threads", type=int, default=1,
                    help="XGrammar's compile threads (1: as prepack's compile, single-threaded)")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--compile-repeats", type=int, default=20)
    ap.add_argument("--peer-compile-repeats", type=int, default=10)
    ap.add_argument("--cold-replays", type=int, default=3)
    ap.add_argument("--warm-replays", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-sizes", default="1,16", help="throughput batch sizes ('' to skip)")
    ap.add_argument("--throughput-repeats", type=int, default=3)
    ap.add_argument("--throughput-max-tokens", type=int, default=64)
    args = ap.parse_args()
    ensure_peers(Path(args.venv))

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from importlib.metadata import version
    report = {"machine": machine(), "versions": {"xgrammar": version("xgrammar"), "llguidance": version("llguidance")},
              "command": sys.argv, "vocabularies": []}
    smol, names = bench_vocabulary("SmolLM2-135M-Instruct", args.model, out / "smollm2", args,
                                   batch_sizes=args.batch_sizes or None)
    report["vocabularies"].append(smol)
    if args.qwen2_vocab:
        # Qwen2 has no weights here: SmolLM2's generated texts, tokenized by Qwen2.
        texts = out / "qwen2-texts.json"
        texts.write_text(json.dumps(smol["texts"]))
        qwen, _ = bench_vocabulary("Qwen2 vocabulary (151k)", args.qwen2_vocab, out / "qwen2", args, texts=texts)
        report["vocabularies"].append(qwen)
    report["machine"]["loadavg_end"] = os.getloadavg()
    (out / "report.json").write_text(json.dumps(report, indent=1))
    print(f"machine: {report['machine']}; xgrammar {report['versions']['xgrammar']}, "
          f"llguidance {report['versions']['llguidance']}")
    for v in report["vocabularies"]:
        print_table(f"{v['title']}: {v['vocab_size']} tokens ({v['vocab_type']}), prepack's trie "
                    f"{v['vocab_build_ms']:.0f} ms", v["grammars"], v["summary"], names)
        for k, t in v["targets"].items():
            print(f"  target {k}: {'MET' if t['met'] else 'NOT MET'} ({t})")
        for t in v.get("throughput") or []:
            print(f"  throughput batch {t['batch']} ({t['grammar']}): {t['constrained_tokens_per_s']:.1f} tok/s "
                  f"constrained vs {t['unconstrained_tokens_per_s']:.1f} unconstrained = {100 * t['ratio']:.1f}% "
                  f"(target >= 95%: {'MET' if t['ratio'] >= 0.95 else 'NOT MET'})")
    print(f"\nfull report: {out / 'report.json'}")


if __name__ == "__main__":
    main()
