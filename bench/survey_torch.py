# The PyTorch side of bench/bench_survey.cpp (same calls, names and inputs).
import time, statistics, torch
import torch.nn.functional as F
torch.set_num_threads(2)
torch.manual_seed(0)
torch.set_grad_enabled(False)
x = torch.randn(1024, 1024); y = torch.randn(1024, 1024)
I = torch.randint(0, 1024, (512,)); G2 = torch.randint(0, 1024, (1024, 64))
M = x > 0; XH = x.half(); Y512 = y[:512].contiguous()
table = torch.randn(30000, 512); I2 = torch.randint(0, 30000, (4096,)); IB = torch.randint(0, 1000, (4096,))
img = torch.randn(8, 32, 56, 56); wc = torch.randn(64, 32, 3, 3); bc = torch.randn(64)
Tg = torch.randint(0, 1024, (1024,)); a3 = torch.randn(64, 128, 64); b3 = torch.randn(64, 64, 128); s256 = torch.randn(256, 256)
def bench(f):
    f(); f()
    v = []; start = time.perf_counter()
    for i in range(200):
        t0 = time.perf_counter(); f(); v.append((time.perf_counter() - t0) * 1e3)
        if i >= 5 and time.perf_counter() - start > 0.4: break
    v.sort(); return v[len(v) // 2]
cases = [
 ("add", lambda: x + y), ("mul_scalar", lambda: x * 2.5), ("div", lambda: x / y), ("exp", lambda: x.exp()),
 ("log", lambda: x.abs().log()), ("sin", lambda: x.sin()), ("tanh", lambda: x.tanh()), ("sigmoid", lambda: x.sigmoid()),
 ("gelu", lambda: F.gelu(x)), ("pow2", lambda: x.pow(2)), ("pow_t", lambda: x.abs().pow(y)), ("atan2", lambda: torch.atan2(x, y)),
 ("remainder", lambda: x.remainder(y)), ("round", lambda: x.round()), ("sum_all", lambda: x.sum()), ("sum_dim0", lambda: x.sum(0)),
 ("sum_dim1", lambda: x.sum(1)), ("mean_dim1", lambda: x.mean(1)), ("max_dim1", lambda: x.max(1)[0]), ("argmax1", lambda: x.argmax(1)),
 ("var1", lambda: x.var(1)), ("norm", lambda: x.norm()), ("logsumexp1", lambda: x.logsumexp(1)), ("cumsum1", lambda: x.cumsum(1)),
 ("cumsum0", lambda: x.cumsum(0)), ("softmax1", lambda: x.softmax(1)), ("log_softmax1", lambda: x.log_softmax(1)),
 ("transpose_contig", lambda: x.t().contiguous()), ("cat0", lambda: torch.cat([x, y], 0)), ("stack", lambda: torch.stack([x, y])),
 ("repeat", lambda: x.repeat(2, 1)), ("flip0", lambda: x.flip(0)), ("roll", lambda: x.roll(5, 1)), ("tril", lambda: x.tril()),
 ("index_select", lambda: x.index_select(0, I)), ("gather", lambda: x.gather(1, G2)), ("scatter_add", lambda: x.scatter_add(1, G2, y)),
 ("index_add", lambda: x.index_add(0, I, Y512)), ("masked_select", lambda: x.masked_select(M)), ("nonzero", lambda: M.nonzero()),
 ("sort1", lambda: x.sort(1)[0]), ("topk1", lambda: x.topk(10, 1)[0]), ("where_t", lambda: torch.where(M, x, y)),
 ("masked_fill", lambda: x.masked_fill(M, 0.0)), ("clamp", lambda: x.clamp(-0.5, 0.5)), ("to_half", lambda: x.half()),
 ("half_to_float", lambda: XH.float()), ("embedding", lambda: F.embedding(I2, table)), ("one_hot", lambda: F.one_hot(IB, 1000)),
 ("layer_norm", lambda: F.layer_norm(x, (1024,))), ("mm256", lambda: s256 @ s256), ("conv2d", lambda: F.conv2d(img, wc, bc, padding=1)),
 ("max_pool2d", lambda: F.max_pool2d(img, 2)), ("avg_pool2d", lambda: F.avg_pool2d(img, 2)), ("cross_entropy", lambda: F.cross_entropy(x, Tg)),
 ("mse", lambda: F.mse_loss(x, y)), ("dropout", lambda: F.dropout(x, 0.5, True)), ("randperm", lambda: torch.randperm(1 << 20)),
 ("bmm", lambda: torch.bmm(a3, b3)), ("einsum", lambda: torch.einsum("ij,ij->i", x, y)), ("pad", lambda: F.pad(x, (2, 2, 2, 2))),
 ("index_tensor", lambda: x[I]), ("index_put", lambda: x.clone().index_put_((I,), Y512)), ("adv_index_2d", lambda: x[I, I]),
 ("sort_flat", lambda: x.flatten().sort(0)[0]), ("randn", lambda: torch.randn(1024, 1024)), ("rand", lambda: torch.rand(1024, 1024)),
 ("arange", lambda: torch.arange(1 << 20)), ("max_all", lambda: x.max()), ("std1", lambda: x.std(1)), ("prod1", lambda: x.prod(1)),
 ("any", lambda: M.any()), ("isnan", lambda: x.isnan()), ("allclose", lambda: torch.allclose(x, y)), ("eq", lambda: x == y),
 ("copy_strided", lambda: x.t().clone()), ("expand_contig", lambda: x[:1].expand(1024, 1024).contiguous()),
 ("unfold", lambda: x.unfold(1, 8, 8).contiguous()), ("tensor_sum_half", lambda: XH.sum()),
 ("bce_logits", lambda: F.binary_cross_entropy_with_logits(x, M.float())),
]
s0 = torch.tensor(1.5); YH = y.half(); s0h = s0.half()
cases += [
 ("add_0dim", lambda: x + s0), ("half_add", lambda: XH + YH), ("half_mul_0dim", lambda: XH * s0h),
 ("half_where_0dim", lambda: torch.where(M, XH, s0h)), ("half_gt", lambda: XH > YH),
]
for name, f in cases:
    print(name, "%.4f" % bench(f))
