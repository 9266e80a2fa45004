"""PyTorch's eager CUDA kernels on the cases of bench/bench_cuda.cpp, timed
the same way (5 warm-ups, 30 repetitions each timed with CUDA events;
median, range, bandwidth of the bytes each op must move). Run on the GPU
machine beside gpu-bundle/run.sh bench."""
import torch


def time_ms(run):
    """5 warm-ups, then 30 runs each timed with CUDA events: the median, the
    fastest and the slowest, in ms (also bench/cuda_compile_torch.py's)."""
    for _ in range(5):
        run()
    torch.cuda.synchronize()
    ms = []
    for _ in range(30):
        a = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        e.record()
        e.synchronize()
        ms.append(a.elapsed_time(e))
    ms.sort()
    return ms[len(ms) // 2], ms[0], ms[-1]


def main():
    R = C = 8192
    n = R * C
    f = 4.0 * n
    torch.manual_seed(0)
    x = torch.randn(R, C, device="cuda")
    y = torch.randn(R, C, device="cuda")
    b = torch.randn(C, device="cuda")
    out = torch.empty(R, C, device="cuda")
    host = torch.randn(R, C)
    pinned = host.pin_memory()
    cases = [
        ("copy_ (device to device)", 2 * f, lambda: out.copy_(x)),
        ("x + y", 3 * f, lambda: x + y),
        ("x * 2", 2 * f, lambda: x * 2.0),
        ("exp(x)", 2 * f, lambda: x.exp()),
        ("x + b (broadcast row)", 2 * f, lambda: x + b),
        ("x.t() + y (strided)", 3 * f, lambda: x.t() + y),
        ("x.to(float16)", 1.5 * f, lambda: x.to(torch.half)),
        ("out.add_(x)", 3 * f, lambda: out.add_(x)),
        ("host to device (pageable)", f, lambda: out.copy_(host)),
        ("host to device (pinned)", f, lambda: out.copy_(pinned)),
        ("device to host (pinned)", f, lambda: pinned.copy_(x)),
    ]
    print(f"device: {torch.cuda.get_device_name(0)} (torch {torch.__version__})\n")
    print(f"| {'op (8192x8192 float32)':34} | {'median ms':>9} | {'range ms':>15} | {'GB/s':>8} |")
    print(f"|{'-' * 36}|{'-' * 11}|{'-' * 17}|{'-' * 10}|")
    for name, nbytes, run in cases:
        med, lo, hi = time_ms(run)
        print(f"| {name:34} | {med:9.3f} | {lo:7.3f}-{hi:<7.3f} | {nbytes / (med * 1e-3) / 1e9:8.1f} |")

    M = 4096
    a = torch.randn(M, M, device="cuda")
    bm = torch.randn(M, M, device="cuda")
    a16, b16 = a.bfloat16(), bm.bfloat16()
    one = torch.randn(1, device="cuda")
    two = torch.randn(1, device="cuda")
    flops = 2.0 * M * M * M

    def tf32():
        torch.backends.cuda.matmul.allow_tf32 = True
        a.mm(bm)
        torch.backends.cuda.matmul.allow_tf32 = False

    def adds():
        for _ in range(100):
            one + two

    rates = [
        ("mm 4096^3 float32", flops, lambda: a.mm(bm)),
        ("mm 4096^3 float32, TF32 allowed", flops, tf32),
        ("mm 4096^3 bfloat16", flops, lambda: a16.mm(b16)),
        ("100 x (x + y), 1 float", -100, adds),
    ]
    print(f"\n| {'case':34} | {'median ms':>9} | {'range ms':>15} | {'TFLOP/s, us/op':>14} |")
    print(f"|{'-' * 36}|{'-' * 11}|{'-' * 17}|{'-' * 16}|")
    for name, per, run in rates:
        med, lo, hi = time_ms(run)
        rate = per / (med * 1e-3) / 1e12 if per > 0 else med * 1e3 / -per
        print(f"| {name:34} | {med:9.3f} | {lo:7.3f}-{hi:<7.3f} | {rate:14.2f} |")


if __name__ == "__main__":
    main()
