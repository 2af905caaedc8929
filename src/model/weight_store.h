// The tensors of a checkpoint as found on disk: name -> dtype, shape and bytes inside a
// memory-mapped file. Loaders (safetensors, GGUF) fill it after validating every header
// field; the model converts what it needs once into its compute layout.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/quant_blocks.h"
#include "hanpu/dtype.h"
#include "hanpu/status.h"
#include "hanpu/tensor.h"
#include "model/mapped_file.h"

namespace hanpu::model {

struct StoredTensor {
  DType dtype = DType::kF32;       // of a plain tensor
  std::optional<QuantType> quant;  // set for a GGUF block type: each row a run of whole blocks
  Shape shape;
  const uint8_t* data = nullptr;
  uint64_t file_offset = 0;  // of the first byte, for error messages
  std::string file;
  // Keeps `data` mapped for whoever holds it past the store (quantized projections point
  // into the file rather than copy it); null for bytes the caller owns (parse_gguf's).
  std::shared_ptr<const void> owner;
};

class WeightStore {
 public:
  // Keeps a mapped file alive as long as the store (tensors point into it), and as long as
  // any holder of the returned pointer.
  std::shared_ptr<const MappedFile> keep(MappedFile file);
  // Sets the owner of every tensor of `file` (by name) that has none.
  void set_owner(const std::string& file, const std::shared_ptr<const void>& owner);
  // Adds a tensor; a second tensor of the same name is an error.
  Status add(const std::string& name, StoredTensor t);

  const StoredTensor* find(const std::string& name) const;
  // The tensor, checked to have `shape` up to dimensions of 1 (they do not change the
  // layout: llama.cpp's converters write [1, n], [n, 1] or [1, n, 1, k] for a vector or a conv
  // as they please, and llama-quantize drops trailing ones); errors name the tensor and both
  // shapes.
  Status get(const std::string& name, const Shape& shape, const StoredTensor** out) const;
  // The tensor converted to fp32 (`out` resized), checked to have `shape` (as get) and only
  // finite values; errors name the tensor, its file and the first bad element.
  Status get_f32(const std::string& name, const Shape& shape, std::vector<float>* out) const;
  // Drops from resident memory the pages of each kept file that hold no tensor still read
  // in place: the headers (parsed into copies) and the tensors get_f32 converted. A loaded
  // model calls it once its weights are converted (MappedFile::release).
  void release_copied() const;

  size_t size() const { return tensors_.size(); }
  const std::map<std::string, StoredTensor>& tensors() const { return tensors_; }

 private:
  std::vector<std::shared_ptr<const MappedFile>> files_;
  std::map<std::string, StoredTensor> tensors_;
  mutable std::set<std::string> copied_;  // tensors get_f32 converted (one loader thread)
};

// The element count of a checkpoint tensor's dimensions, or nullopt when the shape is
// absurd: the product of its non-zero dimensions must stay under 2^60, so no product of the
// shape (int64 element counts, times a dtype's bytes) can overflow later, and a zero
// dimension cannot hide a huge one.
std::optional<uint64_t> checked_numel(const std::vector<uint64_t>& dims);

// Bytes of `numel` values of `t`'s type (quantized: numel / block_elems whole blocks; the
// loader checked that rows hold whole blocks).
uint64_t stored_bytes(const StoredTensor& t, uint64_t numel);

// Copies a stored tensor into fp32 (any supported dtype or block type), `out` sized numel.
void stored_to_f32(const StoredTensor& t, float* out);
// The same for elements [first, first + n) of it (a quantized tensor's blocks are decoded
// whole, so first and n must be multiples of its block size, as whole rows are).
void stored_to_f32(const StoredTensor& t, int64_t first, int64_t n, float* out);
// Index of the first non-finite value of x[n], or n. (simd::find_non_finite does the same
// with Highway; the checkpoint readers stay free of the kernels so the fuzzers build alone.)
size_t first_non_finite(const float* x, size_t n);

}  // namespace hanpu::model
