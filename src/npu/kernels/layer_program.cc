// LayerProgram (see layer_program.h).
#include "npu/kernels/layer_program.h"

#include "npu/kernels/cube_gemm.h"
#include "npu/kernels/row_pass.h"

namespace hanpu::npu {

GmTensor* LayerProgram::act(const std::string& name, int64_t cols, bool fp16) {
  return sim_.gm(name, T_, cols, fp16);
}

GmTensor* LayerProgram::random_act(const std::string& name, int64_t cols) {
  GmTensor* t = act(name, cols);
  std::normal_distribution<float> n;
  for (float& x : t->v) x = n(rng_);
  return t;
}

GmTensor* LayerProgram::weight(const std::string& name, int64_t in, int64_t out) {
  GmTensor* t = sim_.gm(name, in, out, true);
  t->nz = true;
  std::normal_distribution<float> n(0.0f, 1.0f / std::sqrt(static_cast<float>(in)));
  for (float& x : t->v) x = n(rng_);
  return t;
}

GmTensor* LayerProgram::param(const std::string& name, int64_t cols, float mean, float sd,
                              int64_t rows) {
  GmTensor* t = sim_.gm(name, rows, cols, false);
  std::normal_distribution<float> n(mean, sd);
  for (float& x : t->v) x = n(rng_);
  return t;
}

Status LayerProgram::op(const std::string& name, const std::function<Status()>& body) {
  sim_.region(name);
  sim_.launch(1);
  return body();
}

Status LayerProgram::gemm(const std::string& name, GmTensor* x, GmTensor* w, GmTensor* y) {
  return op(name, [&] { return cube_gemm(sim_, x, w, y); });
}

Status LayerProgram::add_norm(const std::string& name, GmTensor* a, GmTensor* b, GmTensor* h,
                              GmTensor* hn) {
  const int H = static_cast<int>(a->cols);
  GmTensor* w = param(name + ".w", H, 0.0f, 0.1f);
  RowPass p;
  p.in = {{a, 0, H}, {b, 0, H}};
  p.params = {w};
  p.out = {{h, 0, H}, {hn, 0, H}};
  p.passes = 2;
  p.fn = [H](const std::vector<Tile*>& in, const std::vector<Tile*>& pr,
             const std::vector<Tile*>& out, int, int64_t) {
    for (int i = 0; i < out[0]->rows; ++i) {
      double ss = 0;
      for (int c = 0; c < H; ++c) {
        const float x = in[0]->at(i, c) + in[1]->at(i, c);
        out[0]->at(i, c) = x;
        ss += static_cast<double>(x) * x;
      }
      const float r = static_cast<float>(1.0 / std::sqrt(ss / H + 1e-6));
      for (int c = 0; c < H; ++c) out[1]->at(i, c) = out[0]->at(i, c) * r * (1 + pr[0]->v[c]);
    }
  };
  return op(name, [&] { return row_pass(sim_, T_, p); });
}

Status LayerProgram::mlp(GmTensor* hn, int ffn, GmTensor* y) {
  const int H = static_cast<int>(hn->cols);
  GmTensor* gu = act("mlp.gate_up", 2 * static_cast<int64_t>(ffn));
  GmTensor* a = act("mlp.act", ffn);
  HANPU_RETURN_IF_ERROR(gemm("mlp.gate_up", hn, weight("mlp.w_gate_up", H, 2 * ffn), gu));
  RowPass p;
  p.in = {{gu, 0, ffn}, {gu, ffn, ffn}};
  p.out = {{a, 0, ffn}};
  p.fn = [ffn](const std::vector<Tile*>& in, const std::vector<Tile*>&,
               const std::vector<Tile*>& out, int, int64_t) {
    for (int i = 0; i < out[0]->rows; ++i) {
      for (int c = 0; c < ffn; ++c) out[0]->at(i, c) = silu(in[0]->at(i, c)) * in[1]->at(i, c);
    }
  };
  HANPU_RETURN_IF_ERROR(op("mlp.swiglu", [&] { return row_pass(sim_, T_, p); }));
  return gemm("mlp.down", a, weight("mlp.w_down", ffn, H), y);
}

}  // namespace hanpu::npu
