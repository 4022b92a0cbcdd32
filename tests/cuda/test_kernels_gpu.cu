// Every weft kernel (backend/cuda/kernels.cuh) on the device against the host op on the same
// data, in f32 and bf16, with the tolerances of the emulated tests in tests/kernel/ (k units of
// the dtype's epsilon relative to the reference's magnitude; the reference is the host op in
// double on the inputs as rounded to the dtype). Exit codes: 0 pass, 1 fail, 77 skip (no device).
#include <weft/backend/cuda/kernels.cuh>
#include <weft/backend/cuda/ops.cuh>  // attention on tensor cores, through cuda_context
#include <weft/core/dtype.hpp>
#include <weft/ops/accumulate.hpp>
#include <weft/ops/adamw.hpp>
#include <weft/ops/attention.hpp>
#include <weft/ops/clip.hpp>
#include <weft/ops/copy.hpp>
#include <weft/ops/mean_loss.hpp>
#include <weft/ops/cross_entropy.hpp>
#include <weft/ops/embedding.hpp>
#include <weft/ops/gelu.hpp>
#include <weft/ops/layernorm.hpp>
#include <weft/ops/matmul.hpp>
#include <weft/ops/residual.hpp>
#include <weft/ops/rmsnorm.hpp>
#include <weft/ops/rope.hpp>
#include <weft/ops/sum_squares.hpp>
#include <weft/ops/geglu.hpp>
#include <weft/ops/swiglu.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace k = weft::cuda::kernels;
using weft::bf16;

namespace {

int failures = 0;
const weft::host_context host{};

// ---- adapters: one line each to follow a host-op signature change ----
void ref_accumulate(double* y, const double* x, std::size_t n, double a) { weft::ops::accumulate(host, y, x, n, a); }
void ref_clip(double* g, std::size_t n, double norm, double mx) { weft::ops::clip(host, g, n, norm, mx); }
double ref_sum_squares(const double* x, std::size_t n) { return weft::ops::sum_squares(host, x, n); }
double ref_mean_loss(const double* x, std::size_t n) { return weft::ops::mean_loss(host, x, n); }
void ref_copy(double* d, const double* s, std::size_t n) { weft::ops::copy(host, d, s, n); }
void ref_adamw(double* p, const double* g, double* m, double* v, std::size_t n, const k::adamw_hyper& h) {
  weft::ops::adamw_step(host, p, g, m, v, n, h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.t);
}
template <std::size_t N> void ref_gelu_forward(double* o, const double* i) { weft::ops::gelu_forward<N>(host, o, i); }
template <std::size_t N> void ref_gelu_backward(double* d, const double* i, const double* g) { weft::ops::gelu_backward<N>(host, d, i, g); }
template <std::size_t N, std::size_t H> void ref_swiglu_forward(double* o, const double* i) { weft::ops::swiglu_forward<N, H>(host, o, i); }
template <std::size_t N, std::size_t H> void ref_swiglu_backward(double* d, const double* i, const double* g) { weft::ops::swiglu_backward<N, H>(host, d, i, g); }
template <std::size_t N, std::size_t H> void ref_geglu_forward(double* o, const double* i) { weft::ops::geglu_forward<N, H>(host, o, i); }
template <std::size_t N, std::size_t H> void ref_geglu_backward(double* d, const double* i, const double* g) { weft::ops::geglu_backward<N, H>(host, d, i, g); }
template <std::size_t N> void ref_residual_forward(double* o, const double* a, const double* b) { weft::ops::residual_forward<N>(host, o, a, b); }
template <std::size_t N> void ref_residual_backward(double* a, double* b, const double* g) { weft::ops::residual_backward<N>(host, a, b, g); }
template <std::size_t N, std::size_t V, std::size_t C> void ref_embedding_forward(double* o, const std::int32_t* i, const double* t) { weft::ops::embedding_forward<N, V, C>(host, o, i, t); }
template <std::size_t N, std::size_t V, std::size_t C> void ref_embedding_backward(double* d, const double* g, const std::int32_t* i) { weft::ops::embedding_backward<N, V, C>(host, d, g, i); }
template <std::size_t B, std::size_t S, std::size_t C> void ref_positional_forward(double* o, const double* p) { weft::ops::positional_forward<B, S, C>(host, o, p); }
template <std::size_t B, std::size_t S, std::size_t C> void ref_positional_backward(double* d, const double* g) { weft::ops::positional_backward<B, S, C>(host, d, g); }
template <std::size_t N, std::size_t C> void ref_layernorm_forward(double* o, double* m, double* r, const double* i, const double* w, const double* b) { weft::ops::layernorm_forward<N, C>(host, o, m, r, i, w, b); }
template <std::size_t N, std::size_t C> void ref_layernorm_backward(double* di, double* dw, double* db, const double* g, const double* i, const double* w, const double* m, const double* r) { weft::ops::layernorm_backward<N, C>(host, di, dw, db, g, i, w, m, r); }
template <std::size_t N, std::size_t C> void ref_rmsnorm_forward(double* o, double* r, const double* i, const double* w) { weft::ops::rmsnorm_forward<N, C>(host, o, r, i, w); }
template <std::size_t N, std::size_t C> void ref_rmsnorm_backward(double* di, double* dw, const double* g, const double* i, const double* w, const double* r) { weft::ops::rmsnorm_backward<N, C>(host, di, dw, g, i, w, r); }
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base = 10000, std::size_t R = D, class Sc = weft::no_rope_scaling> void ref_rope_forward(double* o, const double* i) { weft::ops::rope_forward<B, S, H, KVH, D, Base, R, Sc>(host, o, i); }
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t Base = 10000, std::size_t R = D, class Sc = weft::no_rope_scaling> void ref_rope_backward(double* d, const double* g) { weft::ops::rope_backward<B, S, H, KVH, D, Base, R, Sc>(host, d, g); }
template <std::size_t N, std::size_t V> void ref_cross_entropy_eval(double* l, const double* z, const std::int32_t* t) { weft::ops::softmax_cross_entropy_forward<N, V>(host, l, z, t); }
template <std::size_t N, std::size_t V> void ref_cross_entropy(double* l, double* z, const std::int32_t* t, double s) { weft::ops::softmax_cross_entropy_forward_backward<N, V>(host, l, z, t, s); }
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0> void ref_attention_forward(double* o, double* a, const double* q) { weft::ops::attention_forward<B, S, H, KVH, D, W>(host, o, a, q); }
template <std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0> void ref_attention_backward(double* d, double* s, const double* g, const double* q, const double* a) { weft::ops::attention_backward<B, S, H, KVH, D, W>(host, d, s, g, q, a); }
template <std::size_t N, std::size_t OC> void ref_bias_backward(double* db, const double* g) { weft::ops::bias_backward<N, OC>(host, db, g); }

// ---- data ----
template <class T> constexpr double eps_v = static_cast<double>(std::numeric_limits<T>::epsilon());
template <class T> const char* name_v = "f32";
template <> const char* name_v<bf16> = "bf16";
template <> const char* name_v<weft::f16> = "f16";

template <class T>
std::vector<T> random(std::size_t n, std::mt19937& rng, double lo = -1, double hi = 1) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(static_cast<float>(d(rng)));
  return v;
}
template <class T>
std::vector<double> widen(const std::vector<T>& v) {
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) r[i] = static_cast<float>(v[i]);
  return r;
}
template <class T>
void check(const std::string& what, const std::vector<T>& got, const std::vector<double>& ref, double k) {
  double err = 0, mag = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double e = std::fabs(static_cast<double>(static_cast<float>(got[i])) - ref[i]);
    err = std::isnan(e) ? INFINITY : std::max(err, e);
    mag = std::max(mag, std::fabs(ref[i]));
  }
  const double tol = k * eps_v<T> * mag;
  const bool ok = err <= tol;
  std::printf("%s %-36s %-4s max err %.3e tol %.3e\n", ok ? "ok  " : "FAIL", what.c_str(), name_v<T>, err, tol);
  failures += ok ? 0 : 1;
}

// ---- device buffers ----
template <class T>
struct dbuf {
  T* p = nullptr;
  std::size_t n = 0;
  explicit dbuf(const std::vector<T>& h) : n(h.size()) {
    cudaMalloc(&p, n * sizeof(T) + 16);
    cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice);
  }
  explicit dbuf(std::size_t count) : n(count) { cudaMalloc(&p, n * sizeof(T) + 16); }
  ~dbuf() { cudaFree(p); }
  dbuf(const dbuf&) = delete;
  std::vector<T> get() const {
    std::vector<T> h(n);
    cudaDeviceSynchronize();
    cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
    return h;
  }
};

void launched(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::printf("FAIL launch %s: %s\n", what, cudaGetErrorString(e));
    ++failures;
  }
}

// ---- the cases ----
template <class T>
void memory_cases(std::mt19937& rng) {
  const std::size_t n = 100003;
  auto y = random<T>(n, rng), x = random<T>(n, rng);
  auto ry = widen(y);
  const auto rx = widen(x);
  dbuf<T> dy(y), dx(x);
  launched(k::launch_accumulate(nullptr, dy.p, dx.p, n, 0.75f), "accumulate");
  ref_accumulate(ry.data(), rx.data(), n, 0.75);
  check("accumulate", dy.get(), ry, 1);

  dbuf<double> ss(1), scratch(k::sum_squares_blocks(n));
  launched(k::launch_sum_squares(nullptr, ss.p, dx.p, n, scratch.p), "sum_squares");
  const double got = ss.get()[0], ref = ref_sum_squares(rx.data(), n);
  const bool ok = std::fabs(got - ref) <= n * 1.1e-16 * ref;
  std::printf("%s sum_squares %s err %.3e\n", ok ? "ok  " : "FAIL", name_v<T>, std::fabs(got - ref));
  failures += ok ? 0 : 1;

  dbuf<double> mean(1);
  launched(k::launch_mean_loss(nullptr, mean.p, dx.p, n, scratch.p), "mean_loss");
  {
    const double got_mean = mean.get()[0], ref_mean = ref_mean_loss(rx.data(), n);
    const bool ok_mean = std::fabs(got_mean - ref_mean) <= n * 1.1e-16 * std::fabs(ref_mean) + 1e-12;
    std::printf("%s mean_loss %s err %.3e\n", ok_mean ? "ok  " : "FAIL", name_v<T>, std::fabs(got_mean - ref_mean));
    failures += ok_mean ? 0 : 1;
  }
  dbuf<T> dcopy(n);
  launched(k::launch_copy(nullptr, dcopy.p, dx.p, n), "copy");
  std::vector<double> rcopy(n);
  ref_copy(rcopy.data(), rx.data(), n);
  check("copy", dcopy.get(), rcopy, 0);

  auto rg = widen(x);
  launched(k::launch_clip(nullptr, dx.p, n, ss.p, std::sqrt(ref) / 3), "clip");
  ref_clip(rg.data(), n, std::sqrt(ref), std::sqrt(ref) / 3);
  check("clip", dx.get(), rg, 1);

  // cast f32 -> bf16 -> f32: bits as weft's host rounding
  auto xf = random<float>(n, rng, -100, 100);
  dbuf<float> dxf(xf), dback(n);
  dbuf<bf16> dbf(n);
  launched(k::launch_cast(nullptr, dbf.p, dxf.p, n), "cast f32->bf16");
  launched(k::launch_cast(nullptr, dback.p, dbf.p, n), "cast bf16->f32");
  const auto bf = dbf.get();
  const auto back = dback.get();
  std::size_t cast_bad = 0;
  for (std::size_t i = 0; i < n; ++i)
    cast_bad += (bf[i].bits != bf16(xf[i]).bits || back[i] != static_cast<float>(bf[i])) ? 1 : 0;
  std::printf("%s cast f32<->bf16 (%zu mismatches)\n", cast_bad == 0 ? "ok  " : "FAIL", cast_bad);
  failures += cast_bad == 0 ? 0 : 1;
  launched(k::launch_fill(nullptr, dy.p, n, T(2.5f)), "fill");
  check("fill", dy.get(), std::vector<double>(n, 2.5), 0);
  launched(k::launch_zero(nullptr, dy.p, n), "zero");
  check("zero", dy.get(), std::vector<double>(n, 0.0), 0);

  auto master = random<float>(n, rng), m = random<float>(n, rng, -0.1, 0.1), v = random<float>(n, rng, 0, 0.01);
  auto g = random<T>(n, rng);
  auto rp = widen(master), rm = widen(m), rv = widen(v);
  dbuf<float> dmaster(master), dm(m), dv(v);
  dbuf<T> dg(g);
  dbuf<bf16> dout(n);
  const k::adamw_hyper h{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 3};
  launched(k::launch_adamw(nullptr, dmaster.p, dg.p, dm.p, dv.p, dout.p, n, h), "adamw");
  ref_adamw(rp.data(), widen(g).data(), rm.data(), rv.data(), n, h);
  check("adamw master", dmaster.get(), rp, 4);
  check("adamw bf16 weights", dout.get(), rp, 1);
}

template <class T>
void activation_cases(std::mt19937& rng) {
  constexpr std::size_t N = 64 * 3072, R = 64, H = 1000;
  auto x = random<T>(N, rng, -4, 4), g = random<T>(N, rng), d = random<T>(N, rng);
  dbuf<T> dx(x), dg(g), dd(d), dy(N);
  std::vector<double> ry(N);
  auto rd = widen(d);
  launched(k::launch_gelu_forward<N>(nullptr, dy.p, dx.p), "gelu_forward");
  ref_gelu_forward<N>(ry.data(), widen(x).data());
  check("gelu_forward", dy.get(), ry, 4);
  launched(k::launch_gelu_backward<N>(nullptr, dd.p, dx.p, dg.p), "gelu_backward");
  ref_gelu_backward<N>(rd.data(), widen(x).data(), widen(g).data());
  check("gelu_backward", dd.get(), rd, 4);
  {  // the exact (erf) form: GPT-NeoX, BERT
    constexpr auto erf = weft::gelu_form::erf;
    dbuf<T> ey(N), ed(d);
    std::vector<double> rey(N);
    auto red = widen(d);
    launched(k::launch_gelu_forward<N, erf>(nullptr, ey.p, dx.p), "gelu_forward erf");
    weft::ops::gelu_forward<N, erf>(host, rey.data(), widen(x).data());
    check("gelu_forward erf", ey.get(), rey, 4);
    launched(k::launch_gelu_backward<N, erf>(nullptr, ed.p, dx.p, dg.p), "gelu_backward erf");
    weft::ops::gelu_backward<N, erf>(host, red.data(), widen(x).data(), widen(g).data());
    check("gelu_backward erf", ed.get(), red, 4);
  }
  launched(k::launch_residual_forward<N>(nullptr, dy.p, dx.p, dg.p), "residual_forward");
  ref_residual_forward<N>(ry.data(), widen(x).data(), widen(g).data());
  check("residual_forward", dy.get(), ry, 1);
  auto a = random<T>(N, rng), b = random<T>(N, rng);
  auto ra = widen(a), rb = widen(b);
  dbuf<T> da(a), dbb(b);
  launched(k::launch_residual_backward<N>(nullptr, da.p, dbb.p, dg.p), "residual_backward");
  ref_residual_backward<N>(ra.data(), rb.data(), widen(g).data());
  check("residual_backward da", da.get(), ra, 1);
  check("residual_backward db", dbb.get(), rb, 1);

  auto in = random<T>(R * 2 * H, rng, -3, 3), dout = random<T>(R * H, rng), din = random<T>(R * 2 * H, rng);
  dbuf<T> dinp(in), ddout(dout), ddin(din), dout2(R * H);
  std::vector<double> rsw(R * H);
  auto rdin = widen(din);
  launched(k::launch_swiglu_forward<R, H>(nullptr, dout2.p, dinp.p), "swiglu_forward");
  ref_swiglu_forward<R, H>(rsw.data(), widen(in).data());
  check("swiglu_forward", dout2.get(), rsw, 4);
  launched(k::launch_swiglu_backward<R, H>(nullptr, ddin.p, dinp.p, ddout.p), "swiglu_backward");
  ref_swiglu_backward<R, H>(rdin.data(), widen(in).data(), widen(dout).data());
  check("swiglu_backward", ddin.get(), rdin, 4);
  rdin = widen(ddin.get());
  launched(k::launch_geglu_forward<R, H>(nullptr, dout2.p, dinp.p), "geglu_forward");
  ref_geglu_forward<R, H>(rsw.data(), widen(in).data());
  check("geglu_forward", dout2.get(), rsw, 4);
  launched(k::launch_geglu_backward<R, H>(nullptr, ddin.p, dinp.p, ddout.p), "geglu_backward");
  ref_geglu_backward<R, H>(rdin.data(), widen(in).data(), widen(dout).data());
  check("geglu_backward", ddin.get(), rdin, 4);

  constexpr std::size_t OC = 2304;
  auto go = random<T>(R * OC, rng), bias = random<T>(OC, rng);
  auto rbias = widen(bias);
  dbuf<T> dgo(go), dbias(bias);
  dbuf<float> scratch(k::bias_backward_scratch_v<R, OC>);
  launched(k::launch_bias_backward<R, OC>(nullptr, dbias.p, dgo.p, scratch.p), "bias_backward");
  ref_bias_backward<R, OC>(rbias.data(), widen(go).data());
  check("bias_backward", dbias.get(), rbias, 4);
}

template <class T>
void embedding_rope_cases(std::mt19937& rng) {
  constexpr std::size_t B = 4, S = 256, V = 1000, C = 768, N = B * S;
  auto wte = random<T>(V * C, rng), wpe = random<T>(S * C, rng), dout = random<T>(N * C, rng);
  std::vector<std::int32_t> idx(N);
  for (auto& i : idx) i = static_cast<std::int32_t>(rng() % V);
  dbuf<T> dwte(wte), dwpe(wpe), ddout(dout), dout_e(N * C);
  dbuf<std::int32_t> didx(idx);
  launched(k::launch_embedding_forward<B, S, V, C>(nullptr, dout_e.p, didx.p, dwte.p, dwpe.p), "embedding_forward");
  std::vector<double> re(N * C);
  ref_embedding_forward<N, V, C>(re.data(), idx.data(), widen(wte).data());
  ref_positional_forward<B, S, C>(re.data(), widen(wpe).data());
  check("embedding_forward", dout_e.get(), re, 1);
  auto rwte = widen(wte), rwpe = widen(wpe);
  dbuf<float> escratch(k::embedding_backward_scratch_v<N, V, C>);
  launched(k::launch_embedding_backward<N, V, C>(nullptr, dwte.p, ddout.p, didx.p, escratch.p), "embedding_backward");
  launched(k::launch_positional_backward<B, S, C>(nullptr, dwpe.p, ddout.p), "positional_backward");
  ref_embedding_backward<N, V, C>(rwte.data(), widen(dout).data(), idx.data());
  ref_positional_backward<B, S, C>(rwpe.data(), widen(dout).data());
  check("embedding_backward", dwte.get(), rwte, 4);
  check("positional_backward", dwpe.get(), rwpe, 4);

  constexpr std::size_t H = 8, KVH = 2, D = 128, W = (H + 2 * KVH) * D;
  auto q = random<T>(B * S * W, rng), dq = random<T>(B * S * W, rng);
  dbuf<T> dqin(q), dqout(B * S * W), ddq(dq);
  launched(k::launch_rope_forward<B, S, H, KVH, D>(nullptr, dqout.p, dqin.p), "rope_forward");
  std::vector<double> rr(B * S * W);
  ref_rope_forward<B, S, H, KVH, D>(rr.data(), widen(q).data());
  check("rope_forward", dqout.get(), rr, 4);
  auto rdq = widen(dq);
  launched(k::launch_rope_backward<B, S, H, KVH, D>(nullptr, ddq.p, dqin.p), "rope_backward");
  ref_rope_backward<B, S, H, KVH, D>(rdq.data(), widen(q).data());
  check("rope_backward", ddq.get(), rdq, 4);
  // LLaMA 3's base with partial rotary (48 of 128): the tails pass through
  constexpr std::size_t Base = 500000, R = 48;
  launched(k::launch_rope_forward<B, S, H, KVH, D, Base, R>(nullptr, dqout.p, dqin.p), "rope_forward (base, partial)");
  ref_rope_forward<B, S, H, KVH, D, Base, R>(rr.data(), widen(q).data());
  check("rope_forward (base 500000, partial)", dqout.get(), rr, 4);
  rdq = widen(ddq.get());
  launched(k::launch_rope_backward<B, S, H, KVH, D, Base, R>(nullptr, ddq.p, dqin.p), "rope_backward (base, partial)");
  ref_rope_backward<B, S, H, KVH, D, Base, R>(rdq.data(), widen(q).data());
  check("rope_backward (base 500000, partial)", ddq.get(), rdq, 4);
  // LLaMA 3.1's frequency scaling over the whole head
  using sc = weft::llama3_rope_scaling<8>;
  launched(k::launch_rope_forward<B, S, H, KVH, D, Base, D, sc>(nullptr, dqout.p, dqin.p), "rope_forward (llama3 scaling)");
  ref_rope_forward<B, S, H, KVH, D, Base, D, sc>(rr.data(), widen(q).data());
  check("rope_forward (llama3 scaling)", dqout.get(), rr, 4);
}

template <class T>
void norm_ce_cases(std::mt19937& rng) {
  constexpr std::size_t N = 512, C = 768;
  auto x = random<T>(N * C, rng, -2, 3), res = random<T>(N * C, rng), w = random<T>(C, rng, 0.5, 1.5),
       b = random<T>(C, rng);
  dbuf<T> dx(x), dres(res), dw(w), db(b), dh(N * C), dy(N * C);
  dbuf<float> dmean(N), drstd(N);
  launched(k::launch_residual_layernorm_forward<N, C>(nullptr, dh.p, dy.p, dmean.p, drstd.p, dx.p, dres.p, dw.p, db.p),
           "residual_layernorm_forward");
  const auto h = dh.get();
  std::vector<double> rh(N * C), ry(N * C), rm(N), rr(N);
  ref_residual_forward<N * C>(rh.data(), widen(x).data(), widen(res).data());
  check("residual+layernorm residual", h, rh, 1);
  ref_layernorm_forward<N, C>(ry.data(), rm.data(), rr.data(), widen(h).data(), widen(w).data(), widen(b).data());
  check("residual+layernorm out", dy.get(), ry, 4);
  check("layernorm mean", dmean.get(), rm, 64);
  check("layernorm rstd", drstd.get(), rr, 64);

  auto g = random<T>(N * C, rng), dxv = random<T>(N * C, rng), dwv = random<T>(C, rng), dbv = random<T>(C, rng);
  auto rdx = widen(dxv), rdw = widen(dwv), rdb = widen(dbv);
  dbuf<T> dg(g), ddx(dxv), ddw(dwv), ddb(dbv);
  dbuf<float> scratch(k::layernorm_backward_scratch_v<N, C>);
  const auto fm = dmean.get(), fr = drstd.get();
  launched(k::launch_layernorm_backward<N, C>(nullptr, ddx.p, ddw.p, ddb.p, dg.p, dh.p, dw.p, dmean.p, drstd.p,
                                              scratch.p), "layernorm_backward");
  ref_layernorm_backward<N, C>(rdx.data(), rdw.data(), rdb.data(), widen(g).data(), widen(h).data(), widen(w).data(),
                               widen(fm).data(), widen(fr).data());
  check("layernorm_backward dinp", ddx.get(), rdx, 4);
  check("layernorm_backward dweight", ddw.get(), rdw, 4);
  check("layernorm_backward dbias", ddb.get(), rdb, 4);

  launched(k::launch_rmsnorm_forward<N, C>(nullptr, dy.p, drstd.p, dx.p, dw.p), "rmsnorm_forward");
  ref_rmsnorm_forward<N, C>(ry.data(), rr.data(), widen(x).data(), widen(w).data());
  check("rmsnorm_forward", dy.get(), ry, 4);
  const auto fr2 = drstd.get();
  auto rdx2 = widen(dxv), rdw2 = widen(dwv);
  dbuf<T> ddx2(dxv), ddw2(dwv);
  dbuf<float> scratch2(k::rmsnorm_backward_scratch_v<N, C>);
  launched(k::launch_rmsnorm_backward<N, C>(nullptr, ddx2.p, ddw2.p, dg.p, dx.p, dw.p, drstd.p, scratch2.p),
           "rmsnorm_backward");
  ref_rmsnorm_backward<N, C>(rdx2.data(), rdw2.data(), widen(g).data(), widen(x).data(), widen(w).data(),
                             widen(fr2).data());
  check("rmsnorm_backward dinp", ddx2.get(), rdx2, 4);
  check("rmsnorm_backward dweight", ddw2.get(), rdw2, 4);

  constexpr std::size_t NC = 64, V = 50257, Vp = 50304;
  auto z = random<T>(NC * Vp, rng, -6, 6);
  std::vector<std::int32_t> t(NC);
  for (auto& v : t) v = static_cast<std::int32_t>(rng() % V);
  t[3] = -1;
  std::vector<double> rz(NC * V), rl(NC);
  for (std::size_t n = 0; n < NC; ++n)
    for (std::size_t v = 0; v < V; ++v) rz[n * V + v] = static_cast<float>(z[n * Vp + v]);
  dbuf<T> dz(z);
  dbuf<std::int32_t> dt(t);
  dbuf<float> dl(NC);
  launched(k::launch_softmax_cross_entropy_forward<NC, V, Vp>(nullptr, dl.p, dz.p, dt.p), "cross_entropy eval");
  {
    std::vector<double> rle(NC);
    ref_cross_entropy_eval<NC, V>(rle.data(), rz.data(), t.data());
    check("cross_entropy eval losses", dl.get(), rle, 16);
  }
  launched(k::launch_softmax_cross_entropy_forward_backward<NC, V, Vp>(nullptr, dl.p, dz.p, dt.p, 1.0f / NC),
           "cross_entropy");
  ref_cross_entropy<NC, V>(rl.data(), rz.data(), t.data(), 1.0 / NC);
  check("cross_entropy losses", dl.get(), rl, 16);
  const auto zg = dz.get();
  std::vector<T> dzv(NC * V);
  for (std::size_t n = 0; n < NC; ++n)
    for (std::size_t v = 0; v < V; ++v) dzv[n * V + v] = zg[n * Vp + v];
  check("cross_entropy dlogits", dzv, rz, 4);
}

template <class T, std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0>
void attention_case(std::mt19937& rng) {
  constexpr std::size_t width = (H + 2 * KVH) * D;
  auto qkv = random<T>(B * S * width, rng, -2, 2);
  dbuf<T> dqkv(qkv), dout(B * S * H * D);
  dbuf<float> dlse(B * H * S);
  launched(k::launch_flash_attention_forward<B, S, H, KVH, D, W>(nullptr, dout.p, dlse.p, dqkv.p), "flash_attention");
  std::vector<double> rout(B * S * H * D), att(B * H * S * S);
  ref_attention_forward<B, S, H, KVH, D, W>(rout.data(), att.data(), widen(qkv).data());
  const std::string tag = " D=" + std::to_string(D) + (W > 0 ? " window=" + std::to_string(W) : "");
  check("flash_attention_forward" + tag, dout.get(), rout, 8);
  auto g = random<T>(B * S * H * D, rng), dq = random<T>(B * S * width, rng);
  auto rdq = widen(dq);
  dbuf<T> dg(g), ddq(dq);
  launched(k::launch_flash_attention_backward<B, S, H, KVH, D, W>(nullptr, ddq.p, dg.p, dqkv.p, dout.p, dlse.p),
           "flash_attention_backward");
  std::vector<double> scratch(B * H * S * S);
  ref_attention_backward<B, S, H, KVH, D, W>(rdq.data(), scratch.data(), widen(g).data(), widen(qkv).data(), att.data());
  check("flash_attention_backward" + tag, ddq.get(), rdq, 16);
}

// The tensor-core flash attention kernels (kernels/flash_attention.hpp) against the host op:
// output, row log-sum-exp through the backward, and the accumulated dqkv. W: the sliding window.
template <class T, std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0>
void mma_attention_case(std::mt19937& rng) {
  constexpr std::size_t width = (H + 2 * KVH) * D;
  const std::string tag = " S=" + std::to_string(S) + " H=" + std::to_string(H) + "/" +
                          std::to_string(KVH) + " D=" + std::to_string(D) +
                          (W > 0 ? " window=" + std::to_string(W) : "");
  auto qkv = random<T>(B * S * width, rng, -2, 2);
  dbuf<T> dqkv(qkv), dout(B * S * H * D);
  dbuf<float> dlse(B * H * S), ddelta(B * H * S);
  launched(k::launch_mma_attention_forward<B, S, H, KVH, D, W>(nullptr, dout.p, dlse.p, dqkv.p), "mma_attention_forward");
  std::vector<double> rout(B * S * H * D), att(B * H * S * S);
  ref_attention_forward<B, S, H, KVH, D, W>(rout.data(), att.data(), widen(qkv).data());
  check("mma_attention_forward" + tag, dout.get(), rout, 2);
  auto g = random<T>(B * S * H * D, rng), dq = random<T>(B * S * width, rng);
  auto rdq = widen(dq);
  dbuf<T> dg(g), ddq(dq);
  launched(k::launch_mma_attention_backward<B, S, H, KVH, D, W>(nullptr, ddq.p, ddelta.p, dg.p, dqkv.p, dout.p, dlse.p),
           "mma_attention_backward");
  std::vector<double> scratch(B * H * S * S);
  ref_attention_backward<B, S, H, KVH, D, W>(rdq.data(), scratch.data(), widen(g).data(), widen(qkv).data(), att.data());
  check("mma_attention_backward" + tag, ddq.get(), rdq, 4);
}

// The attention op through cuda_context against the host op. Where the op takes the tensor-core
// flash bodies (bf16/f16, head dims 16..128; ops.cuh), `att` holds (lse, out) rather than the
// probabilities, so the output and dqkv are compared, and the cuBLASLt bodies (attention.cuh) are
// run directly as well. Otherwise (f32): output, kept probabilities, d(scores) and dqkv.
// `scratch_bytes` small enough to split the heads into chunks exercises the cuBLASLt chunking.
template <class T, std::size_t B, std::size_t S, std::size_t H, std::size_t KVH, std::size_t D, std::size_t W = 0>
void attention_op_case(std::mt19937& rng, std::size_t scratch_bytes) {
  constexpr std::size_t width = (H + 2 * KVH) * D, HD = H * D, P = B * H * S * S;
  const std::string tag = " S=" + std::to_string(S) + " H=" + std::to_string(H) + "/" +
                          std::to_string(KVH) + " D=" + std::to_string(D) +
                          (W > 0 ? " window=" + std::to_string(W) : "") + " scratch " +
                          std::to_string(scratch_bytes >> 10) + "K";
  weft::cuda::cuda_resources res(scratch_bytes);
  const weft::cuda::cuda_context& c = res.context();
  auto qkv = random<T>(B * S * width, rng, -2, 2), g = random<T>(B * S * HD, rng), dq = random<T>(B * S * width, rng);
  std::vector<double> rout(B * S * HD), ratt(P);
  ref_attention_forward<B, S, H, KVH, D, W>(rout.data(), ratt.data(), widen(qkv).data());
  auto tc_run = [&](const char* how, auto&& forward, auto&& backward) {
    dbuf<T> dqkv_in(qkv), dout(B * S * HD), datt(P), dg(g), ddq(dq), dscr(P);
    forward(dout.p, datt.p, static_cast<const T*>(dqkv_in.p));
    check(std::string("attention op (") + how + ") out" + tag, dout.get(), rout, 8);
    const auto att = datt.get();
    check(std::string("attention op (") + how + ") probs" + tag, att, ratt, 4);
    backward(ddq.p, dscr.p, static_cast<const T*>(dg.p), static_cast<const T*>(dqkv_in.p),
             static_cast<const T*>(datt.p));
    auto rdq = widen(dq);
    std::vector<double> rscr(P);
    ref_attention_backward<B, S, H, KVH, D, W>(rdq.data(), rscr.data(), widen(g).data(), widen(qkv).data(),
                                            widen(att).data());
    check(std::string("attention op (") + how + ") dscores" + tag, dscr.get(), rscr, 16);
    check(std::string("attention op (") + how + ") dqkv" + tag, ddq.get(), rdq, 16);
  };
  dbuf<T> probe(P), probe_qkv(qkv);
  if (weft::cuda::detail::use_mma_attention<B, S, H, D>(static_cast<const T*>(probe.p),
                                                        static_cast<const T*>(probe_qkv.p))) {
    dbuf<T> dqkv_in(qkv), dout(B * S * HD), datt(P), dg(g), ddq(dq), dscr(P);
    weft::ops::attention_forward<B, S, H, KVH, D, W>(c, dout.p, datt.p, static_cast<const T*>(dqkv_in.p));
    check("attention op (flash, tensor cores) out" + tag, dout.get(), rout, 2);
    weft::ops::attention_backward<B, S, H, KVH, D, W>(c, ddq.p, dscr.p, static_cast<const T*>(dg.p),
                                                   static_cast<const T*>(dqkv_in.p), static_cast<const T*>(datt.p));
    auto rdq = widen(dq);
    std::vector<double> rscr(P);
    ref_attention_backward<B, S, H, KVH, D, W>(rdq.data(), rscr.data(), widen(g).data(), widen(qkv).data(), ratt.data());
    check("attention op (flash, tensor cores) dqkv" + tag, ddq.get(), rdq, 4);
    tc_run(
        "cuBLASLt", [&](T* o, T* a, const T* q) { weft::cuda::attention_forward_tc<B, S, H, KVH, D, W>(c, o, a, q); },
        [&](T* d, T* s, const T* gg, const T* q, const T* a) {
          weft::cuda::attention_backward_tc<B, S, H, KVH, D, W>(c, d, s, gg, q, a);
        });
  } else {
    tc_run(
        "cuBLASLt", [&](T* o, T* a, const T* q) { weft::ops::attention_forward<B, S, H, KVH, D, W>(c, o, a, q); },
        [&](T* d, T* s, const T* gg, const T* q, const T* a) {
          weft::ops::attention_backward<B, S, H, KVH, D, W>(c, d, s, gg, q, a);
        });
  }
}

template <class T>
void all_cases() {
  std::mt19937 rng(2024);
  memory_cases<T>(rng);
  activation_cases<T>(rng);
  embedding_rope_cases<T>(rng);
  norm_ce_cases<T>(rng);
  attention_case<T, 2, 256, 8, 2, 64>(rng);
  attention_case<T, 1, 200, 4, 1, 128>(rng);
  attention_op_case<T, 2, 256, 8, 8, 64>(rng, std::size_t{32} << 20);
  attention_op_case<T, 2, 256, 8, 8, 64>(rng, 3 * 256 * 256 * 4);  // chunks of 3, 3 and 2 heads
  attention_op_case<T, 1, 200, 4, 1, 128>(rng, std::size_t{32} << 20);
  attention_op_case<T, 2, 128, 6, 2, 64>(rng, 4 * 128 * 128 * 4);
  // sliding windows: whole tiles before the window skipped, its edge masked; W = S is no window
  attention_case<T, 2, 256, 8, 2, 64, 17>(rng);
  attention_case<T, 1, 200, 4, 1, 128, 1>(rng);
  attention_op_case<T, 2, 256, 8, 2, 64, 100>(rng, std::size_t{32} << 20);
  attention_op_case<T, 2, 256, 8, 8, 64, 33>(rng, 3 * 256 * 256 * 4);  // cuBLASLt in chunks of heads
  attention_op_case<T, 1, 200, 4, 1, 128, 200>(rng, std::size_t{32} << 20);
  if constexpr (k::mma_element<T>) {
    mma_attention_case<T, 2, 256, 8, 2, 64>(rng);
    mma_attention_case<T, 1, 200, 4, 1, 128>(rng);
    mma_attention_case<T, 2, 130, 4, 4, 32>(rng);  // ragged tiles, head dim 32
    mma_attention_case<T, 1, 1024, 12, 12, 64>(rng);  // GPT-2 small's heads at a long sequence
    mma_attention_case<T, 2, 256, 8, 2, 64, 100>(rng);
    mma_attention_case<T, 1, 200, 4, 1, 128, 5>(rng);
    mma_attention_case<T, 1, 1024, 12, 12, 64, 256>(rng);  // a Mistral-like window at a long sequence
  }
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 77;
  }
  all_cases<float>();
  all_cases<bf16>();
  all_cases<weft::f16>();
  if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) {
    std::printf("FAIL: %s\n", cudaGetErrorString(e));
    return 1;
  }
  std::printf(failures == 0 ? "PASS\n" : "FAILED (%d)\n", failures);
  return failures == 0 ? 0 : 1;
}
