#!/usr/bin/env python3
"""Mixed precision on the CPU: ember next to PyTorch (torch.autocast).

An MLP training step (784-1024-1024-10, batch 256, cross-entropy, SGD with
momentum) in float32 and under bfloat16 autocast, in ember
(build/bench/bench_amp) and in PyTorch, in `--rounds` alternating rounds of
one run, 2 threads. Each round times `--iters` steps after two warm-up steps;
a round's value is its median step. Reported per implementation: the median
over rounds with the range of the round medians, the bytes the forward saves
for backward (distinct storages, counted by saved-tensor hooks in both), and
for ember the peak of memory_allocated over a step.

    python3 -m venv build/torch-venv && build/torch-venv/bin/pip install torch
    build/torch-venv/bin/python bench/amp_torch.py    # bench/results/amp.{json,md}
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vs_torch import TCMALLOC, machine  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def torch_impls(torch):
    out = {}
    for amp in (False, True):
        torch.manual_seed(0)
        net = torch.nn.Sequential(
            torch.nn.Linear(784, 1024), torch.nn.ReLU(),
            torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
            torch.nn.Linear(1024, 10))
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        x = torch.randn(256, 784)
        y = torch.randint(0, 10, (256,))

        def forward(net=net, x=x, y=y, amp=amp):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                return torch.nn.functional.cross_entropy(net(x), y)

        def step(opt=opt, forward=forward):
            opt.zero_grad()
            forward().backward()
            opt.step()

        seen, total = set(), [0]

        def pack(t):
            s = t.untyped_storage()
            if s.data_ptr() not in seen:
                seen.add(s.data_ptr())
                total[0] += s.nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = forward()
        loss.backward()
        opt.zero_grad()
        out["torch_bf16" if amp else "torch_fp32"] = (step, total[0])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=15)
    ap.add_argument("--binary", default=os.path.join(ROOT, "build/bench/bench_amp"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/results"))
    args = ap.parse_args()
    if TCMALLOC not in os.environ.get("LD_PRELOAD", "") and os.path.exists(TCMALLOC):
        os.execve(sys.executable, [sys.executable] + sys.argv,
                  dict(os.environ, LD_PRELOAD=TCMALLOC))
    import torch
    torch.set_num_threads(2)
    impls = torch_impls(torch)
    rounds, saved, peak = {}, {}, {}
    for r in range(args.rounds):
        res = subprocess.run([args.binary, "--iters", str(args.iters),
                              "--threads", "2"], check=True,
                             capture_output=True, text=True)
        for line in res.stdout.splitlines():
            if line.startswith("{"):
                rec = json.loads(line)
                rounds.setdefault(rec["impl"], []).append(statistics.median(rec["ms"]))
                saved[rec["impl"]] = rec["saved_bytes"]
                peak[rec["impl"]] = rec["peak_bytes"]
        for name, (step, sb) in impls.items():
            step()
            step()
            ms = []
            for _ in range(args.iters):
                t0 = time.perf_counter()
                step()
                ms.append((time.perf_counter() - t0) * 1e3)
            rounds.setdefault(name, []).append(statistics.median(ms))
            saved[name] = sb
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)

    meta = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "PyTorch": f"{torch.__version__} (LD_PRELOAD tcmalloc: "
                   f"{TCMALLOC in os.environ.get('LD_PRELOAD', '')})",
        "method": f"{args.rounds} alternating rounds (ember, then PyTorch), each "
                  f"timing {args.iters} training steps after 2 warm-up steps; a "
                  "round's value is its median step; 2 threads",
    }
    mib = 1 << 20
    lines = ["# Mixed precision on the CPU: ember vs PyTorch (bench/amp_torch.py)", ""]
    lines += [f"- {k}: {v}" for k, v in meta.items()]
    lines += ["", "MLP 784-1024-1024-10, batch 256, cross-entropy, SGD (momentum 0.9).", "",
              "| impl | step ms, median [range] | saved for backward | peak of a step |",
              "|---|---|---|---|"]
    for name in ("ember_fp32", "ember_bf16", "torch_fp32", "torch_bf16"):
        v = rounds[name]
        pk = f"{peak[name] / mib:.2f} MiB" if name in peak else "n/a"
        lines.append(f"| {name} | {statistics.median(v):.2f} [{min(v):.2f}, {max(v):.2f}] "
                     f"| {saved[name] / mib:.2f} MiB | {pk} |")
    med = {k: statistics.median(v) for k, v in rounds.items()}
    lines += ["", "In-run ratios:", "",
              f"- ember bf16 / fp32 step time: {med['ember_bf16'] / med['ember_fp32']:.2f}",
              f"- PyTorch bf16 / fp32 step time: {med['torch_bf16'] / med['torch_fp32']:.2f}",
              f"- ember / PyTorch, bf16 autocast: {med['ember_bf16'] / med['torch_bf16']:.2f}",
              f"- ember / PyTorch, fp32: {med['ember_fp32'] / med['torch_fp32']:.2f}",
              f"- saved bytes bf16 / fp32: ember {saved['ember_bf16'] / saved['ember_fp32']:.2f}, "
              f"PyTorch {saved['torch_bf16'] / saved['torch_fp32']:.2f}",
              f"- ember peak bf16 / fp32: {peak['ember_bf16'] / peak['ember_fp32']:.2f}"]
    md = "\n".join(lines) + "\n"
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "amp.json"), "w") as f:
        json.dump({"meta": meta, "round_medians_ms": rounds, "saved_bytes": saved,
                   "peak_bytes": peak}, f, indent=1)
    with open(os.path.join(args.out, "amp.md"), "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    main()
