#!/usr/bin/env python3
"""A sharded offline batch on Ray (docs/scale-out.md: "A sharded batch on Ray").

    python3 prepack_ray_batch.py --prepack /usr/local/bin/prepack --model M.gguf \\
        --input requests.jsonl --output results.jsonl --work-dir /shared/run1 \\
        [--address HEAD:6379] [--shards N] [--threads T] [--policy batchllm]

Three steps, the same as the Kubernetes Indexed Job's:
  1. here, in the driver: `prepack batch plan --shards N` splits the input by
     shared prefix into WORK/plan/shard-NNN.jsonl and WORK/plan/manifest.json
     (N: --shards, else one per alive Ray node that has the CPUs a shard asks);
  2. one Ray task per non-empty shard, each pinned to a node of its own while
     there are as many nodes as shards (soft node affinity: a shard whose node
     dies runs elsewhere), else spread (SPREAD): the task runs
     `prepack batch --input WORK/plan/shard-K.jsonl --output WORK/out/out-K.jsonl`
     on its node, appending each result as it ends, and returns the file;
  3. here: `prepack batch merge` writes --output, exactly one result per input
     line, in input order.

What every node needs: the prepack binary at --prepack and the model at
--model (the same paths as on the driver's machine), and --work-dir. The
shard's input travels with its task and its results come back as the task's
return value, so a work dir local to each node works; put it on a shared
filesystem (NFS, CephFS...) so that a shard retried on another node resumes
from what the lost node had written instead of starting over.

A worker or node that dies is retried by Ray (--max-retries, system
failures; the prepack process dies with its worker: PR_SET_PDEATHSIG); a
prepack killed on its own (OOM killer) raises and is retried the same way.
The retry runs the same command on the same output file, and `prepack batch`
skips the ids already answered there, so the lines written before the
failure are not computed again (only the requests in flight are). A lock
file beside each output keeps two attempts from ever writing it at once. A
shard that fails on its own (prepack's error, a missing model) is not
retried: its stderr's tail is printed. Rerunning the driver with the same
--work-dir resumes every shard (the plan is kept when the input, model and
shard count are the same).

Progress goes to stderr (shards done, lines written as seen in --work-dir).
Exit status: 0 done; 1 a shard, the plan, the merge or connecting to Ray
(--connect-timeout) failed; 2 bad arguments (no prepack binary, no input,
a --work-dir holding another plan's outputs); 3 --timeout passed (the
shards are cancelled; their outputs stay for a rerun).
Depends on `ray` (PyPI) and the standard library only.
"""
import argparse
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

PROG = "prepack-ray-batch"
TAIL_LINES = 20


def log(message):
    print("%s: %s" % (PROG, message), file=sys.stderr, flush=True)


class Failure(Exception):
    """A failure reported to the user with exit status `code`."""

    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


class ShardInterrupted(Exception):
    """prepack was killed by a signal: Ray retries the task (retry_exceptions)."""


# ---------------------------------------------------------------------------
# On the nodes: one shard.


def _tail(path, offset, lines=TAIL_LINES):
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip("\n").split("\n")[-lines:])


def _result_ids(path):
    """The ids answered in a `prepack batch` output (a line cut short by a
    kill is no result, as prepack itself reads it), and the number of result
    lines."""
    ids, count = set(), 0
    try:
        with open(path, "rb") as f:
            for line in f:
                try:
                    j = json.loads(line)
                except ValueError:
                    continue
                if isinstance(j, dict) and "id" in j:
                    ids.add(_id_key(j["id"]))
                    count += 1
    except FileNotFoundError:
        pass
    return ids, count


def _id_key(value):
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _write_if_different(path, data):
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return
    except FileNotFoundError:
        pass
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _lock(path, deadline):
    """An exclusive flock on `path`, waited for until `deadline` (time.time()):
    an earlier attempt's prepack that outlived its worker still holds it."""
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.time() > deadline:
                os.close(fd)
                return None
            time.sleep(0.2)


def run_shard(spec):
    """Runs `prepack batch` on one shard (a Ray task). Returns a dict: ok,
    and the output file's bytes, or the error and stderr's tail. Raises
    ShardInterrupted when prepack was killed by a signal (retried)."""
    import ctypes

    k = spec["shard"]
    started = time.time()
    try:
        import ray

        node = ray.get_runtime_context().get_node_id()
    except Exception:  # run outside Ray (tests of this function)
        node = "local"
    where = "shard %d on %s (node %s)" % (k, socket.gethostname(), node[:12])

    def fail(message, tail=""):
        return {"ok": False, "shard": k, "node": node, "error": "%s: %s" % (where, message), "stderr_tail": tail}

    prepack, model = spec["prepack"], spec["model"]
    if not (os.path.isfile(prepack) and os.access(prepack, os.X_OK)):
        return fail("no executable prepack at %s" % prepack)
    if not model.startswith("synthetic:") and not os.path.isfile(model):
        return fail("no model file at %s" % model)
    plan_dir = os.path.join(spec["work_dir"], "plan")
    out_dir = os.path.join(spec["work_dir"], "out")
    try:
        os.makedirs(plan_dir, exist_ok=True)
        os.makedirs(out_dir, exist_ok=True)
        shard_input = os.path.join(plan_dir, spec["file"])
        _write_if_different(shard_input, spec["input"])
    except OSError as e:
        return fail("cannot write in --work-dir: %s" % e)
    output = os.path.join(out_dir, "out-%03d.jsonl" % k)
    log_path = os.path.join(out_dir, "out-%03d.log" % k)

    lock_fd = _lock(output + ".lock", spec["deadline"])
    if lock_fd is None:
        return fail("another attempt still holds %s.lock" % output)
    try:
        done_before, _ = _result_ids(output)
        with open(log_path, "ab") as lf:
            offset = lf.tell()
            lf.write(("=== attempt on %s, pid %d, %s: %d of %d results already in %s\n" % (
                where, os.getpid(), time.strftime("%Y-%m-%d %H:%M:%S"), len(done_before & set(spec["ids"])),
                len(spec["ids"]), output)).encode())
            lf.flush()
            cmd = [prepack, "batch", "--model", model, "--input", shard_input, "--output", output,
                   *spec["batch_args"]]
            env = dict(os.environ, **spec["env"])
            # The prepack process dies with this worker (SIGKILL when its
            # parent goes), so a retry never runs beside an orphan.
            prctl = ctypes.CDLL(None, use_errno=True).prctl
            parent = os.getpid()

            def die_with_parent():
                prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
                if os.getppid() != parent:
                    os._exit(1)

            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=lf, stderr=lf, env=env,
                                    preexec_fn=die_with_parent, pass_fds=(lock_fd,))
            rc = proc.wait()
        tail = _tail(log_path, offset)
        if rc < 0:
            raise ShardInterrupted("%s: prepack killed by signal %d; retried, resuming from %s\n%s" % (
                where, -rc, output, tail))
        done, lines = _result_ids(output)
        missing = set(spec["ids"]) - done
        if rc not in (0, 1) or missing:
            return fail("prepack batch exited with status %d, %d of %d results in %s" % (
                rc, len(spec["ids"]) - len(missing), len(spec["ids"]), output), tail)
        with open(output, "rb") as f:
            data = f.read()
        # Status 1 with every id answered: some requests ended with an
        # "error" result, which merge keeps at their lines.
        return {"ok": True, "shard": k, "node": node, "host": socket.gethostname(), "output": data,
                "results": lines, "resumed_from": len(done_before & set(spec["ids"])),
                "seconds": time.time() - started, "with_error": rc == 1}
    finally:
        os.close(lock_fd)


# ---------------------------------------------------------------------------
# The driver.


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog=PROG, description="Run a `prepack batch` input sharded by prefix over a Ray cluster, then merge.",
        epilog="Batch options not listed here: --batch-arg=--kv-budget --batch-arg=1000000000 (each word once).")
    p.add_argument("--prepack", default="prepack", help="the prepack binary, the same path on every node (default: prepack on PATH)")
    p.add_argument("--model", required=True, help="GGUF file (the same path on every node) or synthetic:NAME")
    p.add_argument("--input", required=True, help="requests, one JSON object per line (as for `prepack batch`)")
    p.add_argument("--output", required=True, help="the merged results, one per input line in input order")
    p.add_argument("--work-dir", required=True,
                   help="plan and per-shard outputs (WORK/plan, WORK/out); shared by all nodes so a shard retried "
                        "elsewhere resumes; rerun with the same one to resume")
    p.add_argument("--address", default=None,
                   help="Ray cluster to join (HOST:PORT); default: RAY_ADDRESS, else the cluster `ray start` started on "
                        "this machine, else a new local Ray (one node)")
    p.add_argument("--shards", type=int, default=0, help="number of shards (default: the alive Ray nodes)")
    p.add_argument("--threads", type=int, default=0,
                   help="prepack --threads per shard, also the CPUs each shard's task asks of Ray (0: all the "
                        "node's CPUs for prepack, 1 CPU for Ray)")
    p.add_argument("--policy", default=None, help="prepack batch --policy (default: batchllm)")
    p.add_argument("--max-running", type=int, default=None, help="prepack batch --max-running")
    p.add_argument("--max-batch-tokens", type=int, default=None, help="prepack batch --max-batch-tokens")
    p.add_argument("--kv-block", type=int, default=None, help="KV block size, for both the plan and the batch")
    p.add_argument("--batch-arg", action="append", default=[], metavar="ARG",
                   help="one more word for every `prepack batch` (repeat)")
    p.add_argument("--max-retries", type=int, default=3, help="Ray retries of a shard whose worker, node or prepack died")
    p.add_argument("--timeout", type=float, default=24 * 3600, help="seconds for the whole run (default 86400)")
    p.add_argument("--connect-timeout", type=float, default=120, help="seconds to connect to (or start) Ray")
    a = p.parse_args(argv)
    if a.shards < 0 or a.threads < 0 or a.max_retries < 0 or a.timeout <= 0 or a.connect_timeout <= 0:
        p.error("--shards, --threads and --max-retries must be >= 0, --timeout and --connect-timeout > 0")
    return a


def _watchdog(seconds, message, code):
    """Ends the driver with `message` after `seconds` unless cancelled: a Ray
    call that blocks (an unreachable --address) never hangs the run."""
    def fire():
        log("error: " + message)
        os._exit(code)

    t = threading.Timer(max(0.0, seconds), fire)
    t.daemon = True
    t.start()
    return t


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _run(cmd, what, deadline):
    """Runs a local prepack command; raises Failure with its stderr on error."""
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        raise Failure("%s: not done within --timeout" % what, code=3)
    if r.returncode != 0:
        raise Failure("%s failed (status %d):\n%s" % (what, r.returncode, r.stderr.strip()[-4000:]))
    return r


def plan(args, shards, deadline):
    """The manifest of WORK/plan: kept when it plans this input, model and
    shard count (a rerun resumes), else made again."""
    plan_dir = os.path.join(args.work_dir, "plan")
    out_dir = os.path.join(args.work_dir, "out")
    manifest_path = os.path.join(plan_dir, "manifest.json")
    sha = _sha256(args.input)
    try:
        with open(manifest_path) as f:
            old = json.load(f)
    except (OSError, ValueError):
        old = None
    if old and old.get("input_sha256") == sha and old.get("model") == args.model and len(old.get("shards", [])) == shards:
        log("reusing the plan in %s (same input, model and shards): shards resume" % plan_dir)
        return old
    outputs = [n for n in (os.listdir(out_dir) if os.path.isdir(out_dir) else []) if n.endswith(".jsonl")]
    if old and outputs:
        raise Failure("--work-dir %s holds outputs of another plan (another input, model or shard count); "
                      "use a new --work-dir or empty it" % args.work_dir, code=2)
    cmd = [args.prepack, "batch", "plan", "--model", args.model, "--input", args.input,
           "--shards", str(shards), "--out-dir", plan_dir, "--json"]
    if args.kv_block:
        cmd += ["--kv-block", str(args.kv_block)]
    t0 = time.monotonic()
    _run(cmd, "prepack batch plan", deadline)
    with open(manifest_path) as f:
        manifest = json.load(f)
    t = manifest["totals"]
    log("planned %d requests into %d shards in %.1f s (%s): prompt tokens computed %.3fx one machine's, "
        "work max/mean %.3f" % (manifest["requests"], shards, time.monotonic() - t0, plan_dir,
                                t["vs_single_machine"], t["work_max_over_mean"]))
    return manifest


def _count_lines(path):
    try:
        with open(path, "rb") as f:
            return sum(1 for line in f if line.endswith(b"\n"))
    except OSError:
        return 0


def main(argv=None):
    args = parse_args(argv)
    deadline = time.monotonic() + args.timeout
    t_start = time.monotonic()
    prepack = args.prepack
    if os.sep not in prepack:
        import shutil

        prepack = shutil.which(prepack) or prepack
    args.prepack = os.path.abspath(prepack)
    if not (os.path.isfile(args.prepack) and os.access(args.prepack, os.X_OK)):
        raise Failure("no executable prepack at %s (--prepack)" % args.prepack, code=2)
    if not os.path.isfile(args.input):
        raise Failure("cannot read --input %s" % args.input, code=2)
    if not args.model.startswith("synthetic:"):
        if not os.path.isfile(args.model):
            raise Failure("no model file at %s (--model)" % args.model, code=2)
        args.model = os.path.abspath(args.model)
    args.input = os.path.abspath(args.input)
    args.output = os.path.abspath(args.output)
    args.work_dir = os.path.abspath(args.work_dir)
    try:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    except ImportError:
        raise Failure("cannot import ray: pip install ray", code=2)

    cpus = args.threads if args.threads > 0 else 1
    # Past --timeout the loop below cancels the shards and exits 3; this is
    # the backstop for a Ray call that never returns.
    _watchdog(args.timeout + 60, "not finished 60 s past --timeout (%.0f s); exiting" % args.timeout, 3)
    where = " at " + args.address if args.address else ""
    log("connecting to Ray%s" % where)
    connecting = _watchdog(min(args.connect_timeout, deadline - time.monotonic()),
                           "cannot connect to Ray%s within %.0f s (--connect-timeout)" % (where, args.connect_timeout), 1)
    try:
        ray.init(address=args.address, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    except Exception as e:
        raise Failure("cannot connect to Ray%s: %s" % (where, str(e).strip().split("\n")[0]))
    finally:
        connecting.cancel()
    pending = {}
    try:
        nodes = sorted((n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) >= cpus),
                       key=lambda n: (n["NodeManagerAddress"], n["NodeID"]))
        if not nodes:
            raise Failure("no alive Ray node has %d CPU%s for a shard (--threads)" % (cpus, "" if cpus == 1 else "s"))
        shards = args.shards or len(nodes)
        log("%d Ray node%s with %d+ CPUs; %d shard%s" % (len(nodes), "" if len(nodes) == 1 else "s", cpus,
                                                          shards, "" if shards == 1 else "s"))
        os.makedirs(args.work_dir, exist_ok=True)
        manifest = plan(args, shards, deadline)

        batch_args = ["--threads", str(args.threads)]
        for flag, value in (("--policy", args.policy), ("--max-running", args.max_running),
                            ("--max-batch-tokens", args.max_batch_tokens), ("--kv-block", args.kv_block)):
            if value is not None:
                batch_args += [flag, str(value)]
        batch_args += args.batch_arg
        env = {k: os.environ[k] for k in ("OMP_WAIT_POLICY", "PREPACK_CPU") if k in os.environ}
        task = ray.remote(run_shard)
        plan_dir = os.path.join(args.work_dir, "plan")
        out_dir = os.path.join(args.work_dir, "out")
        total = manifest["requests"]
        sizes = {}
        for k, s in enumerate(manifest["shards"]):
            if not s["requests"]:
                continue
            with open(os.path.join(plan_dir, s["file"]), "rb") as f:
                shard_input = f.read()
            spec = {"shard": k, "file": s["file"], "input": shard_input, "ids": [_id_key(i) for i in s["ids"]],
                    "prepack": args.prepack, "model": args.model, "work_dir": args.work_dir,
                    "batch_args": batch_args, "env": env,
                    "deadline": time.time() + (deadline - time.monotonic())}
            # One node per shard while there are enough: soft, so a shard
            # whose node is gone runs on another.
            strategy = (NodeAffinitySchedulingStrategy(nodes[k]["NodeID"], soft=True) if shards <= len(nodes)
                        else "SPREAD")
            ref = task.options(num_cpus=cpus, max_retries=args.max_retries, retry_exceptions=True,
                               scheduling_strategy=strategy, name="prepack-shard-%03d" % k).remote(spec)
            pending[ref] = k
            sizes[k] = s["requests"]
        log("started %d shard task%s (%d requests)" % (len(pending), "" if len(pending) == 1 else "s", total))

        results = {}
        last_report, last_line = 0.0, None
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                unfinished = sorted(pending.values())
                for ref in pending:
                    ray.cancel(ref, force=True)
                lines = ", ".join("shard %d: %d of %d lines" % (
                    k, _count_lines(os.path.join(out_dir, "out-%03d.jsonl" % k)), sizes[k]) for k in unfinished)
                pending = {}
                raise Failure("--timeout %.0f s passed; cancelled %s; rerun with the same --work-dir to resume"
                              % (args.timeout, lines), code=3)
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=min(1.0, left))
            for ref in ready:
                k = pending.pop(ref)
                try:
                    r = ray.get(ref)
                except Exception as e:  # retries used up: a worker, node or prepack died each time
                    e = getattr(e, "cause", None) or e
                    tail = _tail(os.path.join(out_dir, "out-%03d.log" % k), 0)
                    raise Failure("shard %d (%s) failed after %d retr%s: %s%s" % (
                        k, os.path.join(plan_dir, manifest["shards"][k]["file"]), args.max_retries,
                        "y" if args.max_retries == 1 else "ies", str(e).strip().split("\n")[0][:500],
                        "\nits stderr (%s), last lines:\n%s" % (os.path.join(out_dir, "out-%03d.log" % k), tail)
                        if tail else ""))
                if not r["ok"]:
                    raise Failure("%s\nits stderr, last lines:\n%s" % (r["error"], r["stderr_tail"]))
                _write_if_different(os.path.join(out_dir, "out-%03d.jsonl" % k), r["output"])
                results[k] = r
                log("shard %d done on %s in %.1f s: %d results%s%s" % (
                    k, r["host"] + " " + r["node"][:12], r["seconds"], r["results"],
                    ", resumed after %d" % r["resumed_from"] if r["resumed_from"] else "",
                    ", some with an \"error\"" if r["with_error"] else ""))
            now = time.monotonic()
            if now - last_report >= 5.0 or ready:
                written = sum(results[k]["results"] if k in results else
                              _count_lines(os.path.join(out_dir, "out-%03d.jsonl" % k)) for k in sizes)
                line = "shards done %d/%d, lines written %d/%d" % (len(results), len(sizes), min(written, total), total)
                if line != last_line or now - last_report >= 30.0:
                    log(line + ", %.0f s" % (now - t_start))
                    last_line, last_report = line, now

        outputs = [os.path.join(out_dir, "out-%03d.jsonl" % k) for k in sorted(sizes)]
        cmd = [args.prepack, "batch", "merge", "--manifest", os.path.join(plan_dir, "manifest.json"),
               "--output", args.output, "--json", "--outputs", *outputs]
        r = _run(cmd, "prepack batch merge", deadline)
        summary = json.loads(r.stdout)
        log("merged %d results into %s (%d with an \"error\") in %.1f s" % (
            summary["results"], args.output, summary["with_error"], time.monotonic() - t_start))
        return 0
    finally:
        for ref in pending:
            try:
                ray.cancel(ref, force=True)
            except Exception:
                pass
        ray.shutdown()


def _terminate(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _terminate)
    try:
        sys.exit(main())
    except Failure as f:
        log("error: %s" % f)
        sys.exit(f.code)
    except KeyboardInterrupt:
        log("interrupted; the shards' outputs stay in --work-dir for a rerun")
        sys.exit(130)
