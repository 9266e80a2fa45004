#!/usr/bin/env python3
"""Eager calls of ember against PyTorch (bench/bench_survey.cpp and
bench/survey_torch.py), alternating, to find outliers:

    build/torch-venv/bin/python bench/survey.py [--rounds 2] \\
        [--baseline-lib DIR] > bench/results/eager_survey.md

With --baseline-lib, each round also runs the survey against the
libember.so in DIR (an earlier build), for a before/after column."""
import argparse
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"


def run(cmd, env):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         env=env).stdout
    times = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2:
            times[parts[0]] = float(parts[1])
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "bench",
                                                     "bench_survey"))
    ap.add_argument("--baseline-lib")
    args = ap.parse_args()
    torch_env = dict(os.environ)
    if os.path.exists(TCMALLOC):
        torch_env["LD_PRELOAD"] = TCMALLOC
    sides = {"after": (dict(os.environ), [args.binary])}
    if args.baseline_lib:
        sides["before"] = (dict(os.environ, LD_LIBRARY_PATH=args.baseline_lib),
                           [args.binary])
    sides["torch"] = (torch_env, [sys.executable,
                                  os.path.join(ROOT, "bench",
                                               "survey_torch.py")])
    runs = {k: [] for k in sides}
    for _ in range(args.rounds):
        for k, (env, cmd) in sides.items():
            runs[k].append(run(cmd, env))

    def med(k, n):
        return statistics.median(d[n] for d in runs[k])

    rows = sorted(((med("after", n) / med("torch", n), n)
                   for n in runs["after"][0] if n in runs["torch"][0]),
                  reverse=True)
    before = "before" in runs
    print("| call |" + (" ember before (ms) |" if before else "") +
          " ember (ms) | PyTorch (ms) | ember / PyTorch |")
    print("|---|" + ("---|" if before else "") + "---|---|---|")
    for r, n in rows:
        b = f" {med('before', n):.4f} |" if before else ""
        print(f"| {n} |{b} {med('after', n):.4f} | {med('torch', n):.4f} | "
              f"{r:.2f} |")


if __name__ == "__main__":
    main()
