#!/usr/bin/env python3
"""Prefix-cache share of one shared-prefix workload on 1 prepackd, and on 4
behind Envoy with round robin and with consistent hashing of the prefix key
(Maglev as checked in, and ring hash); and how many keys move when one of
the 4 replicas stops.

The cache figures come from the replicas' own GetStats counters: prompt
tokens submitted and prompt tokens computed, summed over replicas; the
cached share is 1 - computed / submitted. Run from the envoy venv
(service/tests/scaleout/run_scaleout.sh makes it):

  PREPACKD=build/bin/prepackd build/envoy-venv/bin/python \\
      service/tests/scaleout/compare_policies.py [--prefixes 16 --per-prefix 12]

prints the tables of docs/benchmarks.md ("Replicas behind Envoy").
test_envoy_replicas.py asserts on the same measurements.
"""
import argparse
import collections
import os
import shutil
import signal
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import workload  # noqa: E402

STORIES = os.path.join(harness.ROOT, "..", "shared", "models", "stories260K", "stories260K.gguf")


def tools():
    """(prepackd, model, envoy) from the environment, as ctest passes them."""
    prepackd = os.environ.get("PREPACKD") or os.path.join(harness.ROOT, "build", "bin", "prepackd")
    model = os.environ.get("PREPACK_STORIES") or STORIES
    if not os.path.exists(model):
        model = "synthetic:tiny"
    envoy = os.environ.get("ENVOY") or os.path.join(os.path.dirname(sys.executable), "envoy")
    return prepackd, model, envoy


class Cluster:
    """n replicas, behind Envoy with lb ("maglev", "ring_hash",
    "round_robin") or reached straight (lb None, n == 1). addr: where
    clients send. balance_factor: the hash's load bound (None: as checked
    in, 0: none)."""

    def __init__(self, n, lb, balance_factor=None):
        prepackd, model, envoy = tools()
        self.workdir = tempfile.mkdtemp(prefix="prepack-scaleout-")
        self.replicas, self.envoy = [], None
        try:
            tag = lb or "direct"
            for i in range(n):
                self.replicas.append(harness.Replica(prepackd, model, self.workdir, "%s-replica%d" % (tag, i)))
            if lb:
                self.envoy = harness.Envoy(envoy, [r.addr for r in self.replicas], lb, self.workdir,
                                           "envoy-" + lb, balance_factor)
                self.addr = self.envoy.addr
            else:
                workload.wait_serving(self.replicas[0].addr)
                self.addr = self.replicas[0].addr
        except BaseException:
            self.close()
            raise

    def close(self, keep_logs=False):
        if self.envoy:
            self.envoy.stop()
        for r in self.replicas:
            r.stop()
        if not keep_logs:
            shutil.rmtree(self.workdir, ignore_errors=True)


def measure(cluster, requests, concurrency=8):
    """Runs the workload; the counters' totals and the routing it got."""
    results = workload.run(cluster.addr, requests, concurrency)
    prompt, computed = workload.prompt_totals([r.addr for r in cluster.replicas])
    served = collections.Counter(r.upstream for r in results)
    replicas_per_prefix = collections.defaultdict(set)
    for r in results:
        replicas_per_prefix[r.prefix].add(r.upstream)
    return {
        "replicas": len(cluster.replicas),
        "requests": len(results),
        "failed": sum(not r.ok for r in results),
        "prompt_tokens": prompt,
        "prompt_tokens_computed": computed,
        "cached_share": 1 - computed / prompt,
        # Through Envoy: how many replicas each prefix's requests reached.
        "replicas_per_prefix": (sum(len(s) for s in replicas_per_prefix.values()) / len(replicas_per_prefix)
                                if cluster.envoy else 1.0),
        # The busiest replica's requests over the mean (1 = even load).
        "busiest_over_mean": (max(served.values()) * len(cluster.replicas) / len(results)
                              if cluster.envoy else 1.0),
    }


def keys_moved(cluster, victim, stop, probes=200):
    """Where `probes` keys land before and after stop() takes `victim` away
    (it signals the victim, perhaps in the middle of a workload), once
    Envoy has taken it out of service. Returns (keys that were on the
    victim, keys of the other replicas that moved, all keys), each a set."""
    before = workload.probe(cluster.addr, probes)
    stop()
    victim.proc.wait(30)
    cluster.envoy.wait_healthy({r.addr for r in cluster.replicas if r.proc.poll() is None})
    after = workload.probe(cluster.addr, probes)
    own = {k for k, a in before.items() if a == victim.addr}
    others = {k for k, a in before.items() if a != victim.addr and after[k] != a}
    return own, others, set(before)


# (name, replicas, lb, load bound): the checked-in config is Maglev with
# bounded load (hash_balance_factor 150); without a bound shows what the
# bound costs in cache hits.
SETUPS = (("1 replica", 1, None, None),
          ("4 replicas, round robin", 4, "round_robin", None),
          ("4 replicas, Maglev on the prefix key, load bound 150% (checked in)", 4, "maglev", None),
          ("4 replicas, ring hash on the prefix key, load bound 150%", 4, "ring_hash", None),
          ("4 replicas, Maglev on the prefix key, no load bound", 4, "maglev", 0))


def measure_all(requests, concurrency=8, setups=SETUPS):
    out = {}
    for name, n, lb, factor in setups:
        c = Cluster(n, lb, balance_factor=factor)
        try:
            out[name] = measure(c, requests, concurrency)
        finally:
            c.close()
    return out


def table(figures):
    rows = ["| setup | prompt tokens | computed | cached share | replicas per prefix | busiest replica / mean |",
            "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, f in figures.items():
        rows.append("| %s | %d | %d | %.1f%% | %.2f | %.2f |" % (
            name, f["prompt_tokens"], f["prompt_tokens_computed"], 100 * f["cached_share"],
            f["replicas_per_prefix"], f["busiest_over_mean"]))
    return "\n".join(rows)


def moves_table(trials=3, probes=400):
    rows = ["| hash | stopped replica's keys | other replicas' keys moved | keys moved in all |",
            "| --- | ---: | ---: | ---: |"]
    for lb in ("maglev", "ring_hash"):
        for _ in range(trials):
            c = Cluster(4, lb)
            try:
                victim = c.replicas[1]
                own, others, keys = keys_moved(c, victim, lambda: victim.signal(signal.SIGTERM), probes)
            finally:
                c.close()
            rows.append("| %s | %.1f%% | %.1f%% | %.1f%% |" % (
                lb, 100 * len(own) / len(keys), 100 * len(others) / (len(keys) - len(own)),
                100 * (len(own) + len(others)) / len(keys)))
    return "\n".join(rows)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--prefixes", type=int, default=16)
    p.add_argument("--per-prefix", type=int, default=12)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--move-trials", type=int, default=3, help="stop-one-replica trials per hash (0: none)")
    a = p.parse_args()
    reqs = workload.make_requests(a.prefixes, a.per_prefix, seed=a.seed)
    print("%d prefixes x %d requests, shuffled, %d in flight; model %s" % (
        a.prefixes, a.per_prefix, a.concurrency, tools()[1]))
    print(table(measure_all(reqs, a.concurrency)))
    if a.move_trials:
        print()
        print(moves_table(a.move_trials))


if __name__ == "__main__":
    main()
