// float64 GDN/KDA references: recurrent (the definition) and chunked (the algebra).
#include "ref/la_ref.h"

#include <cmath>

namespace hanpu::ref {

namespace {

// Everything the two references share: dims, sequence bounds, and element readers.
struct Problem {
  const LaArgs& a;
  int64_t T;
  int H, HV, K, V, N;
  double scale;
  std::vector<int64_t> cu;

  explicit Problem(const LaArgs& args) : a(args) {
    T = a.q.shape[0];
    H = static_cast<int>(a.q.shape[1]);
    K = static_cast<int>(a.q.shape[2]);
    HV = static_cast<int>(a.v.shape[1]);
    V = static_cast<int>(a.v.shape[2]);
    cu = a.cu_seqlens.empty() ? std::vector<int64_t>{0, T} : a.cu_seqlens;
    N = static_cast<int>(cu.size()) - 1;
    scale = a.scale ? *a.scale : 1.0 / std::sqrt(static_cast<double>(K));
  }
  int qk_head(int hv) const { return hv / (HV / H); }
  // q or k row (token t, value head hv), L2-normalised if asked.
  std::vector<double> qk_row(const TensorView& x, int64_t t, int hv) const {
    std::vector<double> r(K);
    const size_t base = (static_cast<size_t>(t) * H + qk_head(hv)) * K;
    double ss = 0;
    for (int d = 0; d < K; ++d) {
      r[d] = load_as_f32(x.data, x.dtype, base + d);
      ss += r[d] * r[d];
    }
    if (a.qk_l2norm) {
      const double inv = 1.0 / std::sqrt(ss + 1e-6);
      for (double& e : r) e *= inv;
    }
    return r;
  }
  double v_at(int64_t t, int hv, int j) const {
    return load_as_f32(a.v.data, a.v.dtype, (static_cast<size_t>(t) * HV + hv) * V + j);
  }
  double beta_at(int64_t t, int hv) const {
    return static_cast<const float*>(a.beta.data)[t * HV + hv];
  }
  // Log gate of channel d (GDN: the same for every d).
  double g_at(int64_t t, int hv, int d) const {
    const float* g = static_cast<const float*>(a.g.data);
    return a.mech == LaMech::kGdn ? g[t * HV + hv] : g[(t * HV + hv) * K + d];
  }
  std::vector<double> initial_state(int n, int hv) const {
    std::vector<double> s(static_cast<size_t>(K) * V, 0.0);
    if (!a.initial_state.empty()) {
      const float* p = static_cast<const float*>(a.initial_state.data) +
                       (static_cast<size_t>(n) * HV + hv) * K * V;
      for (size_t i = 0; i < s.size(); ++i) s[i] = p[i];
    }
    return s;
  }
  LaRefResult empty_result() const {
    LaRefResult r;
    r.o.assign(static_cast<size_t>(T) * HV * V, 0.0);
    r.final_state.assign(static_cast<size_t>(N) * HV * K * V, 0.0);
    return r;
  }
  void put_state(LaRefResult& r, int n, int hv, const std::vector<double>& s) const {
    std::copy(s.begin(), s.end(),
              r.final_state.begin() + (static_cast<size_t>(n) * HV + hv) * K * V);
  }
};

}  // namespace

LaRefResult la_recurrent(const LaArgs& args) {
  const Problem p(args);
  LaRefResult r = p.empty_result();
  const int K = p.K, V = p.V;
  for (int n = 0; n < p.N; ++n) {
    for (int hv = 0; hv < p.HV; ++hv) {
      std::vector<double> S = p.initial_state(n, hv);  // [K, V]
      for (int64_t t = p.cu[n]; t < p.cu[n + 1]; ++t) {
        const std::vector<double> q = p.qk_row(args.q, t, hv);
        const std::vector<double> k = p.qk_row(args.k, t, hv);
        const double beta = p.beta_at(t, hv);
        for (int d = 0; d < K; ++d) {  // S <- diag(exp(g_t)) S
          const double decay = std::exp(p.g_at(t, hv, d));
          for (int j = 0; j < V; ++j) S[d * V + j] *= decay;
        }
        for (int j = 0; j < V; ++j) {  // S <- S + beta k (v - S^T k)^T, column by column
          double sk = 0;
          for (int d = 0; d < K; ++d) sk += S[d * V + j] * k[d];
          const double u = beta * (p.v_at(t, hv, j) - sk);
          for (int d = 0; d < K; ++d) S[d * V + j] += k[d] * u;
        }
        for (int j = 0; j < V; ++j) {  // o = scale S^T q
          double o = 0;
          for (int d = 0; d < K; ++d) o += S[d * V + j] * q[d];
          r.o[(static_cast<size_t>(t) * p.HV + hv) * V + j] = p.scale * o;
        }
      }
      p.put_state(r, n, hv, S);
    }
  }
  return r;
}

LaRefResult la_chunked(const LaArgs& args, int C) {
  const Problem p(args);
  LaRefResult r = p.empty_result();
  const int K = p.K, V = p.V;
  for (int n = 0; n < p.N; ++n) {
    for (int hv = 0; hv < p.HV; ++hv) {
      std::vector<double> S = p.initial_state(n, hv);
      for (int64_t t0 = p.cu[n]; t0 < p.cu[n + 1]; t0 += C) {
        const int c = static_cast<int>(std::min<int64_t>(C, p.cu[n + 1] - t0));
        std::vector<std::vector<double>> q(c), k(c), gam(c, std::vector<double>(K));
        for (int i = 0; i < c; ++i) {
          q[i] = p.qk_row(args.q, t0 + i, hv);
          k[i] = p.qk_row(args.k, t0 + i, hv);
          for (int d = 0; d < K; ++d) {
            gam[i][d] = p.g_at(t0 + i, hv, d) + (i ? gam[i - 1][d] : 0.0);
          }
        }
        // decayed dot products: sum_d x_id y_jd exp(Gam_id - Gam_jd), i >= j
        auto ddot = [&](const std::vector<double>& x, int i, int j) {
          double s = 0;
          for (int d = 0; d < K; ++d) s += x[d] * k[j][d] * std::exp(gam[i][d] - gam[j][d]);
          return s;
        };
        // A = (I + StrictTril(diag(beta) (K K^T o D)))^-1 by forward substitution.
        std::vector<double> L(static_cast<size_t>(c) * c, 0.0), A(L.size(), 0.0);
        for (int i = 0; i < c; ++i)
          for (int j = 0; j < i; ++j) L[i * c + j] = p.beta_at(t0 + i, hv) * ddot(k[i], i, j);
        for (int col = 0; col < c; ++col) {
          for (int i = 0; i < c; ++i) {
            double x = (i == col) ? 1.0 : 0.0;
            for (int j = 0; j < i; ++j) x -= L[i * c + j] * A[j * c + col];
            A[i * c + col] = x;
          }
        }
        // Vn = A diag(beta) (V - diag(exp(Gam)) K S0)  (GEMM-first)
        std::vector<double> rhs(static_cast<size_t>(c) * V), vn(rhs.size(), 0.0);
        for (int i = 0; i < c; ++i)
          for (int j = 0; j < V; ++j) {
            double ks = 0;
            for (int d = 0; d < K; ++d) ks += std::exp(gam[i][d]) * k[i][d] * S[d * V + j];
            rhs[i * V + j] = p.beta_at(t0 + i, hv) * (p.v_at(t0 + i, hv, j) - ks);
          }
        for (int i = 0; i < c; ++i)
          for (int l = 0; l <= i; ++l)
            for (int j = 0; j < V; ++j) vn[i * V + j] += A[i * c + l] * rhs[l * V + j];
        // O = scale (diag(exp(Gam)) Q S0 + Tril(Q K^T o D) Vn)
        std::vector<double> qk(static_cast<size_t>(c) * c, 0.0);
        for (int i = 0; i < c; ++i)
          for (int l = 0; l <= i; ++l) qk[i * c + l] = ddot(q[i], i, l);
        for (int i = 0; i < c; ++i)
          for (int j = 0; j < V; ++j) {
            double o = 0;
            for (int d = 0; d < K; ++d) o += std::exp(gam[i][d]) * q[i][d] * S[d * V + j];
            for (int l = 0; l <= i; ++l) o += qk[i * c + l] * vn[l * V + j];
            r.o[(static_cast<size_t>(t0 + i) * p.HV + hv) * V + j] = p.scale * o;
          }
        // S1 = diag(exp(Gam_last)) S0 + (exp(Gam_last - Gam) o K)^T Vn
        for (int d = 0; d < K; ++d)
          for (int j = 0; j < V; ++j) {
            double s = std::exp(gam[c - 1][d]) * S[d * V + j];
            for (int i = 0; i < c; ++i)
              s += std::exp(gam[c - 1][d] - gam[i][d]) * k[i][d] * vn[i * V + j];
            S[d * V + j] = s;
          }
      }
      p.put_state(r, n, hv, S);
    }
  }
  return r;
}

}  // namespace hanpu::ref
