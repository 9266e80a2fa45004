#!/usr/bin/env python3
"""Replays ember-opt-fuzz's regression corpus through the ordinary tools,
as the fuzzer's target runs an input (Note [Fuzzing ember-opt] in
cmake/Fuzz.cmake), so that a build without libFuzzer (gcc, CI) still
guards every crash the fuzzer found:

  replay.py --opt EMBER_OPT --translate EMBER_TRANSLATE DIR...

Each file of each DIR goes through `ember-opt --ember-pipeline=level=2`
and, when that succeeds, its output through `ember-translate
--emit=kernels` (which lowers every fusion). Each must exit 0 or 1 with a
clean diagnostic: never a signal, an abort, an uncaught exception, an LLVM
fatal error or a crash report. And as in the target, a module that
verifies (`ember-opt FILE` succeeds) must come through the pipeline.
test/lit/fuzz/regressions.test runs it.
"""
import argparse
import os
import subprocess
import sys

# What a tool prints when it did not end in a clean diagnostic.
CRASH_MARKS = ("Stack dump", "PLEASE submit a bug report", "LLVM ERROR",
               "terminate called", "Assertion", "AddressSanitizer",
               "runtime error:")


def run(cmd, stdin=None):
    """(ok, why, stdout) of one tool run: ok when it ended in exit 0, or 1
    with a clean diagnostic (`why` then holds it)."""
    try:
        p = subprocess.run(cmd, input=stdin, capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        return False, "timed out after 120 s", b""
    err = p.stderr.decode(errors="replace")
    if p.returncode < 0:
        return False, f"killed by signal {-p.returncode}\n{err}", p.stdout
    if p.returncode not in (0, 1):
        return False, f"exit status {p.returncode}\n{err}", p.stdout
    for mark in CRASH_MARKS:
        if mark in err:
            return False, f"'{mark}' on stderr\n{err}", p.stdout
    if p.returncode == 1 and "error:" not in err:
        return False, f"exit status 1 without a diagnostic\n{err}", p.stdout
    return True, err, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--opt", required=True, help="ember-opt")
    ap.add_argument("--translate", required=True, help="ember-translate")
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    files = sorted(os.path.join(d, f) for d in a.dirs for f in os.listdir(d)
                   if not f.startswith(".") and f != "README.md")
    failed = 0
    for path in files:
        ok, why, out = run([a.opt, "--ember-pipeline=level=2", path])
        if ok and not out and run([a.opt, path])[2]:
            ok, why = False, "the module verifies, and the pipeline fails " \
                "on it:\n" + why
        if ok and out:
            ok, why, _ = run([a.translate, "--emit=kernels", "-"], out)
            why = "ember-translate: " + why if not ok else why
        else:
            why = "ember-opt: " + why if not ok else why
        if not ok:
            failed += 1
            print(f"FAIL {os.path.basename(path)}: {why}")
    print(f"replay.py: {len(files)} inputs, {failed} failed")
    return 1 if failed or not files else 0


if __name__ == "__main__":
    sys.exit(main())
