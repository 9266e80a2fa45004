// ember-remat (passes/Passes.td): splits a joint forward/backward function
// into a forward that also returns the tensors saved for backward and a
// backward that recomputes the rest.
#include "passes/Passes.h"

#include "eager/OpTraits.h"
#include "ir/Queries.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <limits>
#include <queue>

namespace ember::passes {

#define GEN_PASS_DEF_REMAT
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

// Note [Partitioning the joint graph]
// A joint function (AOTAutograd's) takes the primals and, marked
// `{ember.tangent}`, the gradients of its forward results; it returns the
// first `ember.forward_results` results (the forward's) and then the
// gradients. An op is a *backward* op when it reads a tangent, directly or
// through other ops; every other op is a *forward* op, which the forward
// runs when a forward result needs it. The backward needs some forward
// values (*needed*: read by a backward op, or returned as a gradient).
// Each is either saved (returned by the forward, passed to the backward) or
// recomputed by the backward from saved values; primals and constants are
// free to save (the caller holds the primals anyway), except a primal the
// call itself made (`{ember.fresh}`: a factory's result, a generator
// state), which costs its bytes and cannot be recomputed. Which forward
// ops the
// backward recomputes follows from the saved set: every needed value that
// is not saved, and transitively the operands of those ops that are not
// saved either (the closure). An op that reads an argument the graph
// writes (`ember.mutations`) is never recomputed: the backward would read
// the written value. Ops with effects are never recomputed either: a
// random op with effects (a table op with a Generator argument, or a call
// captured as ember.eager_call) would draw fresh numbers, not the
// forward's. ember's own random numbers (rand, randn, randint, hence
// dropout) are pure ops of a (seed, offset) input, recomputed with the
// forward's values like any other op (Note [Random ops in a compiled
// function] in eager/Factory.cpp).
//
// Without a budget the saved set is a minimum cut over bytes (as
// AOTAutograd's min-cut partitioner): each forward value is a node split
// in two by an edge of its size in bytes, operands feed their users with
// infinite capacity, primals and constants hang off the source at no cost,
// needed values reach the sink. Only cheap ops may be recomputed there:
// pointwise ops, views and conversions whose result the forward does not
// materialize anyway (it is not a forward result and no matmul, reduction or
// other kernel of the forward reads it) -- the chains that fusion keeps in
// registers. A value the forward writes to memory regardless is saved
// rather than recomputed: saving costs memory, recomputing also time.
// Results of ops marked `ember.recompute` (recorded in a checkpoint()
// region) are never saved, under any budget: the backward recomputes them
// whatever they cost (unless they have effects).
//
// With `memory-budget` (bytes of saved values other than primals), the
// saved set is the one with the least estimated recompute cost (FLOPs)
// whose bytes fit, ties to fewer bytes: a knapsack over the forward values
// with a cost, solved exactly by a depth-first search over the subsets that
// fit (up to 20 candidates; views, whose recompute costs nothing, are not
// candidates), greedily beyond (Note [Recompute spans]). Any op without
// effects may then be recomputed, matmuls too when the budget forces it. A
// smaller budget can only raise the cost and lower the saved bytes. A
// budget that no saved set meets (the values of ops with effects alone
// exceed it) gives the smallest set that works, marked `ember.over_budget`.
//
// Note [Recompute spans]
// The bytes saved are what the forward leaves for the backward, but not
// all the backward holds: a recomputed value lives from its recomputation
// (just before its first reader) to its last reader, and a value whose
// recomputation needs other recomputed values that the backward reads
// later brings them to life with it. In a residual chain h' = h + f(h)
// with no h saved, the backward's first step recomputes every h at once:
// the step's peak is save-all's, whatever the budget. The *span* of a
// group of recomputed ops joined through their operands is the bytes of
// the needed values among them, live together; the backward's activation
// peak is about the saved bytes plus the largest span. So the greedy pass
// (all candidates the backward reads saved, then one dropped at a time
// until the rest fits) prefers the drops whose group's span stays within
// an allowance (a sixteenth of the save-all bytes, at least two of the
// largest candidates), among them the one whose removal costs the fewest
// FLOPs per byte freed, and otherwise the drop with the smallest span:
// saved values end up spaced along a chain (checkpoints every few layers,
// each segment recomputed when the backward reaches it), and the step's
// peak falls with the budget. The exact search minimizes FLOPs alone: its
// graphs are small.

constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;
/// The knapsack is solved exactly up to this many candidates.
constexpr size_t kExactCandidates = 20;
/// The greedy budget pass lets recompute spans grow to this fraction of
/// the save-all bytes freely (Note [Recompute spans]).
constexpr int64_t kSpanFraction = 16;

int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? kInf : std::min(r, kInf);
}
int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? kInf : std::min(r, kInf);
}

int64_t numel_of(Value v) {
  int64_t n = 1;
  for (int64_t d : llvm::cast<RankedTensorType>(v.getType()).getShape())
    n = sat_mul(n, d);
  return n;
}

/// The bytes a value holds.
int64_t bytes_of(Value v) {
  if (!llvm::isa<RankedTensorType>(v.getType()))
    return 8;
  return sat_mul(numel_of(v),
                 int64_t(elementSize(ir::value_type(v.getType()).dtype)));
}

/// Adds to `ops` the ops that `values` need, transitively (up to the ops
/// already in it).
void add_cone(llvm::SmallVector<Value> values,
              llvm::DenseSet<Operation *> &ops) {
  while (!values.empty()) {
    Operation *d = values.pop_back_val().getDefiningOp();
    if (d && ops.insert(d).second)
      values.append(d->operand_begin(), d->operand_end());
  }
}

/// An op with effects: random ops (a table op with a generator, or one
/// captured as ember.eager_call, whose effects are unknown) and anything
/// else not free of memory effects. Recomputing it would not give the
/// forward's values.
bool has_effects(Operation *op) { return !isMemoryEffectFree(op); }

bool is_view(Operation *op) { return op->hasTrait<ir::OpTrait::View>(); }

/// Pointwise ops, views, conversions and constants: what fusion keeps in
/// registers, cheap to recompute.
bool is_cheap(Operation *op) {
  return llvm::isa<ir::ConstantOp>(op) ||
         op->hasTrait<ir::OpTrait::Pointwise>() || is_view(op) ||
         op->hasTrait<ir::OpTrait::Conversion>();
}

/// An estimate of the FLOPs of `op`: 2 * numel * K for a contraction,
/// the operand's size for a reduction, nothing for views and constants,
/// the result's size for the rest.
int64_t flops_of(Operation *op) {
  if (op->getNumResults() == 0 || llvm::isa<ir::ConstantOp>(op) || is_view(op))
    return 0;
  if (const OperatorHandle *h = ir::table_op(op)) {
    int c = contraction_arg(*h);
    if (c >= 0) {
      auto groups = ir::operand_groups(h->schema(), op->getNumOperands(),
                                       op->getAttrDictionary());
      Value m = op->getOperand(groups[size_t(c)].begin);
      auto shape = llvm::cast<RankedTensorType>(m.getType()).getShape();
      int64_t k = shape.empty() ? 1 : shape.back();
      return sat_mul(2, sat_mul(numel_of(op->getResult(0)), k));
    }
  }
  if (op->hasTrait<ir::OpTrait::Reduction>() && op->getNumOperands() > 0)
    return numel_of(op->getOperand(0));
  int64_t n = 0;
  for (Value r : op->getResults())
    if (llvm::isa<RankedTensorType>(r.getType()))
      n = sat_add(n, numel_of(r));
  return n;
}

/// Maximum flow by Dinic's algorithm, and the source side of a minimum cut.
class MaxFlow {
public:
  explicit MaxFlow(int n) : adj_(size_t(n)) {}
  void add(int from, int to, int64_t cap) {
    adj_[size_t(from)].push_back(int(edges_.size()));
    edges_.push_back({to, cap});
    adj_[size_t(to)].push_back(int(edges_.size()));
    edges_.push_back({from, 0});
  }
  /// Runs the flow; returns per node whether it is on the source side.
  std::vector<bool> min_cut(int s, int t) {
    while (bfs(s, t)) {
      it_.assign(adj_.size(), 0);
      while (dfs(s, t, kInf) > 0) {
      }
    }
    std::vector<bool> side(adj_.size(), false);
    for (size_t i = 0; i < adj_.size(); ++i)
      side[i] = level_[i] >= 0;
    return side;
  }

private:
  struct Edge {
    int to;
    int64_t cap;
  };
  bool bfs(int s, int t) {
    level_.assign(adj_.size(), -1);
    std::queue<int> q;
    level_[size_t(s)] = 0;
    q.push(s);
    while (!q.empty()) {
      int u = q.front();
      q.pop();
      for (int e : adj_[size_t(u)])
        if (edges_[size_t(e)].cap > 0 &&
            level_[size_t(edges_[size_t(e)].to)] < 0) {
          level_[size_t(edges_[size_t(e)].to)] = level_[size_t(u)] + 1;
          q.push(edges_[size_t(e)].to);
        }
    }
    return level_[size_t(t)] >= 0;
  }
  int64_t dfs(int u, int t, int64_t f) {
    if (u == t)
      return f;
    for (size_t &i = it_[size_t(u)]; i < adj_[size_t(u)].size(); ++i) {
      int e = adj_[size_t(u)][i];
      Edge &ed = edges_[size_t(e)];
      if (ed.cap <= 0 || level_[size_t(ed.to)] != level_[size_t(u)] + 1)
        continue;
      int64_t got = dfs(ed.to, t, std::min(f, ed.cap));
      if (got > 0) {
        ed.cap -= got;
        edges_[size_t(e ^ 1)].cap += got;
        return got;
      }
    }
    return 0;
  }
  std::vector<std::vector<int>> adj_;
  std::vector<Edge> edges_;
  std::vector<int> level_;
  std::vector<size_t> it_;
};

/// Argument `i` of `fn` is a tangent: `{ember.tangent}` (or `= true`).
bool is_tangent(func::FuncOp fn, unsigned i) {
  Attribute a = fn.getArgAttr(i, "ember.tangent");
  if (auto b = llvm::dyn_cast_or_null<BoolAttr>(a))
    return b.getValue();
  return a && llvm::isa<UnitAttr>(a);
}

/// A new function `name` (inserted at `b`, which moves past it) whose
/// arguments stand for `ins`, running clones of `ops` in order and
/// returning `outs`.
func::FuncOp outline(OpBuilder &b, Location loc, StringRef name,
                     ArrayRef<Value> ins, ArrayRef<Operation *> ops,
                     ArrayRef<Value> outs) {
  llvm::SmallVector<Type> in_types, out_types;
  for (Value v : ins)
    in_types.push_back(v.getType());
  for (Value v : outs)
    out_types.push_back(v.getType());
  auto fn = b.create<func::FuncOp>(
      loc, name, FunctionType::get(b.getContext(), in_types, out_types));
  Block *blk = fn.addEntryBlock();
  IRMapping map;
  for (auto [v, a] : llvm::zip(ins, blk->getArguments()))
    map.map(v, a);
  OpBuilder body = OpBuilder::atBlockEnd(blk);
  for (Operation *op : ops)
    body.clone(*op, map);
  llvm::SmallVector<Value> mapped;
  for (Value v : outs)
    mapped.push_back(map.lookupOrDefault(v));
  body.create<func::ReturnOp>(loc, mapped);
  b.setInsertionPointAfter(fn);
  return fn;
}

/// One joint function, classified (Note [Partitioning the joint graph]).
class Joint {
public:
  Joint(func::FuncOp fn, unsigned forward_results)
      : fn_(fn), nfwd_(forward_results) {}

  /// An op the backward cannot recompute: it has effects, or it reads an
  /// argument the graph writes (`ember.mutations`), whose value the backward
  /// would see written already.
  bool pinned(Operation *op) const {
    return has_effects(op) || llvm::any_of(op->getOperands(), [&](Value v) {
             auto a = llvm::dyn_cast<BlockArgument>(v);
             return a && mutated_.contains(a.getArgNumber());
           });
  }

  /// The checkpoint() region `op` was recorded in (`ember.recompute = N`;
  /// a unit attribute is one region, -1), or 0.
  static int64_t region_of(Operation *op) {
    Attribute a = op->getAttr("ember.recompute");
    if (!a)
      return 0;
    if (auto i = llvm::dyn_cast<IntegerAttr>(a))
      return i.getInt();
    return -1;
  }

  /// Inside a checkpoint() region: the backward recomputes it whatever it
  /// costs, unless it is pinned (Note [Checkpoint regions in a compiled
  /// function] in eager/autograd/Checkpoint.cpp). A region's outputs --
  /// read by the forward's own ops outside it, or results of the forward --
  /// are not forced: eager checkpoint keeps its output as any tensor, and
  /// they are where the backward's recomputation of a chain of regions
  /// starts from.
  bool forced(Operation *op) const {
    if (!op || pinned(op))
      return false;
    int64_t r = region_of(op);
    if (r == 0)
      return false;
    for (Value v : op->getResults())
      for (OpOperand &u : v.getUses()) {
        Operation *o = u.getOwner();
        if (o == ret_ ? u.getOperandNumber() < nfwd_
                      : main_.contains(o) && region_of(o) != r)
          return false;
      }
    return true;
  }

  /// A value the backward reads at no cost when saved: an argument the
  /// caller holds anyway (not one the call made: `ember.fresh`).
  bool free_to_save(Value v) const {
    auto a = llvm::dyn_cast<BlockArgument>(v);
    return a && !fresh_.contains(a.getArgNumber());
  }

  LogicalResult classify() {
    if (auto m = fn_->getAttrOfType<DenseI64ArrayAttr>("ember.mutations"))
      for (int64_t i : m.asArrayRef())
        mutated_.insert(unsigned(i));
    for (BlockArgument a : fn_.getArguments())
      if (fn_.getArgAttr(a.getArgNumber(), "ember.fresh"))
        fresh_.insert(a.getArgNumber());
    Block &body = fn_.getBody().front();
    for (BlockArgument a : body.getArguments())
      if (is_tangent(fn_, a.getArgNumber()))
        tangent_values_.insert(a);
    for (Operation &op : body.without_terminator()) {
      if (op.getNumRegions() != 0)
        return op.emitError("ember-remat: ops with regions (fusions) are not "
                            "partitioned; run ember-remat before "
                            "ember-fuse-elementwise");
      bool bw = llvm::any_of(op.getOperands(), [&](Value v) {
        return tangent_values_.contains(v);
      });
      if (bw) {
        backward_.push_back(&op);
        for (Value r : op.getResults())
          tangent_values_.insert(r);
      } else {
        forward_.push_back(&op);
      }
    }
    Operation *ret = body.getTerminator();
    ret_ = ret;
    for (unsigned i = 0; i < nfwd_; ++i)
      if (tangent_values_.contains(ret->getOperand(i)))
        return fn_.emitError("ember-remat: forward result ")
               << i << " depends on a tangent";
    // The forward's own ops: those its results need (the rest of the
    // forward ops are derivative formulas that read forward values only).
    add_cone({ret->operand_begin(), ret->operand_begin() + nfwd_}, main_);
    // Backward ops no gradient needs are dropped: what they read is not
    // saved for them.
    llvm::DenseSet<Operation *> backward(backward_.begin(), backward_.end());
    llvm::DenseSet<Operation *> live;
    llvm::SmallVector<Value> grads(ret->operand_begin() + nfwd_,
                                   ret->operand_end());
    while (!grads.empty()) {
      Operation *d = grads.pop_back_val().getDefiningOp();
      if (d && backward.contains(d) && live.insert(d).second)
        grads.append(d->operand_begin(), d->operand_end());
    }
    llvm::erase_if(backward_,
                   [&](Operation *op) { return !live.contains(op); });
    // The forward values the backward reads.
    auto need = [&](Value v) {
      if (!tangent_values_.contains(v))
        needed_.insert(v);
    };
    for (Operation *op : backward_)
      for (Value v : op->getOperands())
        need(v);
    for (unsigned i = nfwd_; i < ret->getNumOperands(); ++i)
      need(ret->getOperand(i));
    // Materialized forward values (the default recomputes none of them).
    for (unsigned i = 0; i < nfwd_; ++i)
      materialized_.insert(ret->getOperand(i));
    // (pointwise ops, views, conversions and reductions read their
    // producers inside one kernel; anything else reads memory)
    for (Operation *op : forward_)
      if (!is_cheap(op) && !op->hasTrait<ir::OpTrait::Reduction>())
        for (Value v : op->getOperands())
          materialized_.insert(v);
    return success();
  }

  /// The saved set by a minimum cut (no budget).
  llvm::SetVector<Value> min_cut() {
    // Nodes: 0 source, 1 sink, then per value (in, out).
    llvm::DenseMap<Value, int> id;
    llvm::SmallVector<Value> values;
    auto node = [&](Value v) {
      auto [it, fresh] = id.try_emplace(v, int(values.size()));
      if (fresh)
        values.push_back(v);
      return it->second;
    };
    for (BlockArgument a : fn_.getArguments())
      if (!tangent_values_.contains(a))
        node(a);
    for (Operation *op : forward_)
      for (Value r : op->getResults())
        node(r);
    MaxFlow g(2 + 2 * int(values.size()));
    auto in = [&](Value v) { return 2 + 2 * id.lookup(v); };
    auto out = [&](Value v) { return 3 + 2 * id.lookup(v); };
    for (Value v : values) {
      Operation *d = v.getDefiningOp();
      // (an argument the call made costs its bytes, and is never
      // recomputed)
      bool free = free_to_save(v) || (d && llvm::isa<ir::ConstantOp>(d));
      g.add(in(v), out(v), free ? 0 : forced(d) ? kInf : bytes_of(v));
      bool banned =
          !free &&
          (!d || (!forced(d) && (!is_cheap(d) || pinned(d) ||
                                 llvm::any_of(d->getResults(), [&](Value r) {
                                   return materialized_.contains(r);
                                 }))));
      if (free || banned)
        g.add(0, in(v), kInf);
      if (d)
        for (Value o : d->getOperands())
          g.add(out(o), in(v), kInf);
      if (needed_.contains(v))
        g.add(out(v), 1, kInf);
    }
    std::vector<bool> side = g.min_cut(0, 1);
    llvm::SetVector<Value> saved;
    for (Value v : values) {
      Operation *d = v.getDefiningOp();
      if (side[size_t(in(v))] && !side[size_t(out(v))] &&
          !(d && llvm::isa<ir::ConstantOp>(d)))
        saved.insert(v);
    }
    return saved;
  }

  /// What the backward recomputes when `saved` (values) are saved: ops in
  /// program order; false when a random op would be recomputed.
  bool closure(const llvm::DenseSet<Value> &saved,
               llvm::SetVector<Operation *> &ops,
               llvm::SetVector<Value> &used_saved) const {
    llvm::DenseSet<Operation *> seen;
    llvm::SmallVector<Value> work(needed_.begin(), needed_.end());
    while (!work.empty()) {
      Value v = work.pop_back_val();
      Operation *d = v.getDefiningOp();
      if (!d || saved.contains(v)) {
        used_saved.insert(v);
        continue;
      }
      if (!seen.insert(d).second)
        continue;
      if (pinned(d))
        return false;
      work.append(d->operand_begin(), d->operand_end());
    }
    for (Operation *op : forward_)
      if (seen.contains(op))
        ops.insert(op);
    return true;
  }

  /// The backward's side of a saved set: what it recomputes and which
  /// saved values (primals included) it reads; the bytes of those saved
  /// values (primals free: a saved value nothing reads is not saved) and
  /// the FLOPs of the recomputation. `ok` is false when an op with effects
  /// would be recomputed.
  struct Plan {
    bool ok = false;
    llvm::SetVector<Operation *> recompute;
    llvm::SetVector<Value> used;
    int64_t bytes = 0, flops = 0;
  };
  Plan plan(const llvm::DenseSet<Value> &saved) const {
    Plan p;
    p.ok = closure(saved, p.recompute, p.used);
    if (!p.ok)
      return p;
    for (Value v : p.used)
      if (!free_to_save(v))
        p.bytes = sat_add(p.bytes, bytes_of(v));
    for (Operation *op : p.recompute)
      p.flops = sat_add(p.flops, flops_of(op));
    return p;
  }

  /// The saved set under a budget (bytes of saved op results).
  llvm::SetVector<Value> knapsack(int64_t budget, bool &over) {
    // Candidates: results of forward ops that the backward may read, except
    // constants and views (recomputed for nothing).
    llvm::SmallVector<Value> cand;
    llvm::DenseSet<Operation *> cone;
    add_cone({needed_.begin(), needed_.end()}, cone);
    for (Operation *op : forward_)
      if (cone.contains(op) && !llvm::isa<ir::ConstantOp>(op) && !is_view(op) &&
          !forced(op))
        for (Value r : op->getResults())
          cand.push_back(r);

    struct Best {
      bool found = false;
      int64_t flops = kInf, bytes = kInf;
      llvm::DenseSet<Value> set;
    } best, smallest;
    auto consider = [&](const llvm::DenseSet<Value> &s, const Plan &p) {
      if (!p.ok)
        return;
      if (p.bytes <= budget &&
          (!best.found || p.flops < best.flops ||
           (p.flops == best.flops && p.bytes < best.bytes)))
        best = {true, p.flops, p.bytes, s};
      if (!smallest.found || p.bytes < smallest.bytes ||
          (p.bytes == smallest.bytes && p.flops < smallest.flops))
        smallest = {true, p.flops, p.bytes, s};
    };
    if (cand.size() <= kExactCandidates) {
      llvm::DenseSet<Value> s;
      std::function<void(size_t, int64_t)> dfs = [&](size_t i, int64_t bytes) {
        if (i == cand.size()) {
          consider(s, plan(s));
          return;
        }
        // Saving more never costs more FLOPs: no set below this node beats
        // the one that saves all the rest. Once a set fits, a node whose
        // bound is worse than it (or that cannot work at all) is pruned.
        if (best.found && i > 0) {
          llvm::DenseSet<Value> all = s;
          all.insert(cand.begin() + long(i), cand.end());
          Plan bound = plan(all);
          if (!bound.ok || bound.flops > best.flops)
            return;
        }
        // (saving first: a set that fits with few FLOPs comes early)
        int64_t b = sat_add(bytes, bytes_of(cand[i]));
        // Past the budget only the smallest working set is of interest:
        // sets with more bytes than it are pruned.
        if (b <= budget || !smallest.found || b < smallest.bytes) {
          s.insert(cand[i]);
          dfs(i + 1, b);
          s.erase(cand[i]);
        }
        dfs(i + 1, bytes);
      };
      dfs(0, 0);
    } else {
      // Greedy: all candidates the backward reads saved, then drop one at a
      // time until the rest fits (Note [Recompute spans]). Dropping a value
      // only adds to the recomputation (its op, and the operands of it that
      // are neither saved nor recomputed yet), so each candidate's cost is
      // found locally from the current plan.
      llvm::DenseSet<Value> s(cand.begin(), cand.end());
      Plan p = plan(s);
      llvm::DenseSet<Operation *> rec(p.recompute.begin(), p.recompute.end());
      llvm::DenseSet<Value> used(p.used.begin(), p.used.end());
      // (a sixteenth of what saving everything takes, at least two of the
      // largest candidates)
      int64_t largest = 0;
      for (Value v : cand)
        largest = std::max(largest, bytes_of(v));
      const int64_t span_allowance =
          std::max(p.bytes / kSpanFraction, sat_mul(2, largest));
      struct Delta {
        bool ok = true;
        int64_t flops = 0, bytes = 0;
        llvm::SmallVector<Operation *> ops;
        llvm::SmallVector<Value> reads;   ///< saved values newly read
        llvm::SmallVector<Value> unsaved; ///< unread saved values recomputed
      };
      // What dropping v (saved, read) from s adds: v is recomputed from the
      // values the backward reads already (primals, saved values it reads),
      // through any value it does not read yet, which saves v's bytes
      // outright; only a value of an op with effects is read instead.
      auto delta = [&](Value v) {
        Delta d;
        llvm::DenseSet<Operation *> seen;
        llvm::DenseSet<Value> newly;
        llvm::SmallVector<Operation *> work{v.getDefiningOp()};
        while (!work.empty() && d.ok) {
          Operation *op = work.pop_back_val();
          if (rec.contains(op) || !seen.insert(op).second)
            continue;
          if (pinned(op)) {
            d.ok = false;
            break;
          }
          d.ops.push_back(op);
          d.flops = sat_add(d.flops, flops_of(op));
          for (Value o : op->getOperands()) {
            Operation *od = o.getDefiningOp();
            bool read = !od || (o != v && s.contains(o) &&
                                (used.contains(o) || pinned(od)));
            if (read) {
              if (!used.contains(o) && newly.insert(o).second) {
                d.reads.push_back(o);
                if (!free_to_save(o))
                  d.bytes = sat_add(d.bytes, bytes_of(o));
              }
            } else {
              if (o != v && s.contains(o) && newly.insert(o).second)
                d.unsaved.push_back(o);
              work.push_back(od);
            }
          }
        }
        return d;
      };
      // The span of a drop (Note [Recompute spans]): the bytes of the
      // needed values in the group of recomputed ops that v's drop joins.
      auto span = [&](Value v, const Delta &d) {
        llvm::DenseSet<Operation *> fresh(d.ops.begin(), d.ops.end());
        // (constants and views of primals hold no activations: groups
        // sharing one are not joined through it)
        auto recomputed = [&](Operation *op) {
          return op && (rec.contains(op) || fresh.contains(op)) &&
                 !llvm::isa<ir::ConstantOp>(op) &&
                 !(is_view(op) && llvm::isa<BlockArgument>(op->getOperand(0)));
        };
        int64_t bytes = 0;
        llvm::DenseSet<Operation *> seen;
        llvm::SmallVector<Operation *> work{v.getDefiningOp()};
        while (!work.empty()) {
          Operation *op = work.pop_back_val();
          if (!seen.insert(op).second)
            continue;
          for (Value r : op->getResults()) {
            if (needed_.contains(r))
              bytes = sat_add(bytes, bytes_of(r));
            for (Operation *u : r.getUsers())
              if (recomputed(u))
                work.push_back(u);
          }
          for (Value o : op->getOperands())
            if (Operation *od = o.getDefiningOp(); recomputed(od))
              work.push_back(od);
        }
        return bytes;
      };
      for (;;) {
        consider(s, p);
        if (p.bytes <= budget)
          break;
        Value drop;
        Delta chosen;
        double best_ratio = std::numeric_limits<double>::infinity();
        int64_t best_span = kInf;
        bool best_frees = false;
        for (Value v : p.used) {
          if (!v.getDefiningOp() || !s.contains(v) || !used.contains(v))
            continue;
          Delta d = delta(v);
          if (!d.ok)
            continue;
          // Drops that free bytes come first (a drop that must save as
          // much as it frees, reading a value of a pinned op, helps only
          // when nothing else does), then those whose span stays within
          // the allowance, the fewest FLOPs per byte freed among them; else
          // the smallest span.
          int64_t net = bytes_of(v) - d.bytes;
          double ratio = net > 0 ? double(d.flops) / double(net)
                                 : std::numeric_limits<double>::max();
          int64_t sp = std::max(span(v, d), span_allowance);
          bool frees = net > 0;
          bool better =
              !drop ||
              (frees != best_frees
                   ? frees
                   : sp < best_span || (sp == best_span && ratio < best_ratio));
          if (better) {
            best_ratio = ratio;
            best_span = sp;
            best_frees = frees;
            drop = v;
            chosen = std::move(d);
          }
        }
        if (!drop)
          break;
        s.erase(drop);
        used.erase(drop);
        for (Value u : chosen.unsaved)
          s.erase(u);
        for (Operation *op : chosen.ops)
          rec.insert(op);
        for (Value r : chosen.reads)
          used.insert(r);
        p.bytes = sat_add(p.bytes - bytes_of(drop), chosen.bytes);
        p.flops = sat_add(p.flops, chosen.flops);
        p.used.remove(drop);
        for (Value r : chosen.reads)
          p.used.insert(r);
      }
    }
    over = !best.found;
    const llvm::DenseSet<Value> &pick = best.found ? best.set : smallest.set;
    return llvm::SetVector<Value>(pick.begin(), pick.end());
  }

  /// Replaces the joint function by `<name>_forward` and `<name>_backward`.
  void rewrite(const llvm::SetVector<Value> &chosen, bool over) {
    // (a chosen set always works: values of ops with effects are saved)
    Plan p = plan(llvm::DenseSet<Value>(chosen.begin(), chosen.end()));
    // Saved: in argument order, then in program order.
    llvm::SmallVector<Value> saved;
    for (BlockArgument a : fn_.getArguments())
      if (p.used.contains(a))
        saved.push_back(a);
    for (Operation *op : forward_)
      for (Value r : op->getResults())
        if (p.used.contains(r))
          saved.push_back(r);

    OpBuilder b(fn_);
    Operation *ret = fn_.getBody().front().getTerminator();
    std::string name = fn_.getSymName().str();
    llvm::SmallVector<Value> primals, tangents;
    for (BlockArgument a : fn_.getArguments())
      (tangent_values_.contains(a) ? tangents : primals).push_back(a);
    auto results = ret->getOperands();

    // The forward: the primals in; its results and the saved values out.
    llvm::SmallVector<Value> fwd_outs(results.begin(), results.begin() + nfwd_);
    fwd_outs.append(saved.begin(), saved.end());
    // It runs what its results need and every op with effects (which run
    // as eagerly, needed or not): its *main* ops; and what the saved values
    // need besides. Those *extra* ops (formulas of the backward that read
    // forward values only: relu's mask) run as soon as their operands are
    // there when that ends the life of an operand at least as large as
    // their results (relu's output, read last by its mask); the others run
    // at the end, so that what they make is not held across the forward.
    llvm::DenseSet<Operation *> main = main_;
    llvm::SmallVector<Value> effect_operands;
    for (Operation *op : forward_)
      if (has_effects(op) && main.insert(op).second)
        effect_operands.append(op->operand_begin(), op->operand_end());
    add_cone(std::move(effect_operands), main);
    llvm::DenseSet<Operation *> run = main;
    add_cone({saved.begin(), saved.end()}, run);
    llvm::DenseSet<Value> outs(fwd_outs.begin(), fwd_outs.end());
    llvm::DenseMap<Value, int> readers; // by ops of the forward not run yet
    for (Operation *op : forward_)
      if (run.contains(op))
        for (Value v : op->getOperands())
          ++readers[v];
    llvm::SmallVector<Operation *> fwd_ops, pending;
    llvm::DenseSet<Operation *> emitted;
    auto ready = [&](Operation *op) {
      return llvm::all_of(op->getOperands(), [&](Value v) {
        Operation *d = v.getDefiningOp();
        return !d || emitted.contains(d);
      });
    };
    auto frees = [&](Operation *op) {
      int64_t made = 0;
      for (Value r : op->getResults())
        made = sat_add(made, bytes_of(r));
      return llvm::any_of(op->getOperands(), [&](Value v) {
        return v.getDefiningOp() && !outs.contains(v) &&
               readers.lookup(v) == int(llvm::count(op->getOperands(), v)) &&
               bytes_of(v) >= made;
      });
    };
    auto emit = [&](Operation *op) {
      fwd_ops.push_back(op);
      emitted.insert(op);
      for (Value v : op->getOperands())
        --readers[v];
    };
    // (pending ops are in program order: one pass emits a chain of them)
    auto flush = [&](bool all) {
      for (auto it = pending.begin(); it != pending.end();)
        if (ready(*it) && (all || (*it)->getNumOperands() == 0 || frees(*it))) {
          emit(*it);
          it = pending.erase(it);
        } else {
          ++it;
        }
    };
    for (Operation *op : forward_)
      if (run.contains(op) && !main.contains(op))
        pending.push_back(op);
    flush(false);
    for (Operation *op : forward_) {
      if (!main.contains(op))
        continue;
      emit(op);
      flush(false);
    }
    flush(true);
    assert(pending.empty() && "an op of the forward was never ready");
    func::FuncOp fwd =
        outline(b, fn_.getLoc(), name + "_forward", primals, fwd_ops, fwd_outs);
    // (every result's attributes at once: setResultAttr per result is
    // quadratic in them)
    llvm::SmallVector<DictionaryAttr> result_attrs;
    for (unsigned r = 0; r < fwd.getNumResults(); ++r)
      result_attrs.push_back(fwd.getResultAttrDict(r)
                                 ? fwd.getResultAttrDict(r)
                                 : b.getDictionaryAttr({}));
    for (unsigned i = 0; i < saved.size(); ++i) {
      Value v = saved[i];
      auto a = llvm::dyn_cast<BlockArgument>(v);
      std::string what = a ? "argument " + std::to_string(a.getArgNumber())
                           : v.getDefiningOp()->getName().getStringRef().str();
      NamedAttrList attrs(result_attrs[nfwd_ + i]);
      attrs.set("ember.saved", b.getStringAttr(what));
      result_attrs[nfwd_ + i] = attrs.getDictionary(b.getContext());
    }
    fwd.setAllResultAttrs(result_attrs);
    fwd->setAttr("ember.saved_bytes", b.getI64IntegerAttr(p.bytes));
    fwd->setAttr("ember.forward_results", b.getI64IntegerAttr(nfwd_));
    if (over)
      fwd->setAttr("ember.over_budget", b.getUnitAttr());

    // The backward: the saved values and the tangents in; the gradients
    // out, after the recomputed forward ops.
    llvm::SmallVector<Value> bwd_ins(saved.begin(), saved.end());
    bwd_ins.append(tangents.begin(), tangents.end());
    // Each recomputed op just before its first reader (as late as
    // possible): recomputed values live only while the backward needs
    // them, not all at once from its start.
    llvm::SmallVector<Operation *> bwd_ops;
    llvm::DenseSet<Operation *> placed;
    std::function<void(Operation *)> place = [&](Operation *op) {
      if (!p.recompute.contains(op) || !placed.insert(op).second)
        return;
      for (Value v : op->getOperands())
        if (Operation *d = v.getDefiningOp())
          place(d);
      bwd_ops.push_back(op);
    };
    for (Operation *op : backward_) {
      for (Value v : op->getOperands())
        if (Operation *d = v.getDefiningOp())
          place(d);
      bwd_ops.push_back(op);
    }
    llvm::SmallVector<Value> grads(results.begin() + nfwd_, results.end());
    for (Value g : grads)
      if (Operation *d = g.getDefiningOp())
        place(d);
    func::FuncOp bwd =
        outline(b, fn_.getLoc(), name + "_backward", bwd_ins, bwd_ops, grads);
    llvm::SmallVector<Attribute> names;
    for (Operation *op : p.recompute)
      if (!llvm::isa<ir::ConstantOp>(op))
        names.push_back(b.getStringAttr(op->getName().getStringRef()));
    bwd->setAttr("ember.recomputed", b.getArrayAttr(names));
    bwd->setAttr("ember.recompute_flops", b.getI64IntegerAttr(p.flops));
    fn_.erase();
  }

private:
  func::FuncOp fn_;
  unsigned nfwd_;
  llvm::DenseSet<Value> tangent_values_;
  std::vector<Operation *> forward_, backward_;
  llvm::SetVector<Value> needed_;
  llvm::DenseSet<Value> materialized_;
  llvm::DenseSet<unsigned> mutated_; ///< arguments the graph writes
  llvm::DenseSet<unsigned> fresh_;   ///< arguments the call made
  Operation *ret_ = nullptr;         ///< the terminator
  llvm::DenseSet<Operation *> main_; ///< ops the forward's results need
};

struct Remat : impl::RematBase<Remat> {
  using RematBase::RematBase;
  void runOnOperation() override {
    llvm::SmallVector<func::FuncOp> joints;
    getOperation().walk([&](func::FuncOp fn) {
      if (fn->hasAttr("ember.forward_results"))
        joints.push_back(fn);
    });
    if (memoryBudget < -1) {
      getOperation().emitError("ember-remat: memory-budget must be a number "
                               "of bytes, or -1 for the minimum cut; got ")
          << int64_t(memoryBudget);
      return signalPassFailure();
    }
    for (func::FuncOp fn : joints) {
      auto n = fn->getAttrOfType<IntegerAttr>("ember.forward_results");
      if (!n || n.getInt() < 0) {
        fn.emitError("ember-remat: ember.forward_results must be a "
                     "non-negative integer");
        return signalPassFailure();
      }
      if (fn.isExternal()) {
        fn.emitError("ember-remat: a joint function needs a body");
        return signalPassFailure();
      }
      if (n.getInt() > int64_t(fn.getNumResults())) {
        fn.emitError("ember-remat: ember.forward_results (")
            << n.getInt() << ") exceeds the " << fn.getNumResults()
            << " results";
        return signalPassFailure();
      }
      Joint j(fn, unsigned(n.getInt()));
      if (failed(j.classify()))
        return signalPassFailure();
      bool over = false;
      llvm::SetVector<Value> saved =
          memoryBudget < 0 ? j.min_cut() : j.knapsack(memoryBudget, over);
      j.rewrite(saved, over);
    }
  }
};

} // namespace

} // namespace ember::passes
