// Every host op with weft::bf16 storage against the double op on the same (bf16-rounded)
// inputs. bf16 keeps 8 significant bits (machine epsilon 2^-7): one round-to-nearest of a
// value y costs at most u |y| with u = 2^-8, so an op that computes in float and rounds each
// output once is within u * max|ref| of the reference, as the rel_err metric (max abs
// difference over the tensor's max magnitude) sees it. The tolerance below is eps = 2u = 2^-7
// (twice that bound: float's own rounding in the elementwise formulas, ~1e-7, is far below
// the margin), plus, for a reduction of length K, the worst-case float accumulation error
// gamma_K ~ K * 2^-24 relative to the sum of magnitudes (Higham; the sums here are of
// same-scale terms, so that sum is within a small factor of the tensor's scale: the term is
// doubled). A bf16 accumulator instead rounds K times: its error grows like sqrt(K) * u
// (random walk) up to K * u, which the "tolerances catch a bf16 accumulator" case checks lands
// outside the tolerance.
#include "weft/core/dtype.hpp"         // bf16
#include "weft/ops/accumulate.hpp"     // accumulate
#include "weft/ops/adamw.hpp"          // adamw_step
#include "weft/ops/attention.hpp"      // attention_forward, attention_backward
#include "weft/ops/cast.hpp"           // cast
#include "weft/ops/clip.hpp"           // clip
#include "weft/ops/copy.hpp"           // copy
#include "weft/ops/cross_entropy.hpp"  // softmax_cross_entropy_*
#include "weft/ops/embedding.hpp"      // embedding_*, positional_*
#include "weft/ops/fill.hpp"           // fill, zero
#include "weft/ops/gelu.hpp"           // gelu_*
#include "weft/ops/layernorm.hpp"      // layernorm_*
#include "weft/ops/detail/gemm_dnnl.hpp"  // host_bf16_product, set_host_bf16_product
#include "weft/ops/matmul.hpp"         // matmul_*, bias_backward
#include "weft/ops/mean_loss.hpp"      // mean_loss
#include "weft/ops/residual.hpp"       // residual_*
#include "weft/ops/rmsnorm.hpp"        // rmsnorm_*
#include "weft/ops/rope.hpp"           // rope_*
#include "weft/ops/sum_squares.hpp"    // sum_squares
#include "weft/ops/swiglu.hpp"         // swiglu_*

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "ops_test_util.hpp"

using namespace weft::ops;
using namespace weft::ops::test;
using weft::bf16;
using weft::host_bf16_gemm, weft::host_bf16_product, weft::set_host_bf16_product, weft::host_bf16_product_summary,
    weft::host_has_dnnl;

namespace {

constexpr weft::host_context ctx{};
constexpr double eps = 0x1p-7;  // twice bf16's unit roundoff u = 2^-8

// eps plus the float accumulation bound for a reduction of length K (see the top).
constexpr double tol_reduction(std::size_t k) { return eps + 2.0 * double(k) * 0x1p-24; }

// Values rounded to bf16, kept as double: the reference's inputs.
std::vector<double> rounded(std::vector<double> v) {
  for (auto& x : v) x = double(bf16(x));
  return v;
}
std::vector<bf16> to_bf16(const std::vector<double>& v) {
  std::vector<bf16> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) r[i] = bf16(v[i]);
  return r;
}
template <class T>
std::vector<double> to_f64(const std::vector<T>& v) {
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) r[i] = double(v[i]);
  return r;
}
// Random bf16-representable data.
std::vector<double> rnd(std::size_t n, unsigned seed, double lo = -1.0, double hi = 1.0) {
  return rounded(random_vector(n, seed, lo, hi));
}
// Prints the measured error next to its tolerance (the numbers docs/precision.md quotes).
double measured(const char* what, double err, double tol) {
  std::printf("bf16 %-34s err %.3e  tol %.3e\n", what, err, tol);
  return err;
}

constexpr std::size_t B = 2, S = 32, N = B * S, C = 96, OC = 80, V = 200, H = 4, KVH = 2, D = 16;

}  // namespace

TEST_CASE("bf16 matmul forward and backward against double", "[ops][bf16][matmul]") {
  const auto x = rnd(N * C, 1), w = rnd(OC * C, 2, -0.5, 0.5), b = rnd(OC, 3), dout = rnd(N * OC, 4);
  const auto g0x = rnd(N * C, 5, -0.1, 0.1), g0w = rnd(OC * C, 6, -0.1, 0.1), g0b = rnd(OC, 7, -0.1, 0.1);
  std::vector<double> out(N * OC), dx = g0x, dw = g0w, db = g0b;
  matmul_forward<N, C, OC>(ctx, out.data(), x.data(), w.data(), b.data());
  matmul_backward<N, C, OC>(ctx, dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data());
  auto xh = to_bf16(x), wh = to_bf16(w), bh = to_bf16(b), douth = to_bf16(dout);
  std::vector<bf16> outh(N * OC), dxh = to_bf16(g0x), dwh = to_bf16(g0w), dbh = to_bf16(g0b);
  matmul_forward<N, C, OC>(ctx, outh.data(), xh.data(), wh.data(), bh.data());
  matmul_backward<N, C, OC>(ctx, dxh.data(), dwh.data(), dbh.data(), douth.data(), xh.data(), wh.data());
  const double e_out = measured("matmul_forward out", rel_err(to_f64(outh), out), tol_reduction(C));
  CHECK(e_out < tol_reduction(C));
  CHECK(e_out > 0);  // the output really is rounded to bf16
  CHECK(measured("matmul_backward dinp", rel_err(to_f64(dxh), dx), tol_reduction(OC)) < tol_reduction(OC));
  CHECK(measured("matmul_backward dweight", rel_err(to_f64(dwh), dw), tol_reduction(N)) < tol_reduction(N));
  CHECK(measured("matmul_backward dbias", rel_err(to_f64(dbh), db), tol_reduction(N)) < tol_reduction(N));
  // Without a bias (beta = 0: stale NaNs in out must not leak).
  std::vector<bf16> out2(N * OC, bf16(std::nan("")));
  matmul_forward<N, C, OC>(ctx, out2.data(), xh.data(), wh.data(), nullptr);
  matmul_forward<N, C, OC>(ctx, out.data(), x.data(), w.data(), nullptr);
  CHECK(measured("matmul_forward out (no bias)", rel_err(to_f64(out2), out), tol_reduction(C)) < tol_reduction(C));
}

// Every bf16 product the host backend can run: the portable float tiles (every build) and
// oneDNN's matmul on the matrix engine (builds with WEFT_HAS_DNNL).
static std::vector<host_bf16_gemm> bf16_products() {
  std::vector<host_bf16_gemm> p{host_bf16_gemm::portable};
  if (host_has_dnnl) p.push_back(host_bf16_gemm::dnnl);
  return p;
}

TEST_CASE("bf16 matmul: the host picks oneDNN where it is linked, the portable tiles otherwise", "[ops][bf16][matmul]") {
#if defined(WEFT_HAS_DNNL)
  CHECK(host_has_dnnl);
#endif
  const auto before = host_bf16_product();
  CHECK(set_host_bf16_product(host_bf16_gemm::portable) == host_bf16_gemm::portable);
  CHECK(host_bf16_product_summary() == "portable float tiles");
  CHECK(set_host_bf16_product(host_bf16_gemm::dnnl) == (host_has_dnnl ? host_bf16_gemm::dnnl : host_bf16_gemm::portable));
  if (host_has_dnnl) CHECK(host_bf16_product_summary().rfind("oneDNN ", 0) == 0);
  set_host_bf16_product(before);
}

TEST_CASE("bf16 matmul: every host product path (portable tiles, oneDNN) within tolerance of double", "[ops][bf16][matmul]") {
  // A shape with partial tiles in both directions and every transpose combination.
  constexpr std::size_t m = 70, n = 300, k = 50;
  const auto a = rnd(m * k, 8), bm = rnd(k * n, 9), c0 = rnd(m * n, 10);
  const auto before = host_bf16_product();
  for (const host_bf16_gemm product : bf16_products()) {
    INFO("product: " << host_bf16_product_summary());
    set_host_bf16_product(product);
    REQUIRE(host_bf16_product() == product);
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      // op(A)(i, p) and op(B)(p, j), stored with the transposes as the flags say.
      std::vector<double> as(m * k), bs(k * n);
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t p = 0; p < k; ++p) (ta ? as[p * m + i] : as[i * k + p]) = a[i * k + p];
      for (std::size_t p = 0; p < k; ++p)
        for (std::size_t j = 0; j < n; ++j) (tb ? bs[j * k + p] : bs[p * n + j]) = bm[p * n + j];
      std::vector<double> ref = c0;
      detail::gemm_fallback<double>(ta, tb, m, n, k, 0.5, as.data(), ta ? m : k, bs.data(), tb ? k : n, 2.0, ref.data(), n);
      auto ah = to_bf16(as), bh = to_bf16(bs);
      std::vector<bf16> c = to_bf16(c0);
      detail::gemm_bf16(ta, tb, m, n, k, 0.5f, ah.data(), ta ? m : k, bh.data(), tb ? k : n, 2.0f, c.data(), n);
      std::vector<float> cf(c0.begin(), c0.end());
      detail::gemm_bf16(ta, tb, m, n, k, 0.5f, ah.data(), ta ? m : k, bh.data(), tb ? k : n, 2.0f, cf.data(), n);
      CHECK(rel_err(to_f64(c), ref) < tol_reduction(k));
      CHECK(rel_err(to_f64(cf), ref) < 2.0 * double(k) * 0x1p-24 + 1e-6);  // float C: no bf16 rounding
      // beta = 0 writes C: stale NaNs must not leak, alpha = 1 (the matmul ops' case).
      std::vector<bf16> cn(m * n, bf16(std::nan("")));
      detail::gemm_bf16(ta, tb, m, n, k, 1.0f, ah.data(), ta ? m : k, bh.data(), tb ? k : n, 0.0f, cn.data(), n);
      std::vector<double> ref0(m * n);
      detail::gemm_fallback<double>(ta, tb, m, n, k, 1.0, as.data(), ta ? m : k, bs.data(), tb ? k : n, 0.0, ref0.data(), n);
      CHECK(rel_err(to_f64(cn), ref0) < tol_reduction(k));
    }
  }
  set_host_bf16_product(before);
}

TEST_CASE("bf16 matmul: the whole matmul op on each host product path", "[ops][bf16][matmul]") {
  // A depth far above one panel (the step's 3072-wide MLP) in forward and backward.
  constexpr std::size_t bn = 64, bc = 3072, boc = 96;
  const auto x = rnd(bn * bc, 41), w = rnd(boc * bc, 42), dout = rnd(bn * boc, 43);
  std::vector<double> out(bn * boc), dx(bn * bc, 0.0), dw(boc * bc, 0.0);
  matmul_forward<bn, bc, boc>(ctx, out.data(), x.data(), w.data(), nullptr);
  matmul_backward<bn, bc, boc>(ctx, dx.data(), dw.data(), nullptr, dout.data(), x.data(), w.data());
  const auto before = host_bf16_product();
  for (const host_bf16_gemm product : bf16_products()) {
    INFO("product: " << host_bf16_product_summary());
    set_host_bf16_product(product);
    auto xh = to_bf16(x), wh = to_bf16(w), douth = to_bf16(dout);
    std::vector<bf16> outh(bn * boc), dxh(bn * bc, bf16(0.0f)), dwh(boc * bc, bf16(0.0f));
    matmul_forward<bn, bc, boc>(ctx, outh.data(), xh.data(), wh.data(), nullptr);
    matmul_backward<bn, bc, boc>(ctx, dxh.data(), dwh.data(), nullptr, douth.data(), xh.data(), wh.data());
    CHECK(measured("matmul_forward out", rel_err(to_f64(outh), out), tol_reduction(bc)) < tol_reduction(bc));
    CHECK(measured("matmul_backward dinp", rel_err(to_f64(dxh), dx), tol_reduction(boc)) < tol_reduction(boc));
    CHECK(measured("matmul_backward dweight", rel_err(to_f64(dwh), dw), tol_reduction(bn)) < tol_reduction(bn));
  }
  set_host_bf16_product(before);
}

TEST_CASE("bf16 layernorm and rmsnorm against double; statistics stay float", "[ops][bf16][norm]") {
  const auto x = rnd(N * C, 11, -2.0, 3.0), w = rnd(C, 12), b = rnd(C, 13), dout = rnd(N * C, 14);
  const auto g0x = rnd(N * C, 15, -0.1, 0.1), g0w = rnd(C, 16, -0.1, 0.1), g0b = rnd(C, 17, -0.1, 0.1);
  auto xh = to_bf16(x), wh = to_bf16(w), bh = to_bf16(b), douth = to_bf16(dout);
  {
    std::vector<double> out(N * C), mean(N), rstd(N);
    layernorm_forward<N, C>(ctx, out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data());
    std::vector<bf16> outh(N * C);
    std::vector<float> meanf(N), rstdf(N);  // stat_t<bf16> = float
    layernorm_forward<N, C>(ctx, outh.data(), meanf.data(), rstdf.data(), xh.data(), wh.data(), bh.data());
    CHECK(measured("layernorm_forward out", rel_err(to_f64(outh), out), tol_reduction(C)) < tol_reduction(C));
    // Statistics are float: a float rounding of a double sum, far below bf16's step.
    CHECK(measured("layernorm_forward mean (f32)", rel_err(to_f64(meanf), mean), 1e-6) < 1e-6);
    CHECK(measured("layernorm_forward rstd (f32)", rel_err(to_f64(rstdf), rstd), 1e-6) < 1e-6);
    // Backward from the same float statistics on both sides.
    const auto mean_in = to_f64(meanf), rstd_in = to_f64(rstdf);
    std::vector<double> dx = g0x, dw = g0w, db = g0b;
    layernorm_backward<N, C>(ctx, dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), mean_in.data(),
                             rstd_in.data());
    std::vector<bf16> dxh = to_bf16(g0x), dwh = to_bf16(g0w), dbh = to_bf16(g0b);
    layernorm_backward<N, C>(ctx, dxh.data(), dwh.data(), dbh.data(), douth.data(), xh.data(), wh.data(), meanf.data(),
                             rstdf.data());
    CHECK(measured("layernorm_backward dinp", rel_err(to_f64(dxh), dx), tol_reduction(C)) < tol_reduction(C));
    CHECK(measured("layernorm_backward dweight", rel_err(to_f64(dwh), dw), tol_reduction(N)) < tol_reduction(N));
    CHECK(measured("layernorm_backward dbias", rel_err(to_f64(dbh), db), tol_reduction(N)) < tol_reduction(N));
  }
  {
    std::vector<double> out(N * C), rstd(N);
    rmsnorm_forward<N, C>(ctx, out.data(), rstd.data(), x.data(), w.data());
    std::vector<bf16> outh(N * C);
    std::vector<float> rstdf(N);
    rmsnorm_forward<N, C>(ctx, outh.data(), rstdf.data(), xh.data(), wh.data());
    CHECK(measured("rmsnorm_forward out", rel_err(to_f64(outh), out), tol_reduction(C)) < tol_reduction(C));
    CHECK(measured("rmsnorm_forward rstd (f32)", rel_err(to_f64(rstdf), rstd), 1e-6) < 1e-6);
    const auto rstd_in = to_f64(rstdf);
    std::vector<double> dx = g0x, dw = g0w;
    rmsnorm_backward<N, C>(ctx, dx.data(), dw.data(), dout.data(), x.data(), w.data(), rstd_in.data());
    std::vector<bf16> dxh = to_bf16(g0x), dwh = to_bf16(g0w);
    rmsnorm_backward<N, C>(ctx, dxh.data(), dwh.data(), douth.data(), xh.data(), wh.data(), rstdf.data());
    CHECK(measured("rmsnorm_backward dinp", rel_err(to_f64(dxh), dx), tol_reduction(C)) < tol_reduction(C));
    CHECK(measured("rmsnorm_backward dweight", rel_err(to_f64(dwh), dw), tol_reduction(N)) < tol_reduction(N));
  }
}

TEST_CASE("bf16 gelu, swiglu, residual against double", "[ops][bf16][elementwise]") {
  constexpr std::size_t M = N * C;
  const auto x = rnd(2 * M, 21, -4.0, 4.0), dout = rnd(2 * M, 22), g0 = rnd(2 * M, 23, -0.1, 0.1);
  auto xh = to_bf16(x), douth = to_bf16(dout);
  {
    std::vector<double> out(M), dx(g0.begin(), g0.begin() + M);
    gelu_forward<M>(ctx, out.data(), x.data());
    gelu_backward<M>(ctx, dx.data(), x.data(), dout.data());
    std::vector<bf16> outh(M), dxh = to_bf16(std::vector<double>(g0.begin(), g0.begin() + M));
    gelu_forward<M>(ctx, outh.data(), xh.data());
    gelu_backward<M>(ctx, dxh.data(), xh.data(), douth.data());
    CHECK(measured("gelu_forward", rel_err(to_f64(outh), out), eps) < eps);
    CHECK(measured("gelu_backward", rel_err(to_f64(dxh), dx), eps) < eps);
  }
  {
    std::vector<double> out(M), dx = g0;
    swiglu_forward<N, C>(ctx, out.data(), x.data());
    swiglu_backward<N, C>(ctx, dx.data(), x.data(), dout.data());
    std::vector<bf16> outh(M), dxh = to_bf16(g0);
    swiglu_forward<N, C>(ctx, outh.data(), xh.data());
    swiglu_backward<N, C>(ctx, dxh.data(), xh.data(), douth.data());
    CHECK(measured("swiglu_forward", rel_err(to_f64(outh), out), eps) < eps);
    CHECK(measured("swiglu_backward", rel_err(to_f64(dxh), dx), eps) < eps);
  }
  {
    // a + b in float, rounded once: exactly bf16(float(a) + float(b)) for every element.
    std::vector<bf16> outh(M);
    residual_forward<M>(ctx, outh.data(), xh.data(), xh.data() + M);
    std::size_t exact = 0;
    for (std::size_t i = 0; i < M; ++i)
      exact += outh[i].bits == bf16(float(xh[i]) + float(xh[M + i])).bits ? 1 : 0;
    CHECK(exact == M);
    std::vector<bf16> da = to_bf16(std::vector<double>(g0.begin(), g0.begin() + M)), db = da;
    residual_backward<M>(ctx, da.data(), db.data(), douth.data());
    std::vector<double> ref(M);
    for (std::size_t i = 0; i < M; ++i) ref[i] = g0[i] + dout[i];
    CHECK(measured("residual_backward", rel_err(to_f64(da), ref), eps) < eps);
    CHECK(rel_err(to_f64(db), ref) < eps);
  }
}

TEST_CASE("bf16 attention and rope against double", "[ops][bf16][attention]") {
  constexpr std::size_t W = (H + 2 * KVH) * D;
  const auto qkv = rnd(B * S * W, 31, -2.0, 2.0), dout = rnd(B * S * H * D, 32), g0 = rnd(B * S * W, 33, -0.1, 0.1);
  auto qkvh = to_bf16(qkv), douth = to_bf16(dout);
  std::vector<double> out(B * S * H * D), att(B * H * S * S);
  attention_forward<B, S, H, KVH, D>(ctx, out.data(), att.data(), qkv.data());
  std::vector<bf16> outh(out.size()), atth(att.size());
  attention_forward<B, S, H, KVH, D>(ctx, outh.data(), atth.data(), qkvh.data());
  CHECK(measured("attention_forward out", rel_err(to_f64(outh), out), tol_reduction(S)) < tol_reduction(S));
  CHECK(measured("attention_forward att", rel_err(to_f64(atth), att), eps) < eps);
  // Backward from the same kept probabilities (the bf16 ones) on both sides.
  const auto att_in = to_f64(atth);
  std::vector<double> dqkv = g0, scratch(att.size());
  attention_backward<B, S, H, KVH, D>(ctx, dqkv.data(), scratch.data(), dout.data(), qkv.data(), att_in.data());
  std::vector<bf16> dqkvh = to_bf16(g0), scratchh(att.size());
  attention_backward<B, S, H, KVH, D>(ctx, dqkvh.data(), scratchh.data(), douth.data(), qkvh.data(), atth.data());
  // dk sums K = S * H/KVH products with d(preatt), which the bf16 op stores rounded between
  // its two passes. Each term then carries an independent error <= u |term|; they add like a
  // random walk, u sqrt(K) |term|, while K random-signed terms sum to about sqrt(K) |term|:
  // the propagated error is about u |dk|, as large again as the output rounding. Hence 2 eps.
  const double tol_dqkv = 2 * eps;
  CHECK(measured("attention_backward dqkv", rel_err(to_f64(dqkvh), dqkv), tol_dqkv) < tol_dqkv);
  CHECK(measured("attention_backward d(preatt)", rel_err(to_f64(scratchh), scratch), tol_reduction(D)) <
        tol_reduction(D));
  // rope: a rotation of pairs, one rounding per output.
  std::vector<double> r(qkv.size()), dr = g0;
  rope_forward<B, S, H, KVH, D>(ctx, r.data(), qkv.data());
  const auto dr_out = rnd(B * S * W, 34);
  const auto dr_outh = to_bf16(dr_out);
  rope_backward<B, S, H, KVH, D>(ctx, dr.data(), dr_out.data());
  std::vector<bf16> rh(qkv.size()), drh = to_bf16(g0);
  rope_forward<B, S, H, KVH, D>(ctx, rh.data(), qkvh.data());
  rope_backward<B, S, H, KVH, D>(ctx, drh.data(), dr_outh.data());
  CHECK(measured("rope_forward", rel_err(to_f64(rh), r), eps) < eps);
  CHECK(measured("rope_backward", rel_err(to_f64(drh), dr), eps) < eps);
}

TEST_CASE("bf16 embeddings against double", "[ops][bf16][embedding]") {
  const auto table = rnd(V * C, 41), wpe = rnd(S * C, 42), dout = rnd(N * C, 43), g0 = rnd(V * C, 44, -0.1, 0.1);
  std::vector<std::int32_t> idx(N);
  for (std::size_t n = 0; n < N; ++n) idx[n] = std::int32_t((n * 37) % V);  // distinct rows
  std::vector<double> out(N * C), dtable = g0, dwpe(wpe.size(), 0.0);
  embedding_forward<N, V, C>(ctx, out.data(), idx.data(), table.data());
  positional_forward<B, S, C>(ctx, out.data(), wpe.data());
  embedding_backward<N, V, C>(ctx, dtable.data(), dout.data(), idx.data());
  positional_backward<B, S, C>(ctx, dwpe.data(), dout.data());
  auto th = to_bf16(table), wh = to_bf16(wpe), douth = to_bf16(dout);
  std::vector<bf16> outh(N * C), dth = to_bf16(g0), dwh(wpe.size(), bf16(0.0f));
  embedding_forward<N, V, C>(ctx, outh.data(), idx.data(), th.data());
  positional_forward<B, S, C>(ctx, outh.data(), wh.data());
  embedding_backward<N, V, C>(ctx, dth.data(), douth.data(), idx.data());
  positional_backward<B, S, C>(ctx, dwh.data(), douth.data());
  CHECK(measured("embedding+positional forward", rel_err(to_f64(outh), out), eps) < eps);
  CHECK(measured("embedding_backward", rel_err(to_f64(dth), dtable), eps) < eps);
  CHECK(measured("positional_backward (sum over B)", rel_err(to_f64(dwh), dwpe), tol_reduction(B)) < tol_reduction(B));
}

TEST_CASE("bf16 cross-entropy: float losses, bf16 logit gradients", "[ops][bf16][cross_entropy]") {
  const auto logits = rnd(N * V, 51, -4.0, 4.0);
  std::vector<std::int32_t> targets(N);
  for (std::size_t n = 0; n < N; ++n) targets[n] = n == 3 ? -1 : std::int32_t((n * 13) % V);
  const double dloss = 1.0 / N;
  std::vector<double> losses(N), z = logits;
  softmax_cross_entropy_forward_backward<N, V>(ctx, losses.data(), z.data(), targets.data(), dloss);
  auto zh = to_bf16(logits);
  std::vector<float> lossesf(N), evalf(N);
  softmax_cross_entropy_forward<N, V>(ctx, evalf.data(), zh.data(), targets.data());
  softmax_cross_entropy_forward_backward<N, V>(ctx, lossesf.data(), zh.data(), targets.data(), float(dloss));
  // Losses: log-sum-exp in double over float exps (exp_fast, ~1 float ulp).
  CHECK(measured("cross_entropy losses (f32)", rel_err(to_f64(lossesf), losses), 1e-6) < 1e-6);
  CHECK(rel_err(to_f64(evalf), losses) < 1e-6);
  CHECK(measured("cross_entropy dlogits", rel_err(to_f64(zh), z), eps) < eps);
  CHECK(mean_loss(ctx, lossesf.data(), N) == Approx(mean_loss(ctx, losses.data(), N)).epsilon(1e-6));
}

TEST_CASE("bf16 AdamW: the vector form (AVX-512 where the CPU has it) agrees with the scalar form", "[ops][bf16][adamw]") {
  // n = 1000 runs 992 elements through the 16-wide form (where the CPU has AVX-512 BW) and 8
  // through the scalar tail; one element at a time is always the scalar form.
  constexpr std::size_t n = 1000;
  const auto p0 = random_vector(n, 71), g = rnd(n, 72, -0.01, 0.01), m0 = random_vector(n, 73, -1e-3, 1e-3);
  const auto v0 = random_vector(n, 74, 0.0, 1e-5);
  std::vector<float> mv(p0.begin(), p0.end()), mm(m0.begin(), m0.end()), mvv(v0.begin(), v0.end());
  std::vector<float> ms = mv, sm = mm, sv = mvv;
  std::vector<bf16> gh = to_bf16(g), cv(n), cs(n);
  gh[5] = bf16(std::nanf(""));  // a NaN gradient: a NaN master, a quiet NaN in the copy
  for (int t = 1; t <= 2; ++t) {
    adamw_step(ctx, mv.data(), cv.data(), gh.data(), mm.data(), mvv.data(), n, 1e-2, 0.9, 0.95, 1e-8, 0.1, t);
    for (std::size_t i = 0; i < n; ++i)
      adamw_step(ctx, ms.data() + i, cs.data() + i, gh.data() + i, sm.data() + i, sv.data() + i, 1, 1e-2, 0.9, 0.95,
                 1e-8, 0.1, t);
  }
  double worst = 0;
  std::size_t copies = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i == 5) continue;
    worst = std::max(worst, std::abs(double(mv[i]) - double(ms[i])) / std::max(1e-30, std::abs(double(ms[i]))));
    copies += cv[i].bits == bf16(mv[i]).bits ? 1 : 0;  // the copy is the vector form's master rounded once
  }
  CHECK(measured("adamw vector vs scalar master", worst, 1e-6) < 1e-6);
  CHECK(copies == n - 1);
  CHECK(std::isnan(mv[5]));
  CHECK(std::isnan(float(cv[5])));
  CHECK(cv[5].bits == bf16(mv[5]).bits);
}

TEST_CASE("bf16 AdamW: f32 master and moments, one rounding into the bf16 copy", "[ops][bf16][adamw]") {
  constexpr std::size_t n = 1000;
  const auto p0 = random_vector(n, 61), g = rnd(n, 62, -0.01, 0.01), m0 = random_vector(n, 63, -1e-3, 1e-3);
  const auto v0 = random_vector(n, 64, 0.0, 1e-5);
  // Reference: double everything, from the float-rounded master and moments.
  std::vector<float> master(p0.begin(), p0.end()), m(m0.begin(), m0.end()), v(v0.begin(), v0.end());
  std::vector<double> pr = to_f64(master), mr = to_f64(m), vr = to_f64(v);
  std::vector<bf16> copy(n), gh = to_bf16(g);
  for (int t = 1; t <= 3; ++t) {
    adamw_step(ctx, pr.data(), g.data(), mr.data(), vr.data(), n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, t);
    adamw_step(ctx, master.data(), copy.data(), gh.data(), m.data(), v.data(), n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, t);
  }
  CHECK(measured("adamw master (f32)", rel_err(to_f64(master), pr), 1e-5) < 1e-5);
  CHECK(rel_err(to_f64(m), mr) < 1e-5);
  CHECK(rel_err(to_f64(v), vr) < 1e-5);
  std::size_t exact = 0;  // the copy is the master rounded once
  for (std::size_t i = 0; i < n; ++i) exact += copy[i].bits == bf16(master[i]).bits ? 1 : 0;
  CHECK(exact == n);
  // All-bf16 storage (parameters and moments bf16), update computed in float.
  std::vector<bf16> ph = to_bf16(p0), mh = to_bf16(m0), vh = to_bf16(v0);
  std::vector<double> pr2 = to_f64(ph), mr2 = to_f64(mh), vr2 = to_f64(vh);
  adamw_step(ctx, pr2.data(), g.data(), mr2.data(), vr2.data(), n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 1);
  adamw_step(ctx, ph.data(), gh.data(), mh.data(), vh.data(), n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 1);
  CHECK(measured("adamw all-bf16 param", rel_err(to_f64(ph), pr2), eps) < eps);
}

TEST_CASE("bf16 memory ops", "[ops][bf16][memory]") {
  constexpr std::size_t n = 4099;  // not a multiple of the 8 lanes
  const auto x = rnd(n, 71), y0 = rnd(n, 72);
  auto xh = to_bf16(x);
  std::vector<bf16> y = to_bf16(y0), z(n);
  fill(ctx, z.data(), n, bf16(0.75f));
  CHECK(to_f64(z) == std::vector<double>(n, 0.75));
  zero(ctx, z.data(), n);
  CHECK(to_f64(z) == std::vector<double>(n, 0.0));
  copy(ctx, z.data(), xh.data(), n);
  CHECK(to_f64(z) == x);
  accumulate(ctx, y.data(), xh.data(), n, bf16(0.3f));
  std::vector<double> ref(n);
  for (std::size_t i = 0; i < n; ++i) ref[i] = y0[i] + double(bf16(0.3f)) * x[i];
  CHECK(measured("accumulate (alpha)", rel_err(to_f64(y), ref), eps) < eps);
  // Sums of squares are double sums of the exact bf16 values.
  CHECK(sum_squares(ctx, xh.data(), n) == Approx(sum_squares(ctx, x.data(), n)).epsilon(1e-14));
  CHECK(sum_squares_continue(ctx, 1.0, xh.data(), n) == Approx(sum_squares_continue(ctx, 1.0, x.data(), n)).epsilon(1e-14));
  // clip: the float factor applied, one rounding per element.
  std::vector<bf16> gc = xh;
  std::vector<double> gr = x;
  clip(ctx, gc.data(), n, 3.0, 1.0);
  clip(ctx, gr.data(), n, 3.0, 1.0);
  CHECK(measured("clip", rel_err(to_f64(gc), gr), eps) < eps);
  std::vector<bf16> lh = to_bf16(rnd(n, 73, 0.0, 10.0));
  CHECK(mean_loss(ctx, lh.data(), n) == Approx(mean_loss(ctx, to_f64(lh).data(), n)).epsilon(1e-14));
  // cast: float -> bf16 is round-to-nearest-even, bf16 -> float exact.
  const auto fd = random_vector(n, 74);
  std::vector<float> f(fd.begin(), fd.end()), back(n);
  cast(ctx, z.data(), f.data(), n);
  std::size_t exact = 0;
  for (std::size_t i = 0; i < n; ++i) exact += z[i].bits == bf16(f[i]).bits ? 1 : 0;
  CHECK(exact == n);
  cast(ctx, back.data(), z.data(), n);
  CHECK(to_f64(back) == to_f64(z));
}

TEST_CASE("the tolerances catch a bf16 accumulator", "[ops][bf16][sentinel]") {
  // The matmul forward computed with a bf16 running sum (each += rounds), as an op that forgot
  // to widen would: its error must be outside the tolerance the op is held to.
  const auto x = rnd(N * C, 1), w = rnd(OC * C, 2, -0.5, 0.5);
  std::vector<double> ref(N * OC);
  matmul_forward<N, C, OC>(ctx, ref.data(), x.data(), w.data(), nullptr);
  std::vector<bf16> bad(N * OC);
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j < OC; ++j) {
      bf16 acc(0.0f);
      for (std::size_t p = 0; p < C; ++p) acc += bf16(x[i * C + p]) * bf16(w[j * C + p]);
      bad[i * OC + j] = acc;
    }
  const double e = measured("sentinel: bf16 accumulator", rel_err(to_f64(bad), ref), tol_reduction(C));
  CHECK(e > tol_reduction(C));
}
