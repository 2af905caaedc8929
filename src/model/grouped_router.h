// DeepSeek-style expert choice, as Kimi Linear's and Ling's routers make it (one token).
#pragma once

#include "model/model_config.h"

namespace hanpu::model {

// From one token's router logits [E] and the score correction bias [E]: scores s = sigmoid(l);
// each of r.groups groups of E / groups experts is scored by the sum of its best two s + bias;
// within the r.topk_groups best groups, the top_k experts by s + bias are chosen (ties: the
// lower index). Their weights are s (without the bias), divided by their sum (+ 1e-20) where
// norm_topk_prob, times r.routed_scaling. ids and weights [top_k], best first. The config
// validator guarantees groups divide E into groups of at least two and top_k fits.
void route_grouped(const float* logits, const float* bias, int E, int top_k, const GroupedRouter& r,
                   bool norm_topk_prob, int* ids, float* weights);

}  // namespace hanpu::model
