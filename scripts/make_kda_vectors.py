#!/usr/bin/env python3
"""Test vectors for the KDA hybrids' forget gates and expert router, computed by transformers'
own modules (KimiLinearForgetGate, BailingHybridForgetGate, KimiLinearTopkRouter), so hanpu's
versions are checked against the models' code, not against a re-reading of it.

Gates: the projection output f (what f_b(f_a(x)) or f_proj(x) gives), A_log, dt_bias, and the
log-decay g the module returns; f spans both sides of softplus's threshold (20) and values far
below 0, where Kimi Linear's unbounded gate goes far past Ling's bound. Router: logits, the
score correction bias, the chosen experts and their weights, for two group layouts.

    python3 -m venv .fxenv && .fxenv/bin/pip install torch transformers
    .fxenv/bin/python scripts/make_kda_vectors.py      # writes tests/fixtures/kda/vectors.json
"""
import json
import pathlib

import torch


def rounded(t):
    return [round(float(x), 9) for x in t.flatten()]


def spread(T, H, K, g):
    """Projection outputs across softplus's threshold (20) and far below 0."""
    f = torch.randn(1, T, H * K, generator=g) * 8.0
    f[0, 0, :4] = torch.tensor([25.0, 20.5, 19.5, -60.0])
    return f


def main():
    from transformers import BailingHybridConfig, KimiLinearConfig
    from transformers.models.bailing_hybrid.modeling_bailing_hybrid import BailingHybridForgetGate
    from transformers.models.kimi_linear.modeling_kimi_linear import KimiLinearForgetGate, KimiLinearTopkRouter
    g = torch.Generator().manual_seed(33)
    T, H, K = 3, 2, 8
    out = {"gates": [], "routers": []}
    # Kimi Linear's f_b(f_a(x)) is low rank (through K); both are swapped for identities here.
    kimi = KimiLinearConfig(hidden_size=H * K, linear_head_dim=K, linear_num_heads=H)
    kg = KimiLinearForgetGate(kimi)
    kg.f_a_proj = torch.nn.Linear(H * K, H * K, bias=False)  # identities: f goes in as it is
    kg.f_b_proj = torch.nn.Linear(H * K, H * K, bias=False)
    with torch.no_grad():
        kg.f_a_proj.weight.copy_(torch.eye(H * K))
        kg.f_b_proj.weight.copy_(torch.eye(H * K))
        kg.A_log.copy_(torch.randn(kg.A_log.shape, generator=g))
        kg.dt_bias.copy_(torch.randn(kg.dt_bias.shape, generator=g))
        f = spread(T, H, K, g)
        out["gates"].append({"name": "kimi_linear", "T": T, "H": H, "K": K, "lower_bound": None,
                             "f": rounded(f), "A_log": rounded(kg.A_log), "dt_bias": rounded(kg.dt_bias),
                             "g": rounded(kg(f))})
    for safe in (True, False):
        ling = BailingHybridConfig(hidden_size=H * K, head_dim=K, num_attention_heads=H, kda_safe_gate=safe,
                                   kda_lower_bound=-5.0)
        lg = BailingHybridForgetGate(ling)
        with torch.no_grad():
            lg.f_proj.weight.copy_(torch.eye(H * K))
            lg.A_log.copy_(torch.randn(lg.A_log.shape, generator=g))
            lg.dt_bias.copy_(torch.randn(lg.dt_bias.shape, generator=g))
            f = spread(T, H, K, g)
            out["gates"].append({"name": "bailing_hybrid safe" if safe else "bailing_hybrid unsafe", "T": T,
                                 "H": H, "K": K, "lower_bound": -5.0 if safe else None, "f": rounded(f),
                                 "A_log": rounded(lg.A_log), "dt_bias": rounded(lg.dt_bias), "g": rounded(lg(f))})
    for E, groups, topk_groups, top_k, norm, scaling in ((8, 2, 1, 2, True, 2.446), (16, 4, 2, 4, False, 2.5)):
        cfg = KimiLinearConfig(hidden_size=8, num_local_experts=E, n_group=groups, topk_group=topk_groups,
                               num_experts_per_tok=top_k, norm_topk_prob=norm, routed_scaling_factor=scaling)
        router = KimiLinearTopkRouter(cfg)
        rows = 6
        with torch.no_grad():
            router.weight.copy_(torch.eye(E, 8) if E <= 8 else torch.randn(E, 8, generator=g))
            router.e_score_correction_bias.copy_(0.3 * torch.randn(E, generator=g))
            x = torch.randn(rows, 8, generator=g) * 2.0
            logits, weights, ids = router(x)
        out["routers"].append({
            "experts": E, "groups": groups, "topk_groups": topk_groups, "top_k": top_k, "norm_topk_prob": norm,
            "routed_scaling": scaling, "rows": rows, "logits": rounded(logits),
            "bias": rounded(router.e_score_correction_bias), "ids": [int(i) for i in ids.flatten()],
            "weights": rounded(weights)})
    # Whole KDA layers (transformers' modules, random weights, norms around 1): x [T, hidden] in,
    # the layer's output out, every weight as the checkpoint names it.
    from transformers.models.bailing_hybrid.modeling_bailing_hybrid import BailingHybridDeltaAttention
    from transformers.models.kimi_linear.modeling_kimi_linear import KimiLinearDeltaAttention
    out["layers"] = []
    for name, cls, cfg in (
            ("kimi_linear", KimiLinearDeltaAttention,
             KimiLinearConfig(hidden_size=48, linear_head_dim=16, linear_num_heads=2, linear_conv_kernel_dim=4,
                              layer_types=["linear_attention"], num_hidden_layers=1, rms_norm_eps=1e-5)),
            ("bailing_hybrid", BailingHybridDeltaAttention,
             BailingHybridConfig(hidden_size=48, head_dim=16, num_attention_heads=2, short_conv_kernel_size=4,
                                 layer_types=["linear_attention"], num_hidden_layers=1, kda_safe_gate=True,
                                 kda_lower_bound=-5.0, rms_norm_eps=1e-6))):
        layer = cls(cfg, 0).float().eval()
        with torch.no_grad():
            for pname, p in layer.named_parameters():
                if "norm" in pname:
                    p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
                elif pname.endswith("A_log") or pname.endswith("dt_bias"):
                    p.copy_(torch.empty(p.shape).uniform_(-1.0, 1.0, generator=g))
                else:
                    fan_in = p.shape[-1] if p.dim() > 1 else 1
                    p.copy_(torch.randn(p.shape, generator=g) * (1.0 / fan_in ** 0.5))
            x = torch.randn(1, 11, 48, generator=g)
            y = layer(x)
        out["layers"].append({"name": name, "T": 11, "hidden": 48, "heads": 2, "head_dim": 16, "kernel": 4,
                              "eps": cfg.rms_norm_eps, "x": rounded(x), "out": rounded(y),
                              "weights": {pname: {"shape": list(p.shape), "data": rounded(p)}
                                          for pname, p in layer.named_parameters()}})
    path = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/kda/vectors.json"
    path.write_text(json.dumps(out, indent=0))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
