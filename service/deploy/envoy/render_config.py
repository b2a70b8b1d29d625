#!/usr/bin/env python3
"""Writes envoy-local.yaml with other addresses or another load balancer.

The checked-in config names fixed ports (replicas on 127.0.0.1:50051-50054,
Envoy on 50050, admin on 9901). A run whose replicas listen elsewhere (the
scale-out test starts them on port 0) renders it with their addresses:

  render_config.py --upstreams 127.0.0.1:41001,127.0.0.1:41002 \
      [--listen 127.0.0.1:0] [--admin 127.0.0.1:0] [--lb maglev|ring_hash|round_robin] \
      [--hash-balance-factor N] > envoy.yaml

--lb ring_hash swaps the file's Maglev for Envoy's RING_HASH (same header,
same load bound); --lb round_robin for round robin (the hash policy stays
and is ignored): the contrasts docs/benchmarks.md measures.
--hash-balance-factor changes the load bound of either hash (0: none).

--dns makes the upstreams DNS names that Envoy resolves itself (STRICT_DNS:
every address a name resolves to is a replica, re-resolved every 5 s);
--configmap NAME writes the config as a Kubernetes ConfigMap (key
envoy.yaml). The Kubernetes deployment's ConfigMap is this file rendered so
(service/deploy/kubernetes/envoy-configmap.yaml; ctest kubernetes_validate
checks that it matches):

  render_config.py --dns --upstreams prepackd-headless.default.svc.cluster.local:50051 \
      --listen 0.0.0.0:50050 --admin 0.0.0.0:9901 --configmap prepack-envoy

Needs PyYAML.
"""
import argparse
import copy
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))

# Envoy's ketama ring: 256 points per replica at 4 replicas.
RING_HASH = {
    "typed_extension_config": {
        "name": "envoy.load_balancing_policies.ring_hash",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash",
            "hash_function": "XX_HASH",
            "minimum_ring_size": 1024,
        },
    }
}

ROUND_ROBIN = {
    "typed_extension_config": {
        "name": "envoy.load_balancing_policies.round_robin",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin"
        },
    }
}


def socket_address(hostport):
    host, _, port = hostport.rpartition(":")
    return {"socket_address": {"address": host, "port_value": int(port)}}


def render(upstreams, listen=None, admin=None, lb="maglev", config=None, balance_factor=None, dns=False):
    """The config as a dict: the checked-in file with these addresses."""
    with open(config or os.path.join(HERE, "envoy-local.yaml")) as f:
        doc = yaml.safe_load(f)
    cluster = doc["static_resources"]["clusters"][0]
    cluster["load_assignment"]["endpoints"][0]["lb_endpoints"] = [
        {"endpoint": {"address": socket_address(u)}} for u in upstreams
    ]
    if dns:
        # Each name stands for every address it resolves to (a headless
        # Service's name: one per ready pod), looked up again every 5 s
        # (Envoy's default refresh) so replicas that come and go join and
        # leave the table.
        cluster["type"] = "STRICT_DNS"
        cluster["dns_lookup_family"] = "V4_PREFERRED"
    if listen:
        doc["static_resources"]["listeners"][0]["address"] = socket_address(listen)
    if admin:
        doc["admin"]["address"] = socket_address(admin)
    policies = cluster["load_balancing_policy"]["policies"]
    hashing = policies[0]["typed_extension_config"]["typed_config"].get("consistent_hashing_lb_config")
    if lb == "round_robin":
        policies[:] = [ROUND_ROBIN]
        return doc
    if lb == "ring_hash":
        # The same load bound as the file's hash.
        policies[:] = [copy.deepcopy(RING_HASH)]
        if hashing is not None:
            policies[0]["typed_extension_config"]["typed_config"]["consistent_hashing_lb_config"] = hashing
    elif lb != "maglev":
        raise ValueError("lb: maglev, ring_hash or round_robin, not %r" % lb)
    config = policies[0]["typed_extension_config"]["typed_config"]
    if balance_factor == 0:
        config.pop("consistent_hashing_lb_config", None)
    elif balance_factor is not None:
        config["consistent_hashing_lb_config"] = {"hash_balance_factor": balance_factor}
    return doc


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--upstreams", required=True, help="HOST:PORT,... of the prepackd replicas")
    p.add_argument("--listen", help="HOST:PORT Envoy listens on for gRPC clients (0: any free port)")
    p.add_argument("--admin", help="HOST:PORT of Envoy's admin interface")
    p.add_argument("--lb", default="maglev", choices=["maglev", "ring_hash", "round_robin"])
    p.add_argument("--hash-balance-factor", type=int, help="the hash's load bound in percent of the mean (0: none)")
    p.add_argument("--config", help="the config to start from (default: envoy-local.yaml beside this script)")
    p.add_argument("--dns", action="store_true", help="upstreams are DNS names Envoy resolves (STRICT_DNS)")
    p.add_argument("--configmap", metavar="NAME", help="write a Kubernetes ConfigMap NAME holding the config as envoy.yaml")
    a = p.parse_args()
    doc = render(a.upstreams.split(","), a.listen, a.admin, a.lb, a.config, a.hash_balance_factor, a.dns)
    if a.configmap:
        sys.stdout.write(configmap(a.configmap, yaml.safe_dump(doc, sort_keys=False, width=1000), " ".join(sys.argv[1:])))
    else:
        yaml.safe_dump(doc, sys.stdout, sort_keys=False)


class _Literal(str):
    pass


yaml.SafeDumper.add_representer(
    _Literal, lambda dumper, s: dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|"))


def configmap(name, envoy_yaml, args):
    """A ConfigMap manifest with envoy_yaml as its key envoy.yaml (a literal block)."""
    manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "prepack-envoy"}},
        "data": {"envoy.yaml": _Literal(envoy_yaml)},
    }
    header = (
        "# Generated from service/deploy/envoy/envoy-local.yaml (the local setup's\n"
        "# config; its comments explain every part) by\n"
        "#   service/deploy/envoy/render_config.py %s\n"
        "# Do not edit: change envoy-local.yaml or render_config.py and render again.\n"
        "# ctest kubernetes_validate fails when this file differs from a fresh\n"
        "# render, and runs `envoy --mode validate` on its envoy.yaml.\n" % args
    )
    return header + yaml.safe_dump(manifest, sort_keys=False, width=1000)


if __name__ == "__main__":
    main()
