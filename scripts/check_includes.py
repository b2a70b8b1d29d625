#!/usr/bin/env python3
"""Checks the source layout's include rules (docs/architecture.md):

  1. no include cycle between files anywhere in the tree;
  2. kernels/ includes nothing of core/;
  3. core/'s folders form layers: a folder includes only itself and the
     folders below it in LAYERS, so the engine can use the model but the
     model never the engine (and no cycle can form between folders);
  4. the three technique folders (prepacking, lazyllm, batchllm) include
     none of one another.

Usage: check_includes.py [ROOT]      exit 1 and one line per violation
       check_includes.py --selftest  plants each kind of violation in a
                                     temporary tree and fails unless every
                                     one is caught
"""
import os
import re
import sys
import tempfile

# Bottom to top. A folder may include the folders before it, never after.
LAYERS = ["base", "openai", "jinja", "grammar", "model", "chat", "kv", "step", "lazyllm", "forward", "prepacking",
          "request", "scheduler", "batchllm", "engine"]
TECHNIQUES = {"prepacking", "lazyllm", "batchllm"}
SOURCE_DIRS = ["core", "kernels", "capi", "cli", "service", "bindings", "tests", "fuzz"]
EXTENSIONS = (".h", ".cpp", ".cc", ".cu", ".cuh", ".c")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_graph(root):
    """file -> the repository files it includes (quoted includes that resolve)."""
    graph = {}
    for top in SOURCE_DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if not name.endswith(EXTENSIONS):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                deps = []
                for inc in INCLUDE.findall(text):
                    for cand in (inc, os.path.normpath(os.path.join(os.path.dirname(rel), inc))):
                        if os.path.isfile(os.path.join(root, cand)):
                            deps.append(cand)
                            break
                graph[rel] = deps
    return graph


def core_folder(path):
    parts = path.split(os.sep)
    if len(parts) >= 3 and parts[0] == "core":
        return parts[1]
    return None


def find_cycles(graph):
    """Every include cycle, each once, as a list of files."""
    cycles, state, stack = [], {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for dep in graph.get(node, []):
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 2

    sys.setrecursionlimit(10000)
    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


def violations(root):
    graph = read_graph(root)
    out = []
    for cycle in find_cycles(graph):
        out.append("include cycle: " + " -> ".join(cycle))
    for src, deps in sorted(graph.items()):
        for dep in deps:
            if src.startswith("kernels" + os.sep) and dep.startswith("core" + os.sep):
                out.append(f"{src}: kernels/ must not include core/ ({dep})")
            a, b = core_folder(src), core_folder(dep)
            if a is None or b is None or a == b:
                continue
            if a not in LAYERS:
                out.append(f"{src}: core/{a}/ is not a known layer (add it to LAYERS in {__file__})")
                continue
            if b not in LAYERS:
                out.append(f"{dep}: core/{b}/ is not a known layer")
                continue
            if a in TECHNIQUES and b in TECHNIQUES:
                out.append(f"{src}: technique folder core/{a}/ includes core/{b}/ ({dep})")
            elif LAYERS.index(b) > LAYERS.index(a):
                out.append(f"{src}: core/{a}/ includes core/{b}/, a layer above it ({dep})")
    return out


def selftest():
    cases = {
        "cycle": {"core/model/a.h": '#include "core/model/b.h"\n', "core/model/b.h": '#include "core/model/a.h"\n'},
        "kernels into core": {"kernels/cpu/k.h": '#include "core/base/status.h"\n', "core/base/status.h": ""},
        "upward layer": {"core/model/m.h": '#include "core/engine/e.h"\n', "core/engine/e.h": ""},
        "technique to technique": {"core/batchllm/t.h": '#include "core/lazyllm/l.h"\n', "core/lazyllm/l.h": ""},
        "unknown folder": {"core/misc/x.h": '#include "core/base/status.h"\n', "core/base/status.h": ""},
    }
    failed = 0
    for name, files in cases.items():
        with tempfile.TemporaryDirectory() as d:
            for rel, text in files.items():
                os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
                with open(os.path.join(d, rel), "w") as f:
                    f.write(text)
            found = violations(d)
            print(f"selftest {name}: {'caught' if found else 'MISSED'} {found[:1]}")
            failed += not found
    with tempfile.TemporaryDirectory() as d:   # a clean tree passes
        os.makedirs(os.path.join(d, "core", "engine"))
        os.makedirs(os.path.join(d, "core", "model"))
        open(os.path.join(d, "core", "model", "m.h"), "w").close()
        with open(os.path.join(d, "core", "engine", "e.h"), "w") as f:
            f.write('#include "core/model/m.h"\n')
        clean = violations(d)
        print(f"selftest clean tree: {'passes' if not clean else 'FLAGGED ' + str(clean)}")
        failed += bool(clean)
    return 1 if failed else 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--selftest":
        return selftest()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    found = violations(root)
    for v in found:
        print(v)
    print(f"{len(found)} include-rule violations in {os.path.abspath(root)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
