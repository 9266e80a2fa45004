"""PyTorch's times of bench_pool's ops (2^18 floats, medians over 200 calls
in us, 2 threads): run with tcmalloc preloaded, as bench/vs_torch.py does:
LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 \
    build/torch-venv/bin/python bench/pool_torch.py"""
import time

import torch


def median_us(f):
    us = []
    for _ in range(200):
        s = time.perf_counter()
        f()
        us.append((time.perf_counter() - s) * 1e6)
    us.sort()
    return us[len(us) // 2]


torch.set_num_threads(2)
x, y, o = torch.rand(1024, 256), torch.rand(1024, 256), torch.rand(1024, 256)
ops = [("x + y", lambda: x + y), ("x * y", lambda: x * y),
       ("x / y", lambda: x / y), ("x.sqrt()", lambda: x.sqrt()),
       ("x.exp()", lambda: x.exp()),
       ("gelu(x)", lambda: torch.nn.functional.gelu(x)),
       ("o.mul_(0.99)", lambda: o.mul_(0.99)),
       ("o.lerp_(x, 0.1)", lambda: o.lerp_(x, 0.1)),
       ("o.addcdiv_(x, y, -1e-3)", lambda: o.addcdiv_(x, y, value=-1e-3))]
print("| op | torch us |\n|---|---|")
for name, f in ops:
    print("| %s | %.1f |" % (name, median_us(f)))
