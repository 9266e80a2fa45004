// ember-fuse-elementwise (passes/Passes.td): pointwise ops and the
// reductions they feed into ember.fusion regions.
#include "passes/Passes.h"

#include "ir/Builder.h"
#include "ir/Domain.h"
#include "ir/Queries.h"
#include "ir/Types.h"
#include "passes/FusionTarget.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

#include <functional>
#include <optional>

namespace ember::passes {

#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

bool wrapped_number(Operation *op) {
  auto c = llvm::dyn_cast_or_null<ir::ConstantOp>(op);
  return c && c.getWrappedNumber();
}

using ir::shape_of;

int64_t numel(llvm::ArrayRef<int64_t> s) { return ir::Domain::numel(s); }

using ir::Domain;

/// Every op of the group `a` + `b` (one may be empty), in a kernel over
/// `d`, reads each operand as the kernel indexes it (Note [Reduction fusion]
/// in ir/Domain.h); an operand from outside the group is a kernel input.
bool reads_as_indexed(const Domain &d, llvm::ArrayRef<Operation *> a,
                      llvm::ArrayRef<Operation *> b = {}) {
  if (!d.has_reduction())
    return true;
  llvm::SmallPtrSet<Operation *, 16> group(a.begin(), a.end());
  group.insert(b.begin(), b.end());
  for (Operation *op : group) {
    // Reductions read their operand over the full domain; pointwise ops
    // and conversions broadcast theirs.
    if (!op->hasTrait<ir::OpTrait::Pointwise>() &&
        !op->hasTrait<ir::OpTrait::Conversion>())
      continue;
    std::vector<int64_t> out = shape_of(op->getResult(0));
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      bool input = !def || (!group.contains(def) && !wrapped_number(def));
      if (!d.reads_as_indexed(shape_of(v), out, input))
        return false;
    }
  }
  return true;
}

/// The domain of a fusible op on its own; none for an op that is not, or
/// that `target` does not compute (Note [Per-op capability]).
std::optional<Domain> own_domain(Operation *op,
                                 const passes::FusionTarget &target) {
  std::optional<Domain> d = ir::fusion_domain(op);
  if (d && !target.unsupported(op).empty())
    return std::nullopt;
  return d;
}

/// Replaces `ops` (a group, in program order) by one ember.fusion at the
/// position of the last; its results are the group's values used outside.
void outline(llvm::ArrayRef<Operation *> ops) {
  Operation *last = ops.back();
  llvm::SmallPtrSet<Operation *, 8> in_group(ops.begin(), ops.end());
  llvm::SetVector<Value> inputs;
  llvm::SetVector<Operation *> constants;
  llvm::SmallVector<Value> outputs;
  for (Operation *op : ops) {
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (def && in_group.contains(def))
        continue;
      if (wrapped_number(def))
        constants.insert(def);
      else
        inputs.insert(v);
    }
    for (Value r : op->getResults())
      if (llvm::any_of(r.getUsers(),
                       [&](Operation *u) { return !in_group.contains(u); }))
        outputs.push_back(r);
  }
  llvm::SmallVector<Location> locs;
  llvm::SmallVector<Type> types;
  for (Operation *op : ops)
    locs.push_back(op->getLoc());
  for (Value r : outputs)
    types.push_back(r.getType());

  IRMapping map;
  auto [fusion, bb] =
      ir::create_fusion(last, locs, types, inputs.getArrayRef(), map);
  for (Operation *c : constants)
    bb.clone(*c, map);
  for (Operation *op : ops)
    bb.clone(*op, map);
  llvm::SmallVector<Value> yielded;
  for (Value r : outputs)
    yielded.push_back(map.lookup(r));
  bb.create<ir::YieldOp>(last->getLoc(), yielded);
  for (size_t i = 0; i < outputs.size(); ++i)
    outputs[i].replaceAllUsesWith(fusion.getResult(unsigned(i)));
  for (Operation *op : llvm::reverse(ops))
    op->erase();
  for (Operation *c : constants)
    if (c->use_empty())
      c->erase();
}

struct Group {
  // A std::vector: swapping two is O(1) (llvm::SmallVector::swap copies the
  // elements when one of them is small, as a new group's is: a chain paid
  // for a copy of the whole group per op).
  std::vector<Operation *> ops; // program order
  Domain domain;
  int64_t weight = 0;  // of its ops (Note [Fusion size])
  bool sealed = false; // an op outside it reads one of its values
  int merged_into = -1;
};

struct FuseElementwise : impl::FuseElementwiseBase<FuseElementwise> {
  using FuseElementwiseBase::FuseElementwiseBase;

  using Find = std::function<int(int)>;

  /// The open group of `op` (-1: none, or not an op).
  static int group_of_op(Operation *op,
                         const llvm::DenseMap<Operation *, int> &group_of,
                         const Find &find) {
    auto it = op ? group_of.find(op) : group_of.end();
    return it == group_of.end() ? -1 : find(it->second);
  }

  // Note [Recomputing pointwise values in reductions]
  // A pointwise value that only a reduction of another domain reads joins
  // the group of its producers, which that reduction cannot join: the
  // value is written as a full tensor and read back. layer_norm's backward
  // is the case: g * xhat, summed over the batch for the weight's gradient,
  // is computed beside the rows that fold the normalized dim for the
  // input's gradient. So, once the groups are formed: a value of group A
  // that only ops of reduction group B read, computed in A by pointwise ops
  // and conversions from values outside A (its *cone*, at most 16 ops), is
  // recomputed in B (clones of the cone join B; the originals go when
  // nothing else reads them), if B's kernel reads the cone's inputs as
  // indexed and stays within the fusion size. B then reads A's inputs (x,
  // the saved statistics) instead of a tensor A wrote: one pass over memory
  // fewer. Then reduction groups over the same domain that read a common
  // value from outside and do not depend on each other become one group
  // (merge_reductions): the weight's and the bias's gradients fold the
  // gradient in one pass.
  void recompute_into_reductions(std::vector<Group> &groups,
                                 llvm::DenseMap<Operation *, int> &group_of,
                                 const Find &find,
                                 const passes::FusionTarget &t) {
    auto group = [&](Operation *op) { return group_of_op(op, group_of, find); };
    for (size_t bi = 0; bi < groups.size(); ++bi) {
      if (groups[bi].merged_into >= 0 || groups[bi].ops.empty() ||
          !groups[bi].domain.has_reduction())
        continue;
      const int b = int(bi);
      std::vector<Operation *> reading = groups[bi].ops;
      for (Operation *op : reading) {
        for (Value v : op->getOperands()) {
          Operation *p = v.getDefiningOp();
          int a = group(p);
          if (a < 0 || a == b || !llvm::all_of(v.getUsers(), [&](Operation *u) {
                return group(u) == b;
              }))
            continue;
          // The cone of v in A, operands first.
          std::vector<Operation *> cone;
          llvm::SmallPtrSet<Operation *, 16> seen;
          bool ok = true;
          std::function<void(Operation *)> visit = [&](Operation *o) {
            if (!ok || !seen.insert(o).second)
              return;
            if (!o->hasTrait<ir::OpTrait::Pointwise>() &&
                !o->hasTrait<ir::OpTrait::Conversion>()) {
              ok = false;
              return;
            }
            for (Value x : o->getOperands())
              if (Operation *d = x.getDefiningOp();
                  d && !wrapped_number(d) && group(d) == a)
                visit(d);
            cone.push_back(o);
            ok = ok && cone.size() <= 16;
          };
          visit(p);
          int64_t weight = 0;
          for (Operation *o : cone)
            weight += t.weight(o);
          if (!ok || groups[bi].weight + weight > maxOps)
            continue;
          OpBuilder builder(p->getContext());
          builder.setInsertionPointAfter(p);
          IRMapping map;
          std::vector<Operation *> clones;
          for (Operation *o : cone)
            clones.push_back(builder.clone(*o, map));
          Value copy = map.lookup(v);
          v.replaceUsesWithIf(
              copy, [&](OpOperand &u) { return group(u.getOwner()) == b; });
          std::vector<Operation *> with(groups[bi].ops);
          with.insert(with.end(), clones.begin(), clones.end());
          if (!reads_as_indexed(groups[bi].domain, with)) {
            copy.replaceAllUsesWith(v);
            for (Operation *c : llvm::reverse(clones))
              c->erase();
            continue;
          }
          for (Operation *c : clones)
            group_of[c] = b;
          groups[bi].ops = std::move(with);
          groups[bi].weight += weight;
          // The originals nothing reads any more.
          Group &ga = groups[size_t(a)];
          for (Operation *o : llvm::reverse(cone)) {
            if (!o->use_empty())
              continue;
            ga.weight -= t.weight(o);
            ga.ops.erase(std::remove(ga.ops.begin(), ga.ops.end(), o),
                         ga.ops.end());
            group_of.erase(o);
            o->erase();
          }
        }
      }
    }
  }

  /// Merges reduction groups over one domain that read a common value from
  /// outside, when every value either reads from outside comes before both
  /// and nothing outside them reads their results before both have run
  /// (Note [Recomputing pointwise values in reductions]).
  void merge_reductions(std::vector<Group> &groups,
                        llvm::DenseMap<Operation *, int> &group_of,
                        const Find &find,
                        llvm::DenseMap<Operation *, unsigned> &position) {
    auto group = [&](Operation *op) { return group_of_op(op, group_of, find); };
    struct Span {
      unsigned first = ~0u, last = 0;
      llvm::SetVector<Value> reads; // from outside
    };
    auto span_of = [&](int g) {
      Span s;
      for (Operation *op : groups[size_t(g)].ops) {
        s.first = std::min(s.first, position[op]);
        s.last = std::max(s.last, position[op]);
        for (Value v : op->getOperands())
          if (Operation *d = v.getDefiningOp();
              group(d) != g && !wrapped_number(d))
            s.reads.insert(v);
      }
      return s;
    };
    // (each reduction group's span once; a group's again when one merges
    // into it)
    std::vector<std::optional<Span>> spans(groups.size());
    for (size_t g = 0; g < groups.size(); ++g)
      if (groups[g].merged_into < 0 && !groups[g].ops.empty() &&
          groups[g].domain.has_reduction())
        spans[g] = span_of(int(g));
    for (size_t ci = 0; ci < groups.size(); ++ci) {
      for (size_t di = ci + 1; di < groups.size(); ++di) {
        Group &c = groups[ci], &d = groups[di];
        if (!spans[ci] || !spans[di] || c.merged_into >= 0 ||
            d.merged_into >= 0 || c.domain.full != d.domain.full ||
            c.domain.reduced != d.domain.reduced ||
            c.weight + d.weight > maxOps)
          continue;
        const Span &sc = *spans[ci], &sd = *spans[di];
        unsigned first = std::min(sc.first, sd.first),
                 last = std::max(sc.last, sd.last);
        bool shared = llvm::any_of(
            sc.reads, [&](Value v) { return sd.reads.contains(v); });
        auto before = [&](Value v) {
          Operation *def = v.getDefiningOp();
          return !def || position[def] < first;
        };
        auto read_after = [&](size_t g) {
          for (Operation *op : groups[g].ops)
            for (Operation *u : op->getUsers())
              if (int ug = group(u);
                  ug != int(ci) && ug != int(di) && position[u] <= last)
                return false;
          return true;
        };
        if (!shared || !llvm::all_of(sc.reads, before) ||
            !llvm::all_of(sd.reads, before) || !read_after(ci) ||
            !read_after(di))
          continue;
        c.ops.insert(c.ops.end(), d.ops.begin(), d.ops.end());
        c.weight += d.weight;
        d.ops.clear();
        d.weight = 0;
        d.merged_into = int(ci);
        spans[di].reset();
        spans[ci] = span_of(int(ci));
      }
    }
  }

  void runOnOperation() override {
    std::shared_ptr<const passes::FusionTarget> t =
        passes::find_fusion_target(target);
    if (!t) {
      std::string names;
      for (const std::string &n : passes::fusion_target_names())
        names += (names.empty() ? "" : ", ") + n;
      getOperation().emitError()
          << "ember-fuse-elementwise: no fusion target named '" << target
          << "' (registered: " << names << ")";
      return signalPassFailure();
    }
    if (getOperation().isExternal())
      return; // a declaration: no body to fuse
    Block &block = getOperation().getBody().front();
    std::vector<Group> groups;
    llvm::DenseMap<Operation *, int> group_of;
    llvm::DenseMap<Value, llvm::SmallVector<int, 2>> readers;
    // The group g was merged into, with path compression: a chain merges
    // each group into the next op's, and without it every lookup of an
    // early op walked the whole chain (cubic time in the chain's length,
    // through the sibling scan of a value every op reads).
    auto find = [&](int g) {
      int root = g;
      while (groups[size_t(root)].merged_into >= 0)
        root = groups[size_t(root)].merged_into;
      while (groups[size_t(g)].merged_into >= 0) {
        int next = groups[size_t(g)].merged_into;
        groups[size_t(g)].merged_into = root;
        g = next;
      }
      return root;
    };
    // Program order: an op joins the groups of its operands when their
    // domains agree and none of them is sealed; the operand groups it does
    // not join are sealed (their fusion must come before this op, so
    // nothing after it may join them).
    for (Operation &op : block) {
      std::optional<Domain> own = own_domain(&op, *t);
      llvm::SmallVector<int> producers;
      for (Value v : op.getOperands()) {
        Operation *def = v.getDefiningOp();
        auto it = def ? group_of.find(def) : group_of.end();
        if (it == group_of.end())
          continue;
        int g = find(it->second);
        if (!llvm::is_contained(producers, g))
          producers.push_back(g);
      }
      // Horizontal: earlier groups that read one of this op's operands
      // (of the domain's full size: sharing it saves a pass over memory).
      // Each value keeps the groups of the earlier ops that read it, kept
      // to their open roots as they merge and seal: scanning every user of
      // a value that every fourth op of a chain reads was quadratic.
      llvm::SmallVector<int> siblings;
      if (own)
        for (Value v : op.getOperands()) {
          if (numel(shape_of(v)) != numel(own->full) || numel(own->full) < 2)
            continue;
          auto it = readers.find(v);
          if (it == readers.end())
            continue;
          llvm::SmallVector<int, 2> open;
          for (int g : it->second)
            if (int r = find(g);
                !groups[size_t(r)].sealed && !llvm::is_contained(open, r))
              open.push_back(r);
          it->second = open;
          for (int g : open)
            if (!llvm::is_contained(producers, g) &&
                !llvm::is_contained(siblings, g))
              siblings.push_back(g);
        }
      int mine = -1;
      if (own) {
        mine = int(groups.size());
        groups.push_back(Group{{&op}, *own, t->weight(&op)});
        group_of[&op] = mine;
        for (Value v : op.getOperands())
          readers[v].push_back(mine);
        llvm::SmallVector<int> candidates;
        for (int g : producers)
          candidates.push_back(g);
        candidates.append(siblings);
        // The smaller list is appended to the larger (program order is
        // restored when the group is outlined), so a long chain costs
        // O(n log n) in all, not a copy of the group per op.
        auto merge_into_mine = [&](int g, const Domain &d) {
          Group &m = groups[size_t(mine)], &p = groups[size_t(g)];
          m.domain = d;
          if (p.ops.size() > m.ops.size())
            std::swap(m.ops, p.ops);
          m.ops.insert(m.ops.end(), p.ops.begin(), p.ops.end());
          m.weight += p.weight;
          p.ops.clear();
          p.weight = 0;
          p.merged_into = mine;
        };
        // All the open candidates at once first: an op reading two
        // reductions' results reads them as the kernel's own values only
        // when both are in the group (one at a time, the other would be a
        // kernel input, read right-aligned: Note [Reduction fusion]).
        llvm::SmallVector<int> open;
        int64_t all_weight = groups[size_t(mine)].weight;
        for (int g : candidates)
          if (int r = find(g); r != mine && !groups[size_t(r)].sealed &&
                               !llvm::is_contained(open, r)) {
            open.push_back(r);
            all_weight += groups[size_t(r)].weight;
          }
        std::optional<Domain> all = groups[size_t(mine)].domain;
        if (all_weight > maxOps) // Note [Fusion size]
          all.reset();
        for (int g : open)
          if (all)
            all = Domain::merge(*all, groups[size_t(g)].domain);
        auto all_ops = [&] { // only asked for a joint merge
          std::vector<Operation *> ops(groups[size_t(mine)].ops.begin(),
                                       groups[size_t(mine)].ops.end());
          for (int g : open)
            ops.insert(ops.end(), groups[size_t(g)].ops.begin(),
                       groups[size_t(g)].ops.end());
          return ops;
        };
        if (open.size() > 1 && all && reads_as_indexed(*all, all_ops())) {
          for (int g : open)
            merge_into_mine(g, *all);
          candidates.clear();
        }
        for (int g : candidates) {
          g = find(g);
          if (g == mine)
            continue;
          Group &p = groups[size_t(g)];
          if (p.sealed || groups[size_t(mine)].weight + p.weight > maxOps)
            continue;
          std::optional<Domain> d =
              Domain::merge(groups[size_t(mine)].domain, p.domain);
          if (!d || !reads_as_indexed(*d, groups[size_t(mine)].ops, p.ops))
            continue;
          merge_into_mine(g, *d);
        }
      }
      for (int g : producers)
        if (find(g) != mine)
          groups[size_t(find(g))].sealed = true;
    }
    recompute_into_reductions(groups, group_of, find, *t);
    llvm::DenseMap<Operation *, unsigned> position;
    unsigned n = 0;
    for (Operation &op : block)
      position[&op] = n++;
    merge_reductions(groups, group_of, find, position);
    for (Group &g : groups) {
      if (g.merged_into >= 0 || g.ops.empty())
        continue;
      llvm::sort(g.ops, [&](Operation *a, Operation *b) {
        return position[a] < position[b];
      });
      outline(g.ops);
    }
  }
};

} // namespace
} // namespace ember::passes
