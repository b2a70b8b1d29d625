#!/usr/bin/env python3
"""Runs the README's fast commands as a newcomer would copy them.

A fenced block is runnable when the line before it (blank lines aside) is
an HTML comment `<!-- run: fast ... -->`. Words after `fast`:
  server   the block calls a prepackd, started here on free ports
           (127.0.0.1:8080 and :50051 in the text become those ports);
  needs X  skipped with a message when program X is not on PATH.
`<!-- run: slow ... -->` marks blocks that are correct but too long for
this test (set-up, full builds); they are listed, not run.

Each block must exit 0 within its timeout and print the answer the README
promises next to it: any block whose text asks the capital of France must
print "Paris" (the README says the model answers it). Exit 77 (ctest's
"skipped") when the chat model is absent.

  docs_commands_test.py REPO_ROOT PREPACK PREPACKD [PYTHON]
PYTHON is an interpreter with the `openai` package for python blocks
(absent: those blocks are skipped with a message). PREPACK_CHAT_MODEL in
the environment: where the chat model is, if not in build/models.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

SKIP = 77
BLOCK_TIMEOUT_S = 120      # one block: a short greedy answer of a 135M model
SERVER_START_TIMEOUT_S = 60
CHAT_MODEL = "build/models/SmolLM2-135M-Instruct.Q4_1.gguf"

MARKER = re.compile(r"^<!--\s*run:\s*(fast|slow)\b([^>]*)-->\s*$")
FENCE = re.compile(r"^```(\w*)\s*$")


def runnable_blocks(markdown):
    """Yields (line number, kind, words, language, code) for marked blocks."""
    lines = markdown.split("\n")
    pending = None
    i = 0
    while i < len(lines):
        line = lines[i]
        marker = MARKER.match(line.strip())
        if marker:
            pending = (marker.group(1), marker.group(2).replace(",", " ").split())
            i += 1
            continue
        fence = FENCE.match(line)
        if fence:
            start = i
            i += 1
            body = []
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            if pending:
                kind, words = pending
                yield start + 1, kind, words, fence.group(1), "\n".join(body) + "\n"
            pending = None
        elif line.strip():
            pending = None   # a marker applies to the very next block only
        i += 1


class Server:
    """A prepackd on free ports; the ports it prints on stdout."""

    def __init__(self, prepackd, model):
        env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
        self.proc = subprocess.Popen(
            [prepackd, "--model", model, "--listen", "127.0.0.1:0",
             "--http-listen", "127.0.0.1:0", "--threads", "2"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        self.grpc_port = self.http_port = None
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while self.http_port is None:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise RuntimeError("prepackd did not report its ports")
            line = self.proc.stdout.readline()
            found = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if found and "http" in line:
                self.http_port = found.group(1)
            elif found:
                self.grpc_port = found.group(1)
        self._wait_healthy(deadline)

    def _wait_healthy(self, deadline):
        import urllib.request
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(
                        f"http://127.0.0.1:{self.http_port}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("prepackd never became healthy")

    def localize(self, code):
        code = re.sub(r"(localhost|127\.0\.0\.1):8080", rf"\g<1>:{self.http_port}", code)
        return code.replace("127.0.0.1:50051", f"127.0.0.1:{self.grpc_port}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def run_block(language, code, repo, tools, python):
    """Returns (ok, message)."""
    code = code.replace("build/bin/prepack ", tools["prepack"] + " ")
    code = code.replace(CHAT_MODEL, tools["model"])
    if language in ("sh", "bash", ""):
        command = ["sh", "-e", "-c", code]
    elif language == "python":
        if not python:
            return None, "no Python with the openai package given"
        command = [python, "-c", code]
    else:
        return None, f"no runner for ```{language} blocks"
    try:
        done = subprocess.run(command, cwd=repo, capture_output=True, text=True,
                              timeout=BLOCK_TIMEOUT_S,
                              env=dict(os.environ, OMP_WAIT_POLICY="PASSIVE"))
    except subprocess.TimeoutExpired:
        return False, f"did not finish within {BLOCK_TIMEOUT_S} s"
    output = done.stdout + done.stderr
    if done.returncode != 0:
        return False, f"exit {done.returncode}: {output[-2000:]}"
    if "capital of France" in code and "Paris" not in done.stdout:
        return False, f"the answer does not name Paris: {done.stdout[-2000:]!r}"
    return True, done.stdout.strip()[-300:]


def main(argv):
    if len(argv) < 4:
        print(__doc__)
        return 2
    repo, prepack, prepackd = (os.path.abspath(a) for a in argv[1:4])
    python = os.path.abspath(argv[4]) if len(argv) > 4 else None   # blocks run in REPO
    if python and not os.path.exists(python):
        python = None
    if python and subprocess.run([python, "-c", "import openai"],
                                 capture_output=True).returncode != 0:
        python = None
    # ctest passes the fetched model's path (it may live outside the tree);
    # the README's path to it is rewritten to that path.
    model = os.environ.get("PREPACK_CHAT_MODEL") or os.path.join(repo, CHAT_MODEL)
    if not os.path.exists(model):
        print(f"SKIP: {model} absent (scripts/get_models.sh fetches it)")
        return SKIP
    with open(os.path.join(repo, "README.md"), encoding="utf-8") as f:
        blocks = list(runnable_blocks(f.read()))
    if not any(kind == "fast" for _, kind, _, _, _ in blocks):
        print("FAIL: README.md has no <!-- run: fast --> block")
        return 1
    server = None
    failures = 0
    tools = {"prepack": prepack, "model": model}
    try:
        for line, kind, words, language, code in blocks:
            where = f"README.md:{line}"
            if kind == "slow":
                print(f"not run (slow): {where}")
                continue
            if "needs" in words:
                needed = words[words.index("needs") + 1]
                if shutil.which(needed) is None:
                    print(f"SKIP {where}: {needed} is not installed")
                    continue
            if "server" in words:
                if server is None:
                    server = Server(prepackd, model)
                code = server.localize(code)
            ok, message = run_block(language, code, repo, tools, python)
            if ok is None:
                print(f"SKIP {where}: {message}")
            elif ok:
                print(f"ok   {where}: {message}")
            else:
                failures += 1
                print(f"FAIL {where}: {message}")
    finally:
        if server:
            server.stop()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
