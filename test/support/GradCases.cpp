// The gradcheck cases of the ops the OpInfo table does not cover (Note [One
// gradcheck case per differentiable op] in test/unit/test_gradcheck.cpp).
#include "GradCases.h"

#include "OpInfo.h"

namespace ember::test {

namespace {

using namespace samples;
using Case = GradSample;

// --- the ops that the OpInfo table does not cover
// -----------------------------

std::map<std::string, std::vector<Case>> build_cases() {
  std::map<std::string, std::vector<Case>> c;

  // Copies, fills, dtype conversion.
  c["copy_"] = {
      inplace(
          "into a clone",
          [] {
            return variable_list{rnd({3, 4}, 1), rnd({3, 4}, 2)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.copy_(v[1]);
            return z;
          },
          true),
      inplace(
          "broadcast source",
          [] {
            return variable_list{rnd({3, 4}, 1), rnd({4}, 2)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.copy_(v[1]);
            return z * v[0];
          }),
      inplace(
          "into a view",
          [] {
            return variable_list{rnd({3, 4}, 1), rnd({3, 2}, 2)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.narrow(1, 1, 2).copy_(v[1]);
            return z;
          },
          true),
  };
  c["fill__Scalar"] = {
      inplace(
          "whole tensor",
          [] {
            return variable_list{rnd({3, 4}, 1)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.fill_(2.0);
            return z;
          }),
      inplace(
          "a row (view)",
          [] {
            return variable_list{rnd({3, 4}, 2)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.select(0, 1).fill_(-3.0);
            return z * 2;
          },
          true),
  };
  c["_to_copy"] = {
      unary(
          "same dtype",
          [] {
            return rnd({3, 4}, 1);
          },
          [](auto &x) { return ember::_to_copy(x, kDouble); }, true),
      unary(
          "no dtype, transposed",
          [] {
            return leaf(rnd({4, 3}, 2).t());
          },
          [](auto &x) { return ember::_to_copy(x); }),
  };
  c["clone"] = unary_cases(
      RND, [](auto &x) { return ember::clone(x); }, true);

  // Views.
  c["as_strided"] = {
      unary(
          "overlapping windows", [] { return rnd({12}, 1); },
          [](auto &x) {
            return ember::as_strided(x, {3, 4}, {2, 1}, 1);
          },
          true),
      unary(
          "transposing strides",
          [] {
            return rnd({3, 4}, 2);
          },
          [](auto &x) {
            return ember::as_strided(x, {4, 3}, {1, 4});
          }),
      unary(
          "of a view",
          [] {
            return rnd({4, 5}, 3);
          },
          [](auto &x) {
            return ember::as_strided(x.narrow(0, 1, 3), {2, 2}, {5, 2});
          }),
  };
  c["view"] = {
      unary(
          "(3,4)->(4,3)",
          [] {
            return rnd({3, 4}, 1);
          },
          [](auto &x) {
            return x.view({4, 3});
          },
          true),
      unary(
          "(2,3,2)->(-1)",
          [] {
            return rnd({2, 3, 2}, 2);
          },
          [](auto &x) { return x.view({-1}); }),
      unary(
          "0-dim->(1,1)", [] { return rnd({}, 3); },
          [](auto &x) {
            return x.view({1, 1});
          }),
  };
  c["squeeze"] = {unary(
      "(3,1,4,1)",
      [] {
        return rnd({3, 1, 4, 1}, 1);
      },
      [](auto &x) { return ember::squeeze(x); }, true)};
  c["squeeze_dim"] = {unary(
                          "dim=-1",
                          [] {
                            return rnd({3, 1, 4, 1}, 1);
                          },
                          [](auto &x) { return ember::squeeze(x, -1); }, true),
                      unary(
                          "non-unit dim",
                          [] {
                            return rnd({3, 4}, 2);
                          },
                          [](auto &x) { return ember::squeeze(x, 0); })};
  c["squeeze_dims"] = {unary(
      "dims {1,3}",
      [] {
        return rnd({3, 1, 4, 1}, 1);
      },
      [](auto &x) {
        return ember::squeeze(x, IntArrayRef{1, 3});
      },
      true)};
  c["unsqueeze"] = {unary(
                        "dim=1",
                        [] {
                          return rnd({3, 4}, 1);
                        },
                        [](auto &x) { return ember::unsqueeze(x, 1); }, true),
                    unary(
                        "dim=-1 of 0-dim", [] { return rnd({}, 2); },
                        [](auto &x) { return ember::unsqueeze(x, -1); })};
  c["transpose_int"] = {unary(
      "(2,3,4) 0<->2",
      [] {
        return rnd({2, 3, 4}, 1);
      },
      [](auto &x) { return ember::transpose(x, 0, -1) * 1.5; }, true)};
  c["t"] = {unary(
                "(3,4)",
                [] {
                  return rnd({3, 4}, 1);
                },
                [](auto &x) { return ember::t(x); }, true),
            unary(
                "1-d", [] { return rnd({4}, 2); },
                [](auto &x) { return ember::t(x); })};
  c["permute"] = {unary(
      "(2,3,4) {2,0,1}",
      [] {
        return rnd({2, 3, 4}, 1);
      },
      [](auto &x) {
        return ember::permute(x, {2, 0, -2});
      },
      true)};
  c["expand"] = {unary(
                     "(3,1)->(2,3,4)",
                     [] {
                       return rnd({3, 1}, 1);
                     },
                     [](auto &x) {
                       return x.expand({2, 3, 4});
                     },
                     true),
                 unary(
                     "0-dim->(2,2)", [] { return rnd({}, 2); },
                     [](auto &x) {
                       return x.expand({2, 2});
                     })};
  c["select_int"] = {unary(
                         "dim=1 index=-1",
                         [] {
                           return rnd({3, 4}, 1);
                         },
                         [](auto &x) { return ember::select(x, 1, -1); }, true),
                     unary(
                         "1-d to 0-dim", [] { return rnd({5}, 2); },
                         [](auto &x) { return ember::select(x, 0, 2); })};
  c["slice_Tensor"] = {unary(
                           "step 2",
                           [] {
                             return rnd({3, 7}, 1);
                           },
                           [](auto &x) { return ember::slice(x, 1, 1, 6, 2); },
                           true),
                       unary(
                           "negative start, open end",
                           [] {
                             return rnd({5, 2}, 2);
                           },
                           [](auto &x) { return ember::slice(x, 0, -3); })};
  c["diagonal"] = {unary(
                       "offset 1",
                       [] {
                         return rnd({3, 4}, 1);
                       },
                       [](auto &x) { return ember::diagonal(x, 1); }, true),
                   unary(
                       "3-d offset -1 dims (2,0)",
                       [] {
                         return rnd({3, 2, 4}, 2);
                       },
                       [](auto &x) { return ember::diagonal(x, -1, 2, 0); })};
  c["unfold"] = {
      unary(
          "overlapping size 3 step 1",
          [] {
            return rnd({2, 6}, 1);
          },
          [](auto &x) { return x.unfold(1, 3, 1); }, true),
      unary(
          "dim 0 size 2 step 1",
          [] {
            return rnd({4, 3}, 2);
          },
          [](auto &x) { return x.unfold(0, 2, 1); }, true),
      unary(
          "gaps size 2 step 3",
          [] {
            return rnd({3, 8}, 3);
          },
          [](auto &x) { return x.unfold(-1, 2, 3); }),
      unary(
          "0-dim", [] { return rnd({}, 4); },
          [](auto &x) { return x.unfold(0, 1, 1); }),
      // The windows' grad_fn is regenerated from the base (an in-place op
      // moved the storage's version): overlapping windows must still add up.
      unary(
          "overlapping view of a base modified in place",
          [] {
            return rnd({2, 5}, 5);
          },
          [](auto &x) {
            Tensor b = x.clone();
            Tensor w = b.unfold(1, 3, 1);
            b.mul_(2);
            return w * 1;
          })};

  // Matrix products.
  c["mm"] = {
      binary(
          "(3,4)x(4,2)",
          [] {
            return variable_list{rnd({3, 4}, 1), rnd({4, 2}, 2)};
          },
          [](auto &a, auto &b) { return ember::mm(a, b); }, true),
      binary(
          "transposed operand",
          [] {
            return variable_list{leaf(rnd({4, 3}, 3).t()), rnd({4, 2}, 4)};
          },
          [](auto &a, auto &b) { return ember::mm(a, b); })};
  c["bmm"] = {binary(
      "(2,3,4)x(2,4,2)",
      [] {
        return variable_list{rnd({2, 3, 4}, 1), rnd({2, 4, 2}, 2)};
      },
      [](auto &a, auto &b) { return ember::bmm(a, b); }, true)};
  c["addmm"] = {
      {"beta=0.5 alpha=2 bias (2,)",
       [] {
         return variable_list{rnd({2}, 1), rnd({3, 4}, 2), rnd({4, 2}, 3)};
       },
       [](const variable_list &v) {
         return variable_list{ember::addmm(v[0], v[1], v[2], 0.5, 2)};
       },
       true},
      {"defaults",
       [] {
         return variable_list{rnd({3, 2}, 4), rnd({3, 4}, 5), rnd({4, 2}, 6)};
       },
       [](const variable_list &v) {
         return variable_list{ember::addmm(v[0], v[1], v[2])};
       }}};
  c["baddbmm"] = {{"beta=-1 alpha=0.5 bias (3,1)",
                   [] {
                     return variable_list{rnd({3, 1}, 1), rnd({2, 3, 4}, 2),
                                          rnd({2, 4, 2}, 3)};
                   },
                   [](const variable_list &v) {
                     return variable_list{
                         ember::baddbmm(v[0], v[1], v[2], -1, 0.5)};
                   },
                   true}};
  c["dot"] = {binary(
      "(5,)",
      [] {
        return variable_list{rnd({5}, 1), rnd({5}, 2)};
      },
      [](auto &a, auto &b) { return ember::dot(a, b); }, true)};

  // Shape manipulation.
  c["cat"] = {
      {"3 tensors dim 1",
       [] {
         return variable_list{rnd({2, 1}, 1), rnd({2, 3}, 2), rnd({2, 2}, 3)};
       },
       [](const variable_list &v) { return variable_list{ember::cat(v, 1)}; },
       true},
      {"dim 0 with an operand used twice",
       [] {
         return variable_list{rnd({2, 3}, 4), rnd({1, 3}, 5)};
       },
       [](const variable_list &v) {
         return variable_list{ember::cat({v[0], v[1], v[0]}, 0)};
       }}};
  c["flip"] = {unary(
      "dims {0,-1}",
      [] {
        return rnd({2, 3, 2}, 1);
      },
      [](auto &x) {
        return ember::flip(x, {0, -1});
      },
      true)};
  c["tril"] = {unary(
                   "diagonal 0",
                   [] {
                     return rnd({3, 4}, 1);
                   },
                   [](auto &x) { return ember::tril(x); }, true),
               unary(
                   "diagonal -1",
                   [] {
                     return rnd({4, 3}, 2);
                   },
                   [](auto &x) { return ember::tril(x, -1); })};
  c["triu"] = {unary(
                   "diagonal 1",
                   [] {
                     return rnd({3, 4}, 1);
                   },
                   [](auto &x) { return ember::triu(x, 1); }, true),
               unary(
                   "batched",
                   [] {
                     return rnd({2, 3, 3}, 2);
                   },
                   [](auto &x) { return ember::triu(x); })};
  c["constant_pad_nd"] = {
      unary(
          "pad {1,2,0,1}",
          [] {
            return rnd({2, 3}, 1);
          },
          [](auto &x) {
            return ember::constant_pad_nd(x, {1, 2, 0, 1}, 0.5);
          },
          true),
      unary(
          "negative pad (crop)",
          [] {
            return rnd({3, 4}, 2);
          },
          [](auto &x) {
            return ember::constant_pad_nd(x, {-1, 1});
          })};

  // Indexing (repeated indices wherever the op allows them).
  c["index_select"] = {
      unary(
          "dim 0 repeated",
          [] {
            return rnd({3, 4}, 1);
          },
          [](auto &x) {
            return ember::index_select(x, 0, ix({0, 2, 0, 1, 2}));
          },
          true),
      unary(
          "dim -1",
          [] {
            return rnd({2, 3}, 2);
          },
          [](auto &x) {
            return ember::index_select(x, -1, ix({2, 2}));
          })};
  c["gather"] = {
      unary(
          "dim 1 repeated",
          [] {
            return rnd({3, 4}, 1);
          },
          [](auto &x) {
            return ember::gather(x, 1, ix2({{0, 0, 3}, {1, 2, 1}, {3, 3, 3}}));
          },
          true),
      unary(
          "dim 0",
          [] {
            return rnd({3, 2}, 2);
          },
          [](auto &x) {
            return ember::gather(x, 0, ix2({{2, 0}, {2, 2}}));
          })};
  c["scatter__src"] = {
      inplace(
          "dim 1 distinct indices",
          [] {
            return variable_list{rnd({3, 4}, 1), rnd({3, 2}, 2)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.scatter_(1, ix2({{3, 0}, {1, 2}, {0, 1}}), v[1]);
            return z;
          },
          true),
      inplace(
          "dim 0, larger src",
          [] {
            return variable_list{rnd({3, 2}, 3), rnd({3, 3}, 4)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.scatter_(0, ix2({{2, 0}, {0, 1}}), v[1]);
            return z;
          })};
  c["scatter_add_"] = {
      inplace(
          "dim 1 repeated",
          [] {
            return variable_list{rnd({3, 4}, 1), rnd({3, 3}, 2)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.scatter_add_(1, ix2({{1, 1, 3}, {0, 0, 0}, {2, 3, 2}}), v[1]);
            return z;
          },
          true),
      // Only src's leading (3,2) corner (index's shape) is read: the rest
      // of src gets a zero gradient.
      inplace(
          "src larger than index",
          [] {
            return variable_list{rnd({3, 4}, 3), rnd({3, 3}, 4)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.scatter_add_(1, ix2({{0, 0}, {3, 1}, {2, 2}}), v[1]);
            return z;
          })};
  c["index_add_"] = {inplace(
                         "dim 0 repeated alpha 2",
                         [] {
                           return variable_list{rnd({3, 4}, 1), rnd({4, 4}, 2)};
                         },
                         [](const variable_list &v) {
                           Tensor z = v[0].clone();
                           z.index_add_(0, ix({2, 0, 2, 2}), v[1], 2);
                           return z;
                         },
                         true),
                     inplace(
                         "dim 1",
                         [] {
                           return variable_list{rnd({2, 3}, 3), rnd({2, 2}, 4)};
                         },
                         [](const variable_list &v) {
                           Tensor z = v[0].clone();
                           z.index_add_(1, ix({1, 1}), v[1]);
                           return z;
                         })};
  c["masked_select"] = {
      unary(
          "mask (3,4)",
          [] {
            return rnd({3, 4}, 1);
          },
          [](auto &x) { return ember::masked_select(x, mask34()); }, true),
      unary(
          "broadcast self (1,4)",
          [] {
            return rnd({1, 4}, 2);
          },
          [](auto &x) { return ember::masked_select(x, mask34()); })};
  auto values = [](std::tuple<Tensor, Tensor> t) { return std::get<0>(t); };
  c["sort"] = {
      unary(
          "dim -1",
          [] {
            return distinct({3, 4}, 1);
          },
          [values](auto &x) { return values(ember::sort(x)); }, true),
      unary(
          "dim 0 descending",
          [] {
            return distinct({4, 2}, 2);
          },
          [values](auto &x) { return values(ember::sort(x, 0, true)); })};
  c["topk"] = {unary(
                   "k=2 largest",
                   [] {
                     return distinct({3, 5}, 1);
                   },
                   [values](auto &x) { return values(ember::topk(x, 2)); },
                   true),
               unary(
                   "k=3 smallest dim 0 unsorted",
                   [] {
                     return distinct({4, 2}, 2);
                   },
                   [values](auto &x) {
                     return values(ember::topk(x, 3, 0, false, false));
                   })};
  c["index_Tensor"] = {
      unary(
          "one index repeated",
          [] {
            return rnd({3, 4}, 1);
          },
          [](auto &x) {
            return ember::index(x, {ix({2, 0, 2, 1})});
          },
          true),
      unary(
          "two broadcast indices",
          [] {
            return rnd({3, 4}, 2);
          },
          [](auto &x) {
            return ember::index(x, {ix2({{0}, {2}, {0}}), ix({1, 3, 1})});
          },
          true),
      unary(
          "boolean mask",
          [] {
            return rnd({3, 4}, 3);
          },
          [](auto &x) { return ember::index(x, {mask34()}); })};
  c["index_put_"] = {
      inplace(
          "accumulate repeated",
          [] {
            return variable_list{rnd({4, 3}, 1), rnd({5, 3}, 2)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            ember::index_put_(z, {ix({0, 2, 0, 3, 0})}, v[1], true);
            return z;
          },
          true),
      inplace(
          "overwrite distinct",
          [] {
            return variable_list{rnd({4, 3}, 3), rnd({2, 3}, 4)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            ember::index_put_(z, {ix({3, 1})}, v[1], false);
            return z;
          },
          true),
      inplace(
          "two indices, broadcast values",
          [] {
            return variable_list{rnd({3, 4}, 5), rnd({}, 6)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            ember::index_put_(z, {ix({0, 2, 2}), ix({1, 3, 1})}, v[1], true);
            return z;
          })};

  // Sliding windows (conv/pool building blocks).
  c["_im2col"] = {
      unary(
          "k 2x2 stride 1",
          [] {
            return rnd({1, 2, 3, 3}, 1);
          },
          [](auto &x) {
            return ember::_im2col(x, {2, 2}, {1, 1}, {0, 0}, {1, 1});
          },
          true),
      unary(
          "k 2x3 dil (1,2) pad (1,0) stride (2,1)",
          [] {
            return rnd({2, 1, 4, 5}, 2);
          },
          [](auto &x) {
            return ember::_im2col(x, {2, 3}, {1, 2}, {1, 0}, {2, 1});
          }),
      unary(
          "unbatched pad value",
          [] {
            return rnd({2, 3, 3}, 3);
          },
          [](auto &x) {
            return ember::_im2col(x, {2, 2}, {1, 1}, {1, 1}, {2, 2}, 1.5);
          })};
  // Columns: (N, C*kh*kw, L) with L = output positions of the window.
  c["_col2im"] = {
      unary(
          "k 2x2 stride 1 -> 3x3",
          [] {
            return rnd({1, 8, 4}, 1);
          },
          [](auto &x) {
            return ember::_col2im(x, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {1, 1});
          },
          true),
      // H: (4 + 2 - 1*(2-1) - 1)/2 + 1 = 3, W: (5 - 2*(3-1) - 1)/1 + 1 = 1.
      unary(
          "k 2x3 dil (1,2) pad (1,0) stride (2,1)",
          [] {
            return rnd({2, 6, 3}, 2);
          },
          [](auto &x) {
            return ember::_col2im(x, {4, 5}, {2, 3}, {1, 2}, {1, 0}, {2, 1});
          })};
  // The backward kernels of softmax / log_softmax as ops of their own
  // (double backward of softmax differentiates them): any output values,
  // inner, outer and middle dims, a transposed grad_output, 0-dim.
  for (bool log : {false, true}) {
    auto op = [log](const Tensor &g, const Tensor &y, int64_t d) {
      return log ? ember::_log_softmax_backward_data(g, y, d, kDouble)
                 : ember::_softmax_backward_data(g, y, d, kDouble);
    };
    c[log ? "_log_softmax_backward_data" : "_softmax_backward_data"] = {
        binary(
            "dim 1",
            [] {
              return variable_list{rnd({3, 4}, 1), rnd({3, 4}, 2)};
            },
            [op](auto &g, auto &y) { return op(g, y, 1); }, true),
        binary(
            "dim 0 of 3-d",
            [] {
              return variable_list{rnd({3, 2, 2}, 3), rnd({3, 2, 2}, 4)};
            },
            [op](auto &g, auto &y) { return op(g, y, 0); }, true),
        binary(
            "dim 1 of 3-d",
            [] {
              return variable_list{rnd({2, 3, 2}, 5), rnd({2, 3, 2}, 6)};
            },
            [op](auto &g, auto &y) { return op(g, y, 1); }),
        binary(
            "transposed",
            [] {
              return variable_list{leaf(rnd({4, 3}, 7).detach().t()),
                                   rnd({3, 4}, 8)};
            },
            [op](auto &g, auto &y) { return op(g, y, -1); }),
        binary(
            "0-dim",
            [] {
              return variable_list{rnd({}, 9), rnd({}, 10)};
            },
            [op](auto &g, auto &y) { return op(g, y, 0); })};
  }

  // native_layer_norm (F::layer_norm): the output's gradient for input,
  // weight and bias; gradgrad runs the create_graph formula.
  auto ln = [](IntArrayRef shape, bool w, bool b) {
    return [shape = std::vector<int64_t>(shape.begin(), shape.end()), w,
            b](const variable_list &v) {
      std::optional<Tensor> wt, bt;
      size_t k = 1;
      if (w)
        wt = v[k++];
      if (b)
        bt = v[k++];
      return variable_list{
          std::get<0>(ember::native_layer_norm(v[0], shape, wt, bt, 1e-5))};
    };
  };
  c["native_layer_norm"] = {
      {"weight and bias",
       [] {
         return variable_list{rnd({3, 4}, 1), rnd({4}, 2), rnd({4}, 3)};
       },
       ln({4}, true, true), true},
      {"3-d over 2 dims",
       [] {
         return variable_list{rnd({2, 3, 4}, 4), rnd({3, 4}, 5),
                              rnd({3, 4}, 6)};
       },
       ln({3, 4}, true, true), true},
      {"no weight or bias",
       [] {
         return variable_list{rnd({3, 5}, 7)};
       },
       ln({5}, false, false), true},
      {"weight only",
       [] {
         return variable_list{rnd({3, 5}, 8), rnd({5}, 9)};
       },
       ln({5}, true, false)},
      {"bias only",
       [] {
         return variable_list{rnd({3, 5}, 10), rnd({5}, 11)};
       },
       ln({5}, false, true)},
      {"one row",
       [] {
         return variable_list{rnd({1, 6}, 12), rnd({6}, 13), rnd({6}, 14)};
       },
       ln({6}, true, true)},
      {"1-d input",
       [] {
         return variable_list{rnd({6}, 15), rnd({6}, 16), rnd({6}, 17)};
       },
       ln({6}, true, true), true},
      {"transposed",
       [] {
         return variable_list{leaf(rnd({4, 3}, 18).detach().t()), rnd({4}, 19),
                              rnd({4}, 20)};
       },
       ln({4}, true, true)}};

  return c;
}

} // namespace

const std::map<std::string, std::vector<GradSample>> &local_grad_cases() {
  static const auto table = build_cases();
  return table;
}

const std::map<std::string, const std::vector<GradSample> *> &grad_cases() {
  static const auto all = [] {
    std::map<std::string, const std::vector<GradSample> *> m;
    for (const OpInfo &o : op_db())
      if (o.differentiable())
        m[o.cname()] = &o.grad;
    for (const auto &[name, list] : local_grad_cases())
      m.emplace(name, &list);
    return m;
  }();
  return all;
}

} // namespace ember::test
