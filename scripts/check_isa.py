#!/usr/bin/env python3
"""Checks that built artifacts run on the baseline CPU (x86-64-v2).

Disassembles each ELF file given (objdump) and fails when a function outside
the per-level kernel namespaces (prepack::cpu::isa_avx2, isa_avx512; see
kernels/cpu/isa_region.h) holds an instruction the baseline lacks: anything
VEX/EVEX-encoded (AVX, AVX2, FMA, F16C, AVX-512), a ymm/zmm/mask register, or
a BMI1/BMI2/LZCNT/MOVBE instruction. Those functions are only reached
through the run-time dispatch, after the CPU was found to have the level.

  check_isa.py FILE...        check the files (a jar: the native libraries in
                              it), report offenders, exit 1 if any
  check_isa.py --selftest     build a library with one AVX-512 baseline
                              function and one dispatched one; fail unless
                              exactly the first is reported
"""
import os
import re
import subprocess
import sys
import tempfile
import zipfile

# Functions allowed to use instructions above the baseline.
DISPATCHED = re.compile(r"prepack::cpu::isa_(avx2|avx512)::")
FUNCTION = re.compile(r"^[0-9a-f]+ <(.*)>:$")
BEYOND_BASELINE_MNEMONICS = {
    "andn", "bextr", "blsi", "blsmsk", "blsr", "bzhi", "pdep", "pext", "rorx", "sarx", "shlx", "shrx",
    "mulx", "lzcnt", "movbe",
}
# Registers only AVX / AVX-512 have.
WIDE_REGISTER = re.compile(r"%(ymm|zmm)\d+|%k[0-7]\b")


def beyond_baseline(instruction):
    """True when an objdump instruction text needs more than x86-64-v2."""
    fields = instruction.split(None, 1)
    if not fields:
        return False
    mnemonic = fields[0]
    # Prefixes like 'rep', 'lock', 'notrack', 'bnd' come first.
    while mnemonic in ("rep", "repz", "repnz", "lock", "notrack", "bnd", "data16", "cs", "ds") and len(fields) > 1:
        fields = fields[1].split(None, 1)
        mnemonic = fields[0]
    if mnemonic.startswith("v") and mnemonic not in ("verr", "verw"):
        return True   # VEX/EVEX encoded: AVX and above
    if mnemonic in BEYOND_BASELINE_MNEMONICS:
        return True
    return bool(WIDE_REGISTER.search(instruction))


def offenders(path):
    """{function: first offending instruction} for functions outside the kernels' levels."""
    out = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", path], capture_output=True, text=True,
                         check=True).stdout
    found = {}
    function = None
    for line in out.splitlines():
        m = FUNCTION.match(line)
        if m:
            function = m.group(1)
            continue
        if function is None or function in found or DISPATCHED.search(function):
            continue
        parts = line.split("\t")
        if len(parts) >= 2 and ":" in parts[0] and beyond_baseline(parts[-1].strip()):
            found[function] = parts[-1].strip()
    return found


def elf_files(path, scratch):
    """The ELF files `path` stands for: itself, or those a jar (zip) carries."""
    if not zipfile.is_zipfile(path):
        return [path]
    members = []
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            with z.open(name) as f:
                if f.read(4) == b"\x7fELF":
                    members.append(z.extract(name, scratch))
    if not members:
        print(f"note {path}: holds no native library")
    return members


def check(paths):
    bad = 0
    with tempfile.TemporaryDirectory() as scratch:
        for path in [f for p in paths for f in elf_files(p, scratch)]:
            found = offenders(path)
            if found:
                bad += 1
                print(f"FAIL {path}: {len(found)} function(s) outside the dispatched kernels use "
                      "instructions above x86-64-v2:")
                for function, instruction in sorted(found.items())[:20]:
                    print(f"  {function}: {instruction}")
            else:
                print(f"ok   {path}")
    return 1 if bad else 0


def selftest():
    source = r'''
#include <immintrin.h>
namespace prepack::cpu::isa_avx512 {
__attribute__((target("avx512f"))) float Dispatched(const float* p) {
    return _mm512_reduce_add_ps(_mm512_loadu_ps(p));
}
}
namespace prepack::cpu {
__attribute__((target("avx512f"))) float LeakedIntoBaseline(const float* p) {
    return _mm512_reduce_add_ps(_mm512_loadu_ps(p));
}
float Baseline(const float* p) { return p[0] + p[1]; }
}
'''
    with tempfile.TemporaryDirectory() as d:
        src, lib = os.path.join(d, "t.cpp"), os.path.join(d, "libt.so")
        with open(src, "w") as f:
            f.write(source)
        subprocess.run(["g++", "-O2", "-march=x86-64-v2", "-shared", "-fPIC", src, "-o", lib], check=True)
        found = offenders(lib)
        names = sorted(found)
        if len(names) != 1 or "LeakedIntoBaseline" not in names[0]:
            print(f"FAIL selftest: expected only LeakedIntoBaseline to be reported, got {names}")
            return 1
    # And the instruction classifier on its own.
    cases = {"vmovups %ymm0,(%rax)": True, "vaddss %xmm1,%xmm0,%xmm0": True, "shlx %eax,%ebx,%ecx": True,
             "kmovw %k1,%eax": True, "addps %xmm1,%xmm0": False, "popcnt %rax,%rbx": False,
             "rep bsf %eax,%eax": False, "pshufb %xmm1,%xmm0": False, "movq %rax,%xmm0": False}
    for text, expected in cases.items():
        if beyond_baseline(text) != expected:
            print(f"FAIL selftest: {text!r} classified {not expected}")
            return 1
    print("ok   selftest: the planted AVX-512 baseline function is caught, the dispatched one is allowed")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--selftest"]:
        sys.exit(selftest())
    if not sys.argv[1:]:
        print(__doc__)
        sys.exit(2)
    sys.exit(check(sys.argv[1:]))
