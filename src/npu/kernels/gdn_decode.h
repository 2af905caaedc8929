// One decode step of GDN on the simulated Ascend cores, as the native backend runs it for
// every prefill variant (HA-NPU leaves decode to it): per value head on one core, the state
// [K x V] fp32 from GM into UB, q and k L2-normalised, the gated delta-rule update and the
// output on the vector unit, the state back to GM in place.
#pragma once

#include "npu/kernels/chunk_ops.h"

namespace hanpu::npu {

// gm.T must be 1; gm.state0 is read and written in place (gm.state1 ignored); gm.qk_l2norm
// honoured; GDN only (one gate a head).
Status gdn_decode_step(NpuSim& sim, const GdnGm& gm);

}  // namespace hanpu::npu
