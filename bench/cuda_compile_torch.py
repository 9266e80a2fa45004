"""PyTorch eager and torch.compile (Inductor, Triton) on the cases of
bench/bench_cuda_compile.cpp, timed the same way (5 warm-ups, the first
compiling; 30 repetitions each timed with CUDA events; median, range,
bandwidth of the bytes each case must move at least). Run on the GPU
machine beside gpu-bundle/run.sh bench."""
import sys

import torch
import torch.nn.functional as F

from cuda_torch import time_ms
from vs_torch import train_step


def row(name, how, nbytes, run):
    try:
        med, lo, hi = time_ms(run)
        gbs = f"{nbytes / (med * 1e-3) / 1e9:.1f}" if nbytes else ""
        print(f"| {name:30} | {how:8} | {med:9.3f} | {lo:7.3f}-{hi:<7.3f} | "
              f"{gbs:>8} |", flush=True)
    except Exception as e:  # a case that fails prints why; the run goes on
        print(f"| {name:30} | {how:8} | error: {str(e)[:300]} |", flush=True)


def gelu(x, w, b):
    return F.gelu(x * w + b)


def chain(x):
    y = x * 1.5 + 0.5
    y = y.sin() * y
    y = y.tanh() - 0.25
    y = y.sigmoid() * x
    return y.exp()


def softmax(x):
    return x.softmax(-1)


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


print(f"device: {torch.cuda.get_device_name(0)} (torch {torch.__version__})\n")
print(f"| {'case (float32)':30} | {'how':8} | {'median ms':>9} | {'range ms':>15} | {'GB/s':>8} |")
print(f"|{'-' * 32}|{'-' * 10}|{'-' * 11}|{'-' * 17}|{'-' * 10}|")
# --training: only the training steps (as bench_cuda_compile --training).
training_only = "--training" in sys.argv[1:]
if not training_only:
    torch.manual_seed(0)
    R = C = 16384
    f = 4.0 * R * C
    x = torch.randn(R, C, device="cuda")
    w = torch.randn(C, device="cuda")
    b = torch.randn(C, device="cuda")
    out = torch.empty(R, C, device="cuda")
    row("copy_ 2^28", "eager", 2 * f, lambda: out.copy_(x))
    cgelu, cchain = torch.compile(gelu), torch.compile(chain)
    row("gelu(x*w+b) 2^28", "eager", 2 * f, lambda: gelu(x, w, b))
    row("gelu(x*w+b) 2^28", "compiled", 2 * f, lambda: cgelu(x, w, b))
    row("8-op chain 2^28", "eager", 2 * f, lambda: chain(x))
    row("8-op chain 2^28", "compiled", 2 * f, lambda: cchain(x))
    del x, w, b, out

    R = C = 8192
    f = 4.0 * R * C
    x = torch.randn(R, C, device="cuda")
    g = torch.randn(R, C, device="cuda")
    w = torch.randn(C, device="cuda")
    b = torch.randn(C, device="cuda")
    csoftmax, clayer_norm = torch.compile(softmax), torch.compile(layer_norm)
    with torch.no_grad():
        row("softmax 8192^2", "eager", 2 * f, lambda: softmax(x))
        row("softmax 8192^2", "compiled", 2 * f, lambda: csoftmax(x))
        row("layer_norm 8192^2", "eager", 2 * f, lambda: layer_norm(x, w, b))
        row("layer_norm 8192^2", "compiled", 2 * f, lambda: clayer_norm(x, w, b))
    xg = x.detach().requires_grad_()
    wg = w.detach().requires_grad_()
    bg = b.detach().requires_grad_()
    tsoftmax, tlayer_norm = torch.compile(softmax), torch.compile(layer_norm)


    def step(fn, ln):
        y = fn(xg, wg, bg) if ln else fn(xg)
        y.backward(g)
        xg.grad = wg.grad = bg.grad = None


    row("softmax fwd+bwd 8192^2", "eager", 5 * f, lambda: step(softmax, False))
    row("softmax fwd+bwd 8192^2", "compiled", 5 * f, lambda: step(tsoftmax, False))
    row("layer_norm fwd+bwd 8192^2", "eager", 5 * f, lambda: step(layer_norm, True))
    row("layer_norm fwd+bwd 8192^2", "compiled", 5 * f, lambda: step(tlayer_norm, True))
    del x, g, w, b, xg, wg, bg


    def chain64(x):
        y = x
        for _ in range(32):
            y = y * 0.999 + 0.001
        return y


    # CUDA graphs: torch.compile's mode="reduce-overhead" (Inductor's fused
    # kernel in a CUDA graph; its outputs are overwritten by the next replay,
    # so each is cloned, as a caller keeping them must).
    s = torch.randn(1024, device="cuda")
    f = 4.0 * 1024
    cc = torch.compile(chain64)
    cg = torch.compile(chain64, mode="reduce-overhead")
    with torch.no_grad():
        row("64-op chain 1024 floats", "eager", 2 * f, lambda: chain64(s))
        row("64-op chain 1024 floats", "compiled", 2 * f, lambda: cc(s))
        row("64-op chain 1024 floats", "O2 graph", 2 * f, lambda: cg(s).clone())


# Training steps, as bench_cuda_compile's: eagerly, and with the loss and
# the optimizer step compiled.
def steps(name, lf, o, x, t):
    row(name, "eager", 0, train_step(lf, o.step, o, x, t))
    row(name, "compiled", 0,
        train_step(torch.compile(lf), torch.compile(o.step), o, x, t))
    # mode="reduce-overhead": the loss's forward and backward as CUDA graphs
    # (cudagraph trees); the step compiled as above.
    row(name, "cudagraph", 0,
        train_step(torch.compile(lf, mode="reduce-overhead"),
                   torch.compile(o.step), o, x, t))


torch.manual_seed(1)
mlp = torch.nn.Sequential(
    torch.nn.Linear(784, 1024), torch.nn.ReLU(),
    torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
    torch.nn.Linear(1024, 10)).cuda()
mopt = torch.optim.SGD(mlp.parameters(), lr=0.01, momentum=0.9)
steps("MLP SGD step b256", lambda x, t: F.cross_entropy(mlp(x), t), mopt,
      torch.randn(256, 784, device="cuda"),
      torch.randint(0, 10, (256,), device="cuda"))


def transformer(name, layers, d, heads, seq):
    torch.manual_seed(2)
    enc = torch.nn.Sequential(*[torch.nn.TransformerEncoderLayer(
        d, heads, 4 * d, dropout=0.0, activation="gelu", batch_first=True,
        norm_first=True) for _ in range(layers)]).cuda()
    topt = torch.optim.AdamW(enc.parameters(), lr=1e-4)
    steps(name, lambda x, t: F.mse_loss(enc(x), t), topt,
          torch.randn(8, seq, d, device="cuda"),
          torch.randn(8, seq, d, device="cuda"))


transformer("encoder 4x256 AdamW step", 4, 256, 4, 128)
transformer("encoder 2x1024 AdamW step", 2, 1024, 16, 512)
