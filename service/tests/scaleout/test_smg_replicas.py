"""Replicas behind SGLang's router over HTTP, on one machine (issue 40, HTTP
part).

Four prepackd replicas (stories260K, else synthetic:tiny; one thread each,
their OpenAI HTTP API on) behind smg (PyPI's Shepherd Model Gateway, `smg
launch --worker-urls ...`), and the workload of the Envoy test (16 shared
prefixes x 12 requests in random order, 8 in flight) sent as OpenAI
completions by a plain HTTP client that sets no routing key: smg's
cache_aware policy matches each prompt's text against a prefix tree of
what it sent to each replica.
  - smg registers prepackd from its worker endpoints (/health, /v1/models,
    /get_server_info, /get_model_info) and polls its load (/v1/loads);
  - the prefix-cache share of prompt tokens (the replicas' own GetStats
    counters) under cache_aware is close to one replica's and far above
    smg's round_robin on the same workload;
  - the Kubernetes Deployment (service/deploy/kubernetes/smg.yaml) names
    every replica of prepackd.yaml's StatefulSet, with flags smg parses;
  - a replica stopped (SIGTERM: it drains) mid-run loses no request: smg
    retries the requests it refuses on another replica and its health check
    takes it out of rotation; the client never has to retry. A replica
    that crashes (SIGKILL) mid-run loses none either: smg retries the
    requests it cut (the client would retry what smg gave up on; measured:
    none).
Run by run_scaleout.sh (ctest prepackd_smg_scaleout).
"""
import collections
import os
import shutil
import signal
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_policies as cp  # noqa: E402
import harness  # noqa: E402
import workload  # noqa: E402

REQUESTS = workload.make_requests(prefixes=16, per_prefix=12)
IN_FLIGHT = 8
SMG = os.environ.get("SMG") or os.path.join(os.path.dirname(sys.executable), "smg")

needs_prepackd = pytest.mark.skipif(not os.environ.get("PREPACKD"), reason="PREPACKD unset: run through ctest")


class Cluster:
    """n replicas with their HTTP API, behind smg with `policy`
    ("cache_aware", "round_robin") or reached straight (policy None, n ==
    1). addr: where clients send (HTTP)."""

    def __init__(self, n, policy):
        prepackd, model, _ = cp.tools()
        self.workdir = tempfile.mkdtemp(prefix="prepack-smg-")
        self.replicas, self.smg = [], None
        try:
            tag = policy or "direct"
            for i in range(n):
                self.replicas.append(harness.Replica(prepackd, model, self.workdir, "%s-replica%d" % (tag, i),
                                                     http=True))
            for r in self.replicas:
                workload.wait_serving(r.addr)
            self.model = workload.model_id(self.replicas[0].http)
            if policy:
                self.smg = harness.Smg(SMG, ["http://" + r.http for r in self.replicas], policy, self.workdir,
                                       "smg-" + policy)
                self.addr = self.smg.addr
            else:
                self.addr = self.replicas[0].http
        except BaseException:
            self.close()
            raise

    def close(self, keep_logs=False):
        if self.smg:
            self.smg.stop()
        for r in self.replicas:
            r.stop()
        if not keep_logs:
            shutil.rmtree(self.workdir, ignore_errors=True)


def measure(cluster, requests, concurrency=IN_FLIGHT):
    """Runs the workload; the replicas' counters' totals and the routing."""
    start = time.monotonic()
    results = workload.run_http(cluster.addr, cluster.model, requests, concurrency)
    prompt, computed = workload.prompt_totals([r.addr for r in cluster.replicas])
    served = collections.Counter(r.upstream for r in results)
    per_prefix = collections.defaultdict(set)
    for r in results:
        per_prefix[r.prefix].add(r.upstream)
    return {
        "replicas": len(cluster.replicas),
        "requests": len(results),
        "failed": sum(not r.ok for r in results),
        "client_retries": sum(r.client_tries > 1 for r in results),
        "prompt_tokens": prompt,
        "prompt_tokens_computed": computed,
        "cached_share": 1 - computed / prompt,
        "replicas_per_prefix": sum(len(s) for s in per_prefix.values()) / len(per_prefix) if cluster.smg else 1.0,
        "busiest_over_mean": max(served.values()) * len(cluster.replicas) / len(results) if cluster.smg else 1.0,
        "seconds": time.monotonic() - start,
    }


SETUPS = (("1 replica", 1, None),
          ("4 replicas, smg round_robin", 4, "round_robin"),
          ("4 replicas, smg cache_aware", 4, "cache_aware"))


def table(figures):
    rows = ["| setup | prompt tokens | computed | cached share | replicas per prefix | busiest replica / mean |",
            "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, f in figures.items():
        rows.append("| %s | %d | %d | %.1f%% | %.2f | %.2f |" % (
            name, f["prompt_tokens"], f["prompt_tokens_computed"], 100 * f["cached_share"],
            f["replicas_per_prefix"], f["busiest_over_mean"]))
    return "\n".join(rows)


def check_registration(c):
    """smg took each replica for a generic OpenAI worker with prepackd's
    metadata (/v1/models, /get_server_info, /get_model_info) and polls its
    load (/v1/loads)."""
    model_path = cp.tools()[1]

    def polled():
        listing = c.smg.listing()
        return listing if all(w.get("engine_load", {}).get("loads") for w in listing) else None

    listing = harness._wait("smg's first load poll", polled, 10)
    assert sorted(w["url"] for w in listing) == sorted(c.smg.urls)
    for w in listing:
        assert w["runtime_type"] == "generic" and w["connection_mode"] == "http", w
        labels = w["labels"]
        assert labels["served_model_name"] == c.model and labels["model_path"] == model_path, labels
        assert labels["max_running_requests"] == "64" and labels["is_generation"] == "true", labels
        (load,) = w["engine_load"]["loads"]
        assert load["max_running_requests"] == 64 and 0 <= load["token_usage"] <= 1, load


@needs_prepackd
def test_cache_aware_keeps_the_cache_share_of_one_replica():
    figures = {}
    for name, n, policy in SETUPS:
        c = Cluster(n, policy)
        try:
            if c.smg:
                check_registration(c)
            figures[name] = measure(c, REQUESTS)
        finally:
            c.close()
    print("\n%d prefixes x %d requests, shuffled, %d in flight, OpenAI completions over HTTP; model %s" % (
        16, 12, IN_FLIGHT, cp.tools()[1]))
    print(table(figures))
    one, rr, aware = (figures[s[0]] for s in SETUPS)
    for f in figures.values():
        assert f["failed"] == 0 and f["client_retries"] == 0
        assert f["prompt_tokens"] == one["prompt_tokens"]   # every request counted once
    # Round robin sends each prefix to every replica, each of which computes it.
    assert rr["replicas_per_prefix"] > 3
    # cache_aware keeps most prefixes on one replica (it may spill a hot one
    # to an idle replica): close to one replica's share, and it wins back
    # most of what round robin loses.
    assert aware["replicas_per_prefix"] < 2
    assert one["cached_share"] - aware["cached_share"] <= 0.10
    assert aware["cached_share"] - rr["cached_share"] >= 0.5 * (one["cached_share"] - rr["cached_share"])


@needs_prepackd
def test_a_replica_that_goes_away_loses_no_request():
    c = Cluster(4, "cache_aware")
    passed = False
    try:
        def mid_run(victim, sig):
            """The workload, with `sig` to victim after a third of it; the
            results, and how many requests smg retried meanwhile."""
            retried = c.smg.counter("smg_worker_retries_total")
            results = workload.run_http(c.addr, c.model, REQUESTS, IN_FLIGHT,
                                        after=(len(REQUESTS) // 3, lambda: victim.signal(sig)))
            victim.proc.wait(30)
            return results, c.smg.counter("smg_worker_retries_total") - retried

        def left_rotation(victim):
            """smg's health check takes the victim out; the others serve."""
            url = "http://" + victim.http
            c.smg.wait_ready({"http://" + r.http for r in c.replicas if r.proc.poll() is None}, 10)
            assert c.smg.workers().get(url) != "ready"
            late = workload.run_http(c.addr, c.model, REQUESTS[:24], IN_FLIGHT)
            assert [r.errors for r in late if not r.ok or r.client_tries > 1] == []
            assert url not in {r.upstream for r in late}

        # Stopped: SIGTERM. prepackd drains (/health 503, new requests 503,
        # running ones finish) and exits; smg retries what it refuses on
        # another replica: the client never retries.
        stopped = c.replicas[1]
        results, smg_retried = mid_run(stopped, signal.SIGTERM)
        print("\nstopped http://%s: smg retried %d requests, the client %d" % (
            stopped.http, smg_retried, sum(r.client_tries > 1 for r in results)))
        assert [(r.code, r.errors) for r in results if not r.ok] == []
        assert [r.errors for r in results if r.client_tries > 1] == [], "smg re-routes a stopping replica's requests"
        left_rotation(stopped)

        # Crashed: SIGKILL. The requests it was serving lose their
        # connection and those sent to it fail to connect; smg retries both
        # on another replica (a completion that is not streamed has sent
        # nothing yet). Measured: no client retry either; the client's
        # retry stays the backstop for smg's own running out (5 tries).
        crashed = c.replicas[0]
        results, smg_retried = mid_run(crashed, signal.SIGKILL)
        print("crashed http://%s: smg retried %d requests, the client %d" % (
            crashed.http, smg_retried, sum(r.client_tries > 1 for r in results)))
        assert [(r.code, r.errors) for r in results if not r.ok] == []
        left_rotation(crashed)
        passed = True
    finally:
        c.close(keep_logs=not passed)
        if not passed:
            print("logs kept in " + c.workdir)


def test_kubernetes_deployment_names_every_replica():
    """service/deploy/kubernetes/smg.yaml: its flags parse (smg's own
    parser, the version this test runs) and name each pod of prepackd's
    StatefulSet through the headless Service on its HTTP port, so the
    manifests cannot drift apart (kubernetes_validate checks the schema)."""
    import yaml
    from smg.launch_router import parse_router_args

    deploy = os.path.join(harness.ROOT, "service", "deploy", "kubernetes")
    with open(os.path.join(deploy, "prepackd.yaml")) as f:
        prepackd = {d["kind"]: d for d in yaml.safe_load_all(f)}
    with open(os.path.join(deploy, "smg.yaml")) as f:
        router = {d["kind"]: d for d in yaml.safe_load_all(f)}
    sts, headless = prepackd["StatefulSet"], prepackd["Service"]
    http_port = next(p["port"] for p in headless["spec"]["ports"] if p["name"] == "http")
    (container,) = router["Deployment"]["spec"]["template"]["spec"]["containers"]
    args = parse_router_args(container["args"])
    args._validate_router_args()
    assert args.policy == "cache_aware"
    assert args.worker_urls == ["http://%s-%d.%s.default.svc.cluster.local:%d" % (
        sts["metadata"]["name"], i, headless["metadata"]["name"], http_port) for i in range(sts["spec"]["replicas"])]
    assert {"name": "http", "containerPort": args.port} in container["ports"]
    assert router["Service"]["spec"]["ports"][0]["targetPort"] == "http"
