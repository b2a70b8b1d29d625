"""Processes of a one-machine scale-out: prepackd replicas and Envoy.

Everything listens on 127.0.0.1 port 0 and reports the port it got, so runs
never collide with each other or with other tests:
  - prepackd prints "prepackd listening on HOST:PORT" as its first stdout line;
  - Envoy gets the checked-in config (service/deploy/envoy/envoy-local.yaml)
    rendered with the replicas' addresses, writes its admin address to a
    file (--admin-address-path), and its admin interface names the listener's
    port (/listeners) and each replica's health (/clusters).
Every process is killed at the end of its cluster, and with the test if the
test dies first (a ctest timeout): it gets SIGKILL when its parent goes
(PR_SET_PDEATHSIG, as the Go client's tests start prepackd).
"""
import ctypes
import json
import os
import signal
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


def _wait(what, cond, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError("%s: not within %.0f s" % (what, timeout))


class Replica:
    """One prepackd on 127.0.0.1:0 (stderr, its request log, to a file)."""

    def __init__(self, prepackd, model, workdir, name, extra=()):
        self.name = name
        self._out = os.path.join(workdir, name + ".stdout")
        self.log = os.path.join(workdir, name + ".log")
        # Idle OpenMP threads sleep instead of spinning: four replicas and
        # Envoy share a few cores.
        env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
        with open(self._out, "wb") as out, open(self.log, "wb") as err:
            self.proc = subprocess.Popen(
                [prepackd, "--model", model, "--listen", "127.0.0.1:0", "--http-listen", "off",
                 "--threads", "1", *extra],
                stdout=out, stderr=err, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent, env=env)
        self.addr = _wait(name + " port", self._port, 60)

    def _port(self):
        if self.proc.poll() is not None:
            raise RuntimeError("%s exited %s: %s" % (self.name, self.proc.returncode, open(self.log).read()[-2000:]))
        with open(self._out) as f:
            line = f.readline()
        prefix = "prepackd listening on "
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
            self.proc = subprocess.Popen(
                [envoy, "-c", cfg, "--concurrency", "1", "--disable-hot-restart",
                 "--admin-address-path", admin_file, "--log-level", "warn"],
                stdout=out, stderr=err, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)

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
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
