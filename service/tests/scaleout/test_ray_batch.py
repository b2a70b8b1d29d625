"""A sharded batch on Ray, on one machine (issue 40, the Ray executor).

A local two-node Ray cluster (ray.cluster_utils.Cluster: a head and a worker
node, 1 CPU each, on 127.0.0.1) runs service/deploy/ray/prepack_ray_batch.py
on stories260K with 64 greedy requests under nested shared prefixes (2
system prompts x 4 documents x 8 questions, in random order):
  - the two shards run on the two nodes, and the merged output equals a
    single `prepack batch` run of the whole file: the same ids in input
    order, the same tokens and text;
  - the Ray worker running a shard is SIGKILLed once its output has a result
    (its prepack, stopped just before so that what it wrote is known, dies
    with it): Ray reruns the shard, which resumes after exactly the results
    already written, and the merged output is still the single run's, every
    line answered once;
  - the worker node running a shard is removed mid-shard (its prepack
    stopped the same way) and a new node added: the same, the shard rerun
    on another node;
  - a missing binary, a bad input line (the plan refuses it) and a shard
    failing on its own are named, the last with its stderr; --timeout cancels
    the shards (their processes die) and exits 3, and a rerun with the same
    --work-dir resumes; an unreachable --address fails within
    --connect-timeout.
Run by run_ray_batch.sh (ctest prepack_ray_batch) with PREPACK_CLI and
PREPACK_STORIES; skipped without them.
"""
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

# Every Ray address on 127.0.0.1: without this Ray turns a loopback address
# into the machine's own network address.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")   # 2 nodes, the driver and pytest share the cores

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
DRIVER = os.path.join(ROOT, "service", "deploy", "ray", "prepack_ray_batch.py")
PREPACK = os.environ.get("PREPACK_CLI", "")
STORIES = os.environ.get("PREPACK_STORIES", "")

pytestmark = [
    pytest.mark.skipif(not PREPACK, reason="PREPACK_CLI unset: run through ctest"),
    pytest.mark.skipif(not os.path.isfile(STORIES), reason="stories260K absent (PREPACK_STORIES=%s)" % STORIES),
]

SYSTEMS = ["Once upon a time, there was a little girl named Lily. She loved to play in the park with her friends "
           "and her dog Max.",
           "Tom was a happy boy who liked to build towers with his blocks. His mom gave him a new box of blocks "
           "for his birthday."]
DOCS = ["One day, she found a shiny red ball under a big tree.",
        "In a small house near the forest lived an old cat named Whiskers.",
        "The sun was shining and the birds were singing by the sea.",
        "It was a cold winter morning and the snow was falling."]
ASKS = ["What happened next?", "Then she said", "After that,", "He was sad because", "They all laughed when",
        "The next day", "Suddenly,", "At the end,"]
WAIT = 120   # seconds for any one driver run


def _requests():
    lines = []
    for s, system in enumerate(SYSTEMS):
        for d, doc in enumerate(DOCS):
            for a, ask in enumerate(ASKS):
                lines.append({"id": "s%dd%da%d" % (s, d, a), "prompt": "%s %s %s" % (system, doc, ask),
                              "max_tokens": 32 + (7 * s + 3 * d + a) % 33, "temperature": 0})
    random.Random(40).shuffle(lines)
    return lines


def _read_results(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """The input file and the single-machine run's results by id."""
    d = tmp_path_factory.mktemp("batch")
    path = str(d / "requests.jsonl")
    requests = _requests()
    with open(path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in requests)
    whole = str(d / "whole.jsonl")
    r = subprocess.run([PREPACK, "batch", "--model", STORIES, "--threads", "1", "--input", path, "--output", whole],
                       capture_output=True, text=True, timeout=WAIT)
    assert r.returncode == 0, r.stderr
    results = {j["id"]: j for j in _read_results(whole)}
    assert len(results) == len(requests)
    return {"input": path, "ids": [r["id"] for r in requests], "whole": results}


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False,
                                                      "node_ip_address": "127.0.0.1"})
    try:
        c.add_node(num_cpus=1, node_ip_address="127.0.0.1")
        c.wait_for_nodes(timeout=60)
        yield c
    finally:
        c.shutdown()


def _start(cluster, batch, work, *extra, prepack=PREPACK, address=None):
    out = os.path.join(work, "merged.jsonl")
    cmd = [sys.executable, DRIVER, "--prepack", prepack, "--model", STORIES, "--input", batch["input"],
           "--output", out, "--work-dir", work, "--address", address or cluster.address, "--threads", "1",
           "--timeout", str(WAIT), "--connect-timeout", "60", *extra]
    log = open(os.path.join(work + ".log"), "w+")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True), log, out


def _finish(proc, log, timeout=WAIT + 30):
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        rc = None
    log.seek(0)
    text = log.read()
    log.close()
    return rc, text


def _run(cluster, batch, work, *extra, **kw):
    return _finish(*_start(cluster, batch, work, *extra, **kw)[:2])


def _expect_the_single_run(batch, merged):
    results = _read_results(merged)
    assert [j["id"] for j in results] == batch["ids"], "not one result per input line in input order"
    for j in results:
        want = batch["whole"][j["id"]]
        assert "error" not in j, j
        assert j["tokens"] == want["tokens"], j["id"]
        assert j["text"] == want["text"], j["id"]
        assert j["finish_reason"] == want["finish_reason"], j["id"]


def _manifest(work):
    with open(os.path.join(work, "plan", "manifest.json")) as f:
        return json.load(f)


def _attempts(work, k):
    """Each attempt's header line in shard k's log: node id prefix, results already there."""
    found = []
    with open(os.path.join(work, "out", "out-%03d.log" % k)) as f:
        for line in f:
            if line.startswith("=== attempt on shard"):
                node = line.split("(node ", 1)[1].split(")", 1)[0]
                already = int(line.split(": ")[-1].split(" of ")[0])
                found.append((node, already))
    return found


def _lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return 0


def _wait_for(what, cond, timeout=60):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v is not None and v is not False:
            return v
        time.sleep(0.002)
    raise TimeoutError("%s: not within %.0f s" % (what, timeout))


def _prepack_of(output):
    """The pid of the `prepack batch` writing `output`, if any."""
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if output.encode() in argv and b"batch" in argv and b"--output" in argv:
            return int(p)
    return None


def _stat(pid):
    """(state, ppid) of a process, or None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError):
        return None


def _gone(pid):
    s = _stat(pid)
    return s is None or s[0] in ("Z", "X")


def _one_result_per_id(work, k, manifest):
    ids = [j["id"] for j in _read_results(os.path.join(work, "out", "out-%03d.jsonl" % k))]
    assert sorted(ids) == sorted(manifest["shards"][k]["ids"]), "shard %d: an id answered twice or not at all" % k


def test_two_shards_on_two_nodes_equal_one_machine(cluster, batch, tmp_path):
    work = str(tmp_path / "run")
    rc, log = _run(cluster, batch, work)
    assert rc == 0, log
    _expect_the_single_run(batch, os.path.join(work, "merged.jsonl"))
    manifest = _manifest(work)
    assert len(manifest["shards"]) == 2 and all(s["requests"] > 0 for s in manifest["shards"])
    nodes = {n.node_id[:12] for n in cluster.list_all_nodes()}
    ran_on = [_attempts(work, k) for k in (0, 1)]
    assert all(len(a) == 1 for a in ran_on), ran_on
    assert {a[0][0] for a in ran_on} == nodes, "the shards did not run one per node: %s" % ran_on
    assert "shards done 2/2, lines written 64/64" in log, log


def test_a_killed_worker_reruns_its_shard_from_where_it_was(cluster, batch, tmp_path):
    work = str(tmp_path / "run")
    # --max-running 1: the shard's results come one at a time, so it is
    # killed with most of its lines still to come.
    proc, log, merged = _start(cluster, batch, work, "--max-running", "1")
    try:
        output = os.path.join(work, "out", "out-001.jsonl")
        _wait_for("a first result of shard 1", lambda: _lines(output) >= 1)
        pid = _wait_for("shard 1's prepack", lambda: _prepack_of(output), timeout=10)
        worker = _stat(pid)[1]
        with open("/proc/%d/cmdline" % worker, "rb") as f:
            title = f.read()
        assert title.startswith(b"ray::"), "prepack's parent is not a Ray worker: %r" % title[:80]
        # Stopped first, so the lines it had written are known exactly.
        os.kill(pid, signal.SIGSTOP)
        at_kill = _lines(output)
        os.kill(worker, signal.SIGKILL)
        _wait_for("shard 1's prepack dying with its worker", lambda: _gone(pid), timeout=10)
    finally:
        rc, text = _finish(proc, log)
    assert rc == 0, text
    manifest = _manifest(work)
    size = manifest["shards"][1]["requests"]
    assert 1 <= at_kill < size, "the kill came after shard 1 had finished (%d of %d lines)" % (at_kill, size)
    _expect_the_single_run(batch, merged)
    _one_result_per_id(work, 1, manifest)
    attempts = _attempts(work, 1)
    assert len(attempts) == 2, attempts
    assert attempts[1][1] == at_kill, "the rerun did not resume: %s, %d lines at the kill" % (attempts, at_kill)
    assert "resumed after" in text, text


def test_a_failing_shard_is_named_with_its_stderr(cluster, batch, tmp_path):
    rc, log = _run(cluster, batch, str(tmp_path / "run"), "--batch-arg=--max-running", "--batch-arg=0")
    assert rc == 1, log
    assert "prepack batch exited with status" in log and "--max-running" in log, log
    assert "shard " in log and "its stderr" in log, log


def test_no_binary_and_a_bad_input_line_are_named(cluster, batch, tmp_path):
    rc, log = _run(cluster, batch, str(tmp_path / "a"), prepack=str(tmp_path / "no-such-prepack"))
    assert rc == 2 and "no executable prepack at" in log, log
    bad = str(tmp_path / "bad.jsonl")
    with open(bad, "w") as f:
        f.write('{"id": 1, "prompt": "ok"}\n{"id": 2, "max_tokens": 3}\n')
    rc, log = _run(cluster, dict(batch, input=bad), str(tmp_path / "b"))
    assert rc == 1 and "prepack batch plan failed" in log and "line 2" in log, log


def test_timeout_cancels_the_shards_and_a_rerun_resumes(cluster, batch, tmp_path):
    # A prepack whose run of shard 1 never ends (shard 0, plan and merge
    # are the real ones).
    fake = str(tmp_path / "prepack-stuck-on-shard-1")
    with open(fake, "w") as f:
        f.write('#!/bin/sh\ncase "$*" in *out-001.jsonl*) exec "%s" -c "import time; time.sleep(600)" "$@";; esac\n'
                'exec "%s" "$@"\n' % (sys.executable, PREPACK))
    os.chmod(fake, 0o755)
    work = str(tmp_path / "run")
    t0 = time.monotonic()
    rc, text = _run(cluster, batch, work, "--timeout", "20", prepack=fake)
    assert rc == 3, text
    assert "--timeout 20 s passed; cancelled shard 1: 0 of" in text, text
    assert time.monotonic() - t0 < 60
    # The stuck process went with its cancelled worker.
    _wait_for("the cancelled shard's process ending",
              lambda: _prepack_of(os.path.join(work, "out", "out-001.jsonl")) is None, timeout=20)
    size0 = _manifest(work)["shards"][0]["requests"]
    assert _lines(os.path.join(work, "out", "out-000.jsonl")) == size0

    rc, text = _run(cluster, batch, work)
    assert rc == 0, text
    assert "reusing the plan" in text, text
    assert "shard 0 done" in text and "resumed after %d" % size0 in text, text
    _expect_the_single_run(batch, os.path.join(work, "merged.jsonl"))
    assert [a[1] for a in _attempts(work, 0)] == [0, size0]


def test_a_lost_node_reruns_its_shard_on_another(cluster, batch, tmp_path):
    work = str(tmp_path / "run")
    worker_node = next(iter(cluster.worker_nodes))
    proc, log, merged = _start(cluster, batch, work, "--max-running", "1")
    try:
        def shard_on_worker():
            for k in (0, 1):
                try:
                    if _attempts(work, k)[0][0] == worker_node.node_id[:12]:
                        return k
                except (OSError, IndexError):
                    pass
            return None

        k = _wait_for("the shard on the worker node", shard_on_worker)
        output = os.path.join(work, "out", "out-%03d.jsonl" % k)
        _wait_for("a first result of shard %d" % k, lambda: _lines(output) >= 1)
        pid = _wait_for("shard %d's prepack" % k, lambda: _prepack_of(output), timeout=10)
        os.kill(pid, signal.SIGSTOP)   # it writes nothing more before the node goes
        at_removal = _lines(output)
        cluster.remove_node(worker_node, allow_graceful=False)
        _wait_for("shard %d's prepack dying with its node" % k, lambda: _gone(pid), timeout=30)
        cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")
    finally:
        rc, text = _finish(proc, log)
    assert rc == 0, text
    manifest = _manifest(work)
    assert at_removal < manifest["shards"][k]["requests"], "the node went after shard %d had finished" % k
    _expect_the_single_run(batch, merged)
    _one_result_per_id(work, k, manifest)
    attempts = _attempts(work, k)
    assert len(attempts) == 2 and attempts[1][0] != worker_node.node_id[:12], attempts
    assert attempts[1][1] == at_removal, "the rerun did not resume: %s, %d lines at the removal" % (attempts, at_removal)


def test_an_unreachable_address_fails_within_the_connect_timeout(batch, tmp_path):
    t0 = time.monotonic()
    proc, log, _ = _start(None, batch, str(tmp_path / "run"), "--connect-timeout", "5", address="127.0.0.1:9")
    rc, text = _finish(proc, log, timeout=60)
    assert rc == 1, text
    assert "cannot connect to Ray at 127.0.0.1:9" in text, text
    assert time.monotonic() - t0 < 40
