"""Processes of a one-machine scale-out: prepackd replicas, Envoy, and
SGLang's router (smg).

Everything listens on 127.0.0.1 port 0 and reports the port it got, so runs
never collide with each other or with other tests:
  - prepackd prints "prepackd listening on HOST:PORT" as its first stdout
    line, and with HTTP on "prepackd http listening on HOST:PORT" second;
  - Envoy gets the checked-in config (service/deploy/envoy/envoy-local.yaml)
    rendered with the replicas' addresses, writes its admin address to a
    file (--admin-address-path), and its admin interface names the listener's
    port (/listeners) and each replica's health (/clusters);
  - smg takes no port 0, so it gets ports the kernel just handed out and
    gave back (another process could take one in between: the scale-out
    tests run alone, and a port smg cannot bind ends it with its log);
    its /workers names each replica's state.
Every process is killed at the end of its cluster, and with the test if the
test dies first (a ctest timeout): it gets SIGKILL when its parent goes
(PR_SET_PDEATHSIG, as the Go client's tests start prepackd; _popen).
"""
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "service", "deploy", "envoy"))
import render_config  # noqa: E402


def _die_with_parent():
    """preexec_fn: SIGKILL this child when the process that started it ends."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


_SETPRIV = shutil.which("setpriv")


def _popen(cmd, **kw):
    """subprocess.Popen of a child that gets SIGKILL when this process ends.
    With util-linux's setpriv the child sets that itself before it execs
    cmd, and Python starts it without a preexec_fn, by vfork: no fork
    handlers run. A preexec_fn forces a plain fork, whose handlers restart
    the gRPC core's poller threads (the workload's gRPC client lives in
    this process) in the child, where close_fds then closes their epoll
    descriptor: the child aborted ("epoll_wait error: Bad file
    descriptor") before exec now and then, once a channel had been used."""
    if _SETPRIV:
        return subprocess.Popen([_SETPRIV, "--pdeathsig", "KILL", "--", *cmd], **kw)
    return subprocess.Popen(cmd, preexec_fn=_die_with_parent, **kw)


def _terminate(proc):
    """SIGTERM, SIGKILL after 5 s; reaped either way (the proxies)."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def _wait(what, cond, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError("%s: not within %.0f s" % (what, timeout))


class Replica:
    """One prepackd on 127.0.0.1:0 (stderr, its request log, to a file).
    addr: its gRPC address; http: its HTTP API's (with http=True), else None."""

    def __init__(self, prepackd, model, workdir, name, extra=(), http=False):
        self.name = name
        self._out = os.path.join(workdir, name + ".stdout")
        self.log = os.path.join(workdir, name + ".log")
        # Idle OpenMP threads sleep instead of spinning: four replicas and
        # Envoy share a few cores.
        env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
        with open(self._out, "wb") as out, open(self.log, "wb") as err:
            self.proc = _popen(
                [prepackd, "--model", model, "--listen", "127.0.0.1:0",
                 "--http-listen", "127.0.0.1:0" if http else "off", "--threads", "1", *extra],
                stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env)
        self.addr = _wait(name + " port", lambda: self._port(0, "prepackd listening on "), 60)
        self.http = _wait(name + " http port", lambda: self._port(1, "prepackd http listening on "), 60) if http else None

    def _port(self, index, prefix):
        if self.proc.poll() is not None:
            raise RuntimeError("%s exited %s: %s" % (self.name, self.proc.returncode, open(self.log).read()[-2000:]))
        with open(self._out) as f:
            lines = f.readlines()
        line = lines[index] if len(lines) > index else ""
        return line[len(prefix):].strip() if line.startswith(prefix) and line.endswith("\n") else None

    def signal(self, sig):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def stop(self):
        self.signal(signal.SIGKILL)
        self.proc.wait()


class Envoy:
    """Envoy in front of the replicas, its config rendered from the
    checked-in one (lb: "maglev" as checked in, "ring_hash" or
    "round_robin"; balance_factor: the hash's load bound, None as checked
    in, 0 none). Its access log (stdout) and its own log go to files beside
    the replicas' logs."""

    def __init__(self, envoy, upstreams, lb, workdir, name="envoy", balance_factor=None):
        cfg = os.path.join(workdir, name + ".yaml")
        with open(cfg, "w") as f:
            yaml.safe_dump(render_config.render(upstreams, "127.0.0.1:0", "127.0.0.1:0", lb,
                                                balance_factor=balance_factor), f)
        admin_file = os.path.join(workdir, name + ".admin")
        self.access_log = os.path.join(workdir, name + ".access")
        self.log = os.path.join(workdir, name + ".log")
        with open(self.access_log, "wb") as out, open(self.log, "wb") as err:
            # One worker thread (a 2-core machine runs 4 replicas beside it);
            # no hot restart, so several Envoys need no distinct --base-id.
            self.proc = _popen(
                [envoy, "-c", cfg, "--concurrency", "1", "--disable-hot-restart",
                 "--admin-address-path", admin_file, "--log-level", "warn"],
                stdout=out, stderr=err, stdin=subprocess.DEVNULL)

        def admin_addr():
            if self.proc.poll() is not None:
                raise RuntimeError("envoy exited %s: %s" % (self.proc.returncode, open(self.log).read()[-3000:]))
            if os.path.exists(admin_file):
                return open(admin_file).read().strip() or None
            return None

        self.admin = _wait("envoy admin address", admin_addr, 60)
        listeners = json.loads(self.get("/listeners?format=json"))
        sa = listeners["listener_statuses"][0]["local_address"]["socket_address"]
        self.addr = "%s:%d" % (sa["address"], sa["port_value"])
        self.wait_healthy(set(upstreams))

    def get(self, path):
        with urllib.request.urlopen("http://%s%s" % (self.admin, path), timeout=5) as r:
            return r.read().decode()

    def health(self):
        """{upstream "HOST:PORT": health flags}, "healthy" when in service."""
        flags = {}
        for line in self.get("/clusters").splitlines():
            parts = line.split("::")
            if len(parts) == 4 and parts[0] == "prepackd" and parts[2] == "health_flags":
                flags[parts[1]] = parts[3]
        return flags

    def wait_healthy(self, hosts, timeout=30):
        """Until exactly `hosts` pass the gRPC health check."""
        def ok():
            h = self.health()
            return {a for a, f in h.items() if f == "healthy"} == set(hosts)
        _wait("envoy health %s" % sorted(hosts), ok, timeout)

    def counter(self, name):
        text = self.get("/stats?filter=^%s$" % name.replace(".", "\\."))
        for line in text.splitlines():
            k, _, v = line.partition(": ")
            if k == name:
                return int(v)
        return 0

    def stop(self):
        # SIGTERM first: Envoy then flushes its access log to the file.
        _terminate(self.proc)


def _free_port():
    """A port the kernel just handed out on 127.0.0.1, given back."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Smg:
    """SGLang's router (PyPI smg, the Shepherd Model Gateway) in front of the
    replicas' HTTP APIs, `smg launch --worker-urls ... --policy POLICY` as
    docs/scale-out.md's "Replicas behind SGLang's router" runs it, with health checks,
    load polls every second (the defaults are 60 s and 10 s: a test run is
    shorter) and a worker taken out after one failed check. Its log goes to
    a file beside the replicas'. addr: where clients send."""

    def __init__(self, smg, worker_urls, policy, workdir, name="smg", extra=()):
        self.urls = list(worker_urls)
        port, metrics_port = _free_port(), _free_port()
        self.addr = "127.0.0.1:%d" % port
        self._metrics = "127.0.0.1:%d" % metrics_port
        self.log = os.path.join(workdir, name + ".log")
        with open(self.log, "wb") as out:
            self.proc = _popen(
                [smg, "launch", "--host", "127.0.0.1", "--port", str(port), "--worker-urls", *self.urls,
                 "--policy", policy, "--prometheus-host", "127.0.0.1", "--prometheus-port", str(metrics_port),
                 "--health-check-interval-secs", "1", "--health-failure-threshold", "1",
                 "--health-success-threshold", "1", "--load-monitor-interval", "1",
                 "--shutdown-grace-period-secs", "1", "--log-level", "warn", *extra],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=dict(os.environ, NO_COLOR="1"))
        self.wait_ready(self.urls, 60)

    def _get(self, addr, path):
        with urllib.request.urlopen("http://%s%s" % (addr, path), timeout=5) as r:
            return r.read().decode()

    def listing(self):
        """smg's GET /workers: each worker's URL, status, the labels it
        discovered and the load it last polled."""
        if self.proc.poll() is not None:
            raise RuntimeError("smg exited %s: %s" % (self.proc.returncode, open(self.log).read()[-3000:]))
        return json.loads(self._get(self.addr, "/workers"))["workers"]

    def workers(self):
        """{worker URL: its status ("ready", "not_ready", ...)}."""
        try:
            listing = self.listing()
        except OSError:
            return {}
        return {w["url"]: w["status"] if w.get("is_healthy") else "unhealthy" for w in listing}

    def wait_ready(self, urls, timeout=30):
        """Until exactly `urls` are ready (registered, healthy) in smg."""
        _wait("smg workers ready %s" % sorted(urls),
              lambda: {u for u, st in self.workers().items() if st == "ready"} == set(urls), timeout)

    def counter(self, name):
        """The sum of a Prometheus series of smg's over all its labels."""
        total = 0.0
        for line in self._get(self._metrics, "/metrics").splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def stop(self):
        _terminate(self.proc)
