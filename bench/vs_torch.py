#!/usr/bin/env python3
"""ember side by side with PyTorch (eager and torch.compile), on the CPU.

One run of this script alternates rounds: ember (build/bench/bench_vs_torch,
eager and compiled) then PyTorch (eager and torch.compile with Inductor's CPU
backend), `--rounds` times, the same workloads, 2 threads, float32. Each
round times `--iters` calls of every workload after two warm-up calls; a
round's value is the median of its calls. The summary gives, per workload and
implementation, the median over rounds with the range [min, max] of the round
medians, and the in-run ratios the issue's targets are stated in.

PyTorch is a benchmark-only dependency, in a virtual environment under build/:

    python3 -m venv build/torch-venv && build/torch-venv/bin/pip install torch
    apt-get install libtcmalloc-minimal4
    build/torch-venv/bin/python bench/vs_torch.py        # writes bench/results/

The script re-executes itself with tcmalloc preloaded (PyTorch's CPU
performance guide; ../shared/TOOLCHAIN.md: glibc malloc returns PyTorch's
64 MiB outputs to the OS and every call pays page faults), unless --malloc
glibc asks for the default allocator.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"
ROWS = COLS = 4096


def train_step(loss_fn, step_fn, opt, x, t):
    """One training step as a call: zero_grad, loss_fn(x, t).backward(),
    step_fn() (also bench/cuda_compile_torch.py's)."""
    def call():
        opt.zero_grad()
        loss_fn(x, t).backward()
        step_fn()
    return call


def torch_workloads(torch, only):
    """(name, impl, call) for PyTorch eager and torch.compile."""
    F = torch.nn.functional
    g = torch.Generator().manual_seed(0)
    x = torch.randn(ROWS, COLS, generator=g)
    y = torch.randn(ROWS, COLS, generator=g)
    w = torch.randn(COLS, generator=g)
    b = torch.randn(COLS, generator=g)

    def gelu_chain(x, w, b):
        return F.gelu(x * w + b)

    def gelu(x):
        return F.gelu(x)

    def chain8(x, y):
        return ((((x * y + 1).relu() - 0.5) * x).abs() + y).sigmoid() * 2

    def softmax(x):
        return x.softmax(-1)

    def layer_norm(x, w, b):
        return F.layer_norm(x, (COLS,), w, b)

    def full_sum(x):
        return x.sum()

    mlp = torch.nn.Sequential(
        torch.nn.Linear(784, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10))
    mlp_in = torch.randn(256, 784, generator=g)

    def mlp_fn(t):
        return mlp(t)

    w1, w2, w3 = (torch.randn(1024, 784, generator=g),
                  torch.randn(1024, 1024, generator=g),
                  torch.randn(10, 1024, generator=g))

    out = []
    floor_dst = torch.empty(ROWS, COLS)
    out.append(("floor", "torch_eager", lambda: floor_dst.copy_(x)))
    for name, fn, args in [
        ("gelu_chain", gelu_chain, (x, w, b)),
        ("gelu", gelu, (x,)),
        ("chain8", chain8, (x, y)),
        ("softmax", softmax, (x,)),
        ("layer_norm", layer_norm, (x, w, b)),
        ("sum", full_sum, (x,)),
        ("mlp", mlp_fn, (mlp_in,)),
    ]:
        compiled = torch.compile(fn)
        out.append((name, "torch_eager",
                    lambda fn=fn, args=args: fn(*args)))
        out.append((name, "torch_compiled",
                    lambda c=compiled, args=args: c(*args)))

    out.append(("mlp_gemms", "torch_eager",
                lambda: mlp_in.mm(w1.t()).mm(w2.t()).mm(w3.t())))

    def train(fn):
        xg = torch.randn(ROWS, COLS, generator=g).requires_grad_()
        gy = torch.randn(ROWS, COLS, generator=g)

        def call():
            yv = fn(xg)
            xg.grad = None
            yv.backward(gy)
        return call

    lw = torch.randn(COLS, generator=g).requires_grad_()
    lb = torch.randn(COLS, generator=g).requires_grad_()
    for name, fn in [("layer_norm_fwd_bwd", lambda t: F.layer_norm(t, (COLS,))),
                     ("layer_norm_affine_fwd_bwd",
                      lambda t: F.layer_norm(t, (COLS,), lw, lb)),
                     ("softmax_fwd_bwd", lambda t: t.softmax(-1)),
                     ("gelu_fwd_bwd", lambda t: F.gelu(t))]:
        out.append((name, "torch_eager", train(fn)))
        out.append((name, "torch_compiled", train(torch.compile(fn))))

    # An SGD step of the MLP (momentum 0.9) with cross entropy; compiled:
    # the loss (forward and backward) and the optimizer step.
    torch.manual_seed(1)
    tmlp = torch.nn.Sequential(
        torch.nn.Linear(784, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10))
    opt = torch.optim.SGD(tmlp.parameters(), lr=0.01, momentum=0.9)
    target = torch.randint(0, 10, (256,), generator=g)

    def loss(x, t):
        return F.cross_entropy(tmlp(x), t)

    def steps(name, lf, o, x, t):
        """Training steps eagerly and with loss and step compiled."""
        out.append((name, "torch_eager", train_step(lf, o.step, o, x, t)))
        out.append((name, "torch_compiled",
                    train_step(torch.compile(lf), torch.compile(o.step), o,
                               x, t)))

    steps("mlp_train", loss, opt, mlp_in, target)
    # Its eight matrix products alone (bench_vs_torch.cpp: mlp_train_gemms).
    th1, th2, tg1, tg2 = (torch.randn(256, 1024, generator=g)
                          for _ in range(4))
    tg3 = torch.randn(256, 10, generator=g)

    def train_gemms():
        mlp_in.mm(w1.t()), th1.mm(w2.t()), th2.mm(w3.t())
        tg3.mm(w3), tg3.t().mm(th2), tg2.mm(w2), tg2.t().mm(th1)
        tg1.t().mm(mlp_in)
    out.append(("mlp_train_gemms", "torch_eager", train_gemms))

    # An AdamW step of 4 pre-norm encoder layers (d_model 256, 4 heads,
    # feed-forward 1024, gelu, dropout 0, batch first), batch 8 x sequence
    # 128, mean-squared loss against a random target.
    torch.manual_seed(2)
    enc = torch.nn.Sequential(*[torch.nn.TransformerEncoderLayer(
        256, 4, 1024, dropout=0.0, activation="gelu", batch_first=True,
        norm_first=True) for _ in range(4)])
    topt = torch.optim.AdamW(enc.parameters(), lr=1e-4)
    tin = torch.randn(8, 128, 256, generator=g)
    ttarget = torch.randn(8, 128, 256, generator=g)

    def tloss(x, t):
        return F.mse_loss(enc(x), t)

    steps("transformer_train", tloss, topt, tin, ttarget)
    return [o for o in out if not only or o[0] == only]


def time_calls(call, iters, no_grad):
    import torch
    ctx = torch.no_grad() if no_grad else torch.enable_grad()
    with ctx:
        call()
        call()
        ms = []
        for _ in range(iters):
            t0 = time.perf_counter()
            call()
            ms.append((time.perf_counter() - t0) * 1e3)
    return ms


def ember_round(binary, iters, only, lib_dir=None):
    """One run of the ember binary; with lib_dir, against the libember.so
    there (an earlier build: its rows' implementations get "@baseline")."""
    cmd = [binary, "--iters", str(iters), "--threads", "2"]
    if only:
        cmd += ["--only", only]
    env = dict(os.environ)
    if lib_dir:
        env["LD_LIBRARY_PATH"] = lib_dir
    res = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         env=env)
    recs = [json.loads(line) for line in res.stdout.splitlines()
            if line.startswith("{")]
    for rec in recs:
        if lib_dir:
            rec["impl"] += "@baseline"
    return recs


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{platform.node()}: {os.cpu_count()} CPUs, {cpu}"


def blas_kernels():
    """OpenBLAS's kernels in a process with this environment (what ember's
    run gets: ember changes them only on a CPU OpenBLAS takes for a
    Prescott, Note [OpenBLAS on an unnamed CPU]), and OPENBLAS_CORETYPE.
    Some machines set OPENBLAS_CORETYPE=Haswell for old OpenBLAS builds
    (with AVX-512, half the sgemm rate of its AVX-512 kernels); PyTorch's
    MKL ignores it."""
    try:
        core = subprocess.run(
            [sys.executable, "-c",
             "import ctypes; f = ctypes.CDLL('libopenblas.so.0')."
             "openblas_get_corename; f.restype = ctypes.c_char_p; "
             "print(f().decode())"],
            check=True, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        core = "unknown"
    chosen = os.environ.get("OPENBLAS_CORETYPE")
    return (f"{core} (OPENBLAS_CORETYPE="
            f"{chosen if chosen is not None else 'unset'})")


def summarize(rounds, meta):
    """rounds: {(workload, impl): [round median, ...]} -> markdown."""
    med = {k: statistics.median(v) for k, v in rounds.items()}
    lines = ["# ember vs PyTorch on the CPU (bench/vs_torch.py)", ""]
    for k, v in meta.items():
        lines.append(f"- {k}: {v}")
    lines += ["", "| workload | implementation | ms (median [min, max] over "
              "rounds) |", "|---|---|---|"]
    for (wl, impl), v in rounds.items():
        lines.append(f"| {wl} | {impl} | {statistics.median(v):.3f} "
                     f"[{min(v):.3f}, {max(v):.3f}] |")

    def get(wl, impl):
        return med.get((wl, impl))

    lines += ["", "## In-run ratios (speed-up = other's time / ember's time)",
              ""]
    floor_e, floor_t = get("floor", "ember_eager"), get("floor", "torch_eager")
    mib = ROWS * COLS * 4 / 1e9
    if floor_e:
        lines.append(f"- copy floor: ember's parallel memcpy {floor_e:.3f} ms "
                     f"({2 * mib / floor_e * 1e3:.1f} GB/s)" +
                     (f", torch copy_ {floor_t:.3f} ms" if floor_t else ""))
    # Big tensors each pointwise workload moves (inputs + output).
    moved = {"gelu_chain": 2, "gelu": 2, "chain8": 3, "softmax": 2,
             "layer_norm": 2, "sum": 1}
    for wl in ["gelu_chain", "gelu", "chain8", "softmax", "layer_norm", "sum",
               "mlp", "mlp_gemms", "layer_norm_fwd_bwd",
               "layer_norm_affine_fwd_bwd", "softmax_fwd_bwd",
               "gelu_fwd_bwd", "mlp_train", "mlp_train_gemms",
               "transformer_train"]:
        ec, ee = get(wl, "ember_compiled"), get(wl, "ember_eager")
        tc, te = get(wl, "torch_compiled"), get(wl, "torch_eager")
        parts = []
        if ec and floor_e and wl in moved:
            floor_ms = floor_e * moved[wl] / 2
            parts.append(f"compiled at {floor_ms / ec * 100:.0f}% of the copy "
                         "floor")
        if ec and tc:
            parts.append(f"compiled vs torch.compile {tc / ec:.2f}x")
        if ec and ee:
            parts.append(f"compiled vs ember eager {ee / ec:.2f}x")
        er = get(wl, "ember_replay")
        if er and tc:
            parts.append(f"replay mode vs torch.compile {tc / er:.2f}x")
        if er and ee:
            parts.append(f"replay mode vs ember eager {ee / er:.2f}x")
        if ee and te:
            parts.append(f"ember eager vs torch eager {te / ee:.2f}x")
        gemms = get("mlp_gemms", "ember_eager")
        if wl == "mlp" and gemms and ee:
            parts.append(f"its three GEMMs alone take {gemms / ee * 100:.0f}% "
                         "of ember eager's time")
        tgemms = get("mlp_train_gemms", "ember_eager")
        if wl == "mlp_train" and tgemms and ee:
            parts.append(f"its eight GEMMs alone take "
                         f"{tgemms / ee * 100:.0f}% of ember eager's time "
                         f"(a compiled step can be at most "
                         f"{ee / tgemms:.2f}x eager)")
        if parts:
            lines.append(f"- {wl}: " + "; ".join(parts))
    base = [(wl, impl) for (wl, impl) in med if impl.endswith("@baseline")]
    if base:
        lines += ["", "Against the baseline build (its time / this build's):",
                  ""]
        for wl, impl in base:
            now = get(wl, impl[:-len("@baseline")])
            if now:
                lines.append(f"- {wl} {impl[:-len('@baseline')]}: "
                             f"{get(wl, impl) / now:.2f}x")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=15)
    ap.add_argument("--only", default="")
    ap.add_argument("--malloc", choices=["tcmalloc", "glibc"],
                    default="tcmalloc")
    ap.add_argument("--binary",
                    default=os.path.join(ROOT, "build/bench/bench_vs_torch"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/results"))
    ap.add_argument("--baseline-lib", default="",
                    help="a folder holding an earlier build's libember.so: "
                    "each round also runs ember against it (rows marked "
                    "@baseline), for a before/after ratio from one run")
    args = ap.parse_args()

    if (args.malloc == "tcmalloc" and
            TCMALLOC not in os.environ.get("LD_PRELOAD", "")):
        if not os.path.exists(TCMALLOC):
            sys.exit(f"{TCMALLOC} missing: apt-get install "
                     "libtcmalloc-minimal4, or pass --malloc glibc")
        env = dict(os.environ, LD_PRELOAD=TCMALLOC)
        os.execve(sys.executable, [sys.executable] + sys.argv, env)

    import torch
    torch.set_num_threads(2)
    torch.manual_seed(0)
    work = torch_workloads(torch, args.only)
    rounds = {}
    for r in range(args.rounds):
        libs = [None] + ([args.baseline_lib] if args.baseline_lib else [])
        for lib in libs if r % 2 == 0 else reversed(libs):
            for rec in ember_round(args.binary, args.iters, args.only, lib):
                rounds.setdefault((rec["workload"], rec["impl"]), []).append(
                    statistics.median(rec["ms"]))
        for name, impl, call in work:
            ms = time_calls(call, args.iters,
                            not name.endswith(("_bwd", "_train")))
            rounds.setdefault((name, impl), []).append(statistics.median(ms))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    rounds = dict(sorted(rounds.items()))

    meta = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "ember's OpenBLAS kernels": blas_kernels(),
        "PyTorch": f"{torch.__version__}, malloc: {args.malloc}"
                   f"{' (LD_PRELOAD ' + TCMALLOC + ')' if args.malloc == 'tcmalloc' else ''}",
        "method": f"{args.rounds} alternating rounds (ember, then PyTorch), "
                  f"each timing {args.iters} calls after 2 warm-up calls; a "
                  "round's value is its median call; 2 threads; float32; "
                  "inputs 4096x4096 (MLP: 784-1024-1024-10 at batch 256)",
    }
    md = summarize(rounds, meta)
    suffix = "" if args.malloc == "tcmalloc" else "_glibc"
    if not args.only:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, f"vs_torch{suffix}.json"), "w") as f:
            json.dump({"meta": meta,
                       "rounds": [{"workload": k[0], "impl": k[1],
                                   "round_medians_ms": v}
                                  for k, v in rounds.items()]}, f, indent=1)
        with open(os.path.join(args.out, f"vs_torch{suffix}.md"), "w") as f:
            f.write(md)
    print(md)


if __name__ == "__main__":
    main()
