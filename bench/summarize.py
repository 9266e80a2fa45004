#!/usr/bin/env python3
"""Turns Google Benchmark JSON (with repetitions) into a markdown table of
medians and ranges, plus the in-run ratios the issue's targets are stated in."""
import json
import statistics
import sys
from collections import defaultdict

data = json.load(open(sys.argv[1]))
runs = defaultdict(list)
for b in data["benchmarks"]:
    if b.get("run_type") != "iteration":
        continue
    runs[b["run_name"]].append(b)

ctx = data["context"]
print(f"# {data['context']['executable'].split('/')[-1]} results\n")
print(f"- machine: {ctx.get('host_name', '?')}, {ctx['num_cpus']} CPUs at "
      f"{ctx['mhz_per_cpu']} MHz, caches "
      + ", ".join(f"L{c['level']} {c['size'] // 1024} KiB" for c in ctx["caches"]))
print(f"- date: {ctx['date']}; ember built Release (-O3 -march=native); "
      f"the Google Benchmark library itself is Debian's "
      f"({ctx['library_build_type']} build), which does not affect timings")
print("- method: Google Benchmark, 7 repetitions; median [min, max] over the "
      "repetitions; real time\n")
print("| benchmark | time (median [min, max]) | rate (median) |")
print("|---|---|---|")
med = {}
for name, rs in runs.items():
    unit = rs[0]["time_unit"]
    ts = [r["real_time"] for r in rs]
    m = statistics.median(ts)
    rate = ""
    if "bytes_per_second" in rs[0]:
        gbs = statistics.median(r["bytes_per_second"] for r in rs) / 1e9
        rate = f"{gbs:.2f} GB/s"
        med[name] = gbs
    elif "GFLOP/s" in rs[0]:
        g = statistics.median(r["GFLOP/s"] for r in rs)
        rate = f"{g:.1f} GFLOP/s"
        med[name] = g
    else:
        med[name] = m
    print(f"| {name} | {m:.3f} [{min(ts):.3f}, {max(ts):.3f}] {unit} | {rate} |")

print("\n## In-run ratios\n")
print("The copy floor is a parallel memcpy over the same thread pool; "
      "add/mul move 3 streams to its 2, at the same element count.\n")
copy = med.get("BM_Copy_Memcpy/real_time")
if copy:
    for k in ("BM_Elementwise_Add", "BM_Elementwise_Mul", "BM_Elementwise_Gelu",
              "BM_Elementwise_AddInPlace"):
        v = med.get(k + "/real_time")
        if v:
            print(f"- {k}: {v / copy * 100:.0f}% of the copy bandwidth "
                  f"({v:.2f} vs {copy:.2f} GB/s; target >= 80%)")
for n in (1024, 2048):
    e = med.get(f"BM_Mm_Ember/{n}/real_time")
    r = med.get(f"BM_Mm_RawSgemm/{n}/real_time")
    if e and r:
        print(f"- mm {n}^3: ember {e:.1f} vs raw sgemm {r:.1f} GFLOP/s = "
              f"{e / r * 100:.1f}% (target: within 5%)")
for k in ("BM_Overhead_Add", "BM_Overhead_Mul", "BM_Overhead_AddScalar",
          "BM_Overhead_View"):
    v = med.get(k)
    if v:
        print(f"- {k}: {v:.0f} ns per op (target for add: <= 500 ns)")
step = med.get("BM_MLP_TrainStep/real_time")
raw = med.get("BM_MLP_RawSgemm/real_time")
if step and raw:
    print(f"- MLP 784-1024-1024-10 SGD step at batch 256: {step:.2f} ms vs "
          f"{raw:.2f} ms for its 8 GEMMs in raw OpenBLAS = {step / raw:.2f}x "
          f"(target: <= 1.2x)")
nograd = med.get("BM_Add1_NoGrad")
for k in ("BM_Add1_RecordGraph", "BM_Mul1_RecordGraph", "BM_Mul1_ForwardBackward"):
    v = med.get(k)
    if v and nograd:
        print(f"- {k}: {v:.0f} ns ({v - nograd:+.0f} ns over a 1-element add "
              f"without autograd, {nograd:.0f} ns)")

# bench_compile: compile() against eager in the same run.
def counter(name, key):
    rs = runs.get(name)
    return statistics.median(r[key] for r in rs) if rs and key in rs[0] else None

for level in (0, 2):
    for n in (1, 8, 64):
        eager = med.get(f"BM_Chain_Eager/{n}")
        comp = med.get(f"BM_Chain_Compiled/{n}/{level}")
        replay = med.get(f"BM_Chain_Replay/{n}/{level}")
        if eager and comp and replay:
            print(f"- opt_level {level}, chain of {n} pointwise ops on 16 floats: "
                  f"eager {eager / 1e3:.2f} us, compiled {comp / 1e3:.2f} us "
                  f"({comp / eager:.2f}x; {(comp - eager) / n:+.0f} ns per op "
                  f"against eager, capture on every call), replay "
                  f"{replay / 1e3:.2f} us ({replay / eager:.2f}x)")
for n in (1, 8, 64):
    name = f"BM_CompileGraph/{n}"
    if name in med:
        print(f"- first call (capture + compile + run) of a {n}-op graph: "
              f"{med[name] / 1e3:.2f} ms, of which building, verifying and "
              f"importing the MLIR module {counter(name, 'compile_ms'):.2f} ms "
              f"and capture {counter(name, 'capture_ms'):.2f} ms")
e = med.get("BM_MLP_Eager/real_time")
c = med.get("BM_MLP_Compiled/real_time")
if e and c:
    print(f"- MLP 784-1024-1024-10 inference at batch 256: eager {e:.2f} ms, "
          f"compiled {c:.2f} ms ({c / e:.3f}x)")

# bench_fusion: fused kernels against eager and the copy floor, same run.
floor = med.get("BM_Floor_Memcpy/real_time")
for name, what, target in (("Gelu", "gelu(x*w+b), 16.8M float32", 85),
                           ("Chain8", "8-op pointwise chain", 85),
                           ("BiasSiluMul", "bias + SiLU + mul", 85),
                           ("Softmax", "softmax over 4096x4096 float32", 70),
                           ("LayerNorm", "layer_norm over 4096x4096 float32", 70)):
    e = med.get(f"BM_{name}_Eager/real_time")
    c = med.get(f"BM_{name}_Compiled/real_time")
    if e and c and floor:
        print(f"- {what}: compiled {c:.2f} GB/s = {c / floor * 100:.0f}% of "
              f"the copy floor ({floor:.2f} GB/s; target >= {target}%); eager "
              f"{e:.2f} GB/s; compiled/eager speed-up {c / e:.2f}x")
for k, what in (("BM_KernelCompile_Cold", "cold compile of one kernel (capture "
                 "+ MLIR + passes + LLVM O3 + JIT; target <= 100 ms)"),
                ("BM_KernelCompile_Warm", "the same graph again, kernel from "
                 "the in-process cache"),
                ("BM_GraphFromDiskCache", "a graph's first call with its "
                 "kernels in the disk cache, as a second process (capture + "
                 "MLIR + passes + loading 2 kernels; target <= 5 ms)")):
    v = med.get(k)
    if v:
        print(f"- {what}: {v:.2f} ms")

# bench_optimizer: compiled steps with and without combined kernels.
for kind, what in ((0, "SGD with momentum"), (1, "AdamW")):
    e = med.get(f"BM_Step_Eager/{kind}/real_time")
    sep = med.get(f"BM_Step_Compiled/{kind}/0/real_time")
    combo = med.get(f"BM_Step_Compiled/{kind}/1/real_time")
    if e and sep and combo:
        print(f"- {what} step over 48 parameters: eager {e:.2f} ms, compiled "
              f"with a kernel per parameter {sep:.2f} ms, with combined "
              f"kernels {combo:.2f} ms ({sep / combo:.2f}x over per-parameter "
              f"kernels, {e / combo:.2f}x over eager)")
