// The scratch memory a forward step draws on: the layer stack's activations, each layer's
// temporaries and the head's rows. It belongs to whoever runs the step (an Engine holds one
// for every sequence it steps, one step at a time), not to the thread that happens to run it,
// so a server can step many sequences from one thread and free the memory when it is idle.
// Buffers keep their memory from step to step: a 1024-token prefill step needs ~100 MB of
// activations per layer, and fresh memory costs a zero-fill and the page faults of its first
// touch every time. Contents are garbage on entry to every use. Not for two steps at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hanpu::model {

class Workspace {
 public:
  // The stack's [rows, hidden] activations and the head's rows (Model).
  enum class Stack : int { kHidden, kNormed, kBlock, kHeadNormed, kHeadLogits, kCount };
  // Temporaries every layer kind draws on (gdn_layer, attention_layer, mlp_layer): layers run
  // one after another and none keeps a temporary past its return, so sharing the slots costs a
  // prefill the largest layer's set of buffers where a set per kind cost their sum. A layer
  // uses each slot once; moe_layer, which calls mlp_layer, draws on none.
  static constexpr int kLayerSlots = 10;

  // At least n floats of the buffer, its memory kept from the last call.
  float* layer(int slot, size_t n) { return reuse(layer_[slot], n); }
  float* stack(Stack which, size_t n) { return reuse(stack_[static_cast<int>(which)], n); }

  // The bytes held now, and giving them back (an idle server).
  int64_t bytes() const;
  void release();

 private:
  static float* reuse(std::vector<float>& buf, size_t n);
  std::vector<float> layer_[kLayerSlots];
  std::vector<float> stack_[static_cast<int>(Stack::kCount)];
};

}  // namespace hanpu::model
