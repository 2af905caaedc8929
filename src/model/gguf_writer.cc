// GGUF writing (see gguf_writer.h).
#include "model/gguf_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

namespace hanpu::model {

namespace {

class Bytes {
 public:
  template <class T>
  void put(T x) {
    const size_t at = b_.size();
    b_.resize(at + sizeof(T));
    std::memcpy(b_.data() + at, &x, sizeof(T));  // little-endian, as every target here
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    b_.insert(b_.end(), s.begin(), s.end());
  }
  void pad_to(uint64_t alignment) {
    while (b_.size() % alignment != 0) b_.push_back(0);
  }
  const std::vector<uint8_t>& bytes() const { return b_; }

 private:
  std::vector<uint8_t> b_;
};

// The type a value made in code is written as: the widest of its kind.
GgufType natural_type(const GgufValue& v) {
  switch (v.v.index()) {
    case 0:
      return kGgufI64;
    case 1:
      return kGgufU64;
    case 2:
      return kGgufF64;
    case 3:
      return kGgufBool;
    case 4:
      return kGgufString;
    default:
      return kGgufArray;
  }
}

double as_double(const GgufValue& v) {
  if (const auto* d = std::get_if<double>(&v.v)) return *d;
  return static_cast<double>(v.as_int());
}

Status put_value(Bytes& out, const GgufValue& v, GgufType type, const std::string& key) {
  const auto bad = [&] {
    return Status::Error(fmt::format("metadata '{}': its value does not fit type {}", key,
                                     static_cast<uint32_t>(type)));
  };
  switch (type) {
    case kGgufU8:
      return out.put(static_cast<uint8_t>(v.as_int())), Status::Ok();
    case kGgufI8:
      return out.put(static_cast<int8_t>(v.as_int())), Status::Ok();
    case kGgufU16:
      return out.put(static_cast<uint16_t>(v.as_int())), Status::Ok();
    case kGgufI16:
      return out.put(static_cast<int16_t>(v.as_int())), Status::Ok();
    case kGgufU32:
      return out.put(static_cast<uint32_t>(v.as_int())), Status::Ok();
    case kGgufI32:
      return out.put(static_cast<int32_t>(v.as_int())), Status::Ok();
    case kGgufU64:
      if (const auto* u = std::get_if<uint64_t>(&v.v)) return out.put(*u), Status::Ok();
      return out.put(static_cast<uint64_t>(v.as_int())), Status::Ok();
    case kGgufI64:
      return out.put(static_cast<int64_t>(v.as_int())), Status::Ok();
    case kGgufF32:
      return out.put(static_cast<float>(as_double(v))), Status::Ok();
    case kGgufF64:
      return out.put(as_double(v)), Status::Ok();
    case kGgufBool: {
      const auto* b = std::get_if<bool>(&v.v);
      if (!b) return bad();
      return out.put(static_cast<uint8_t>(*b ? 1 : 0)), Status::Ok();
    }
    case kGgufString: {
      const auto* s = std::get_if<std::string>(&v.v);
      if (!s) return bad();
      return out.put_string(*s), Status::Ok();
    }
    case kGgufArray: {
      const auto* items = std::get_if<std::vector<GgufValue>>(&v.v);
      if (!items) return bad();
      const GgufType et = v.type           ? v.elem_type
                          : items->empty() ? kGgufU8
                                           : natural_type(items->front());
      out.put<uint32_t>(et);
      out.put<uint64_t>(items->size());
      for (const GgufValue& item : *items) HANPU_RETURN_IF_ERROR(put_value(out, item, et, key));
      return Status::Ok();
    }
  }
  return bad();
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

Status write_gguf(const std::string& path, const GgufMetadata& meta,
                  const std::vector<GgufTensorOut>& tensors,
                  const std::function<void(size_t)>& on_tensor) {
  uint64_t alignment = 32;
  if (auto it = meta.find("general.alignment"); it != meta.end() && it->second.is_int())
    alignment = static_cast<uint64_t>(it->second.as_int());
  Bytes head;
  head.put<uint32_t>(0x46554747);  // "GGUF"
  head.put<uint32_t>(3);
  head.put<uint64_t>(tensors.size());
  head.put<uint64_t>(meta.size());
  for (const auto& [key, value] : meta) {
    head.put_string(key);
    const GgufType type = value.type ? *value.type : natural_type(value);
    head.put<uint32_t>(type);
    HANPU_RETURN_IF_ERROR(put_value(head, value, type, key));
  }
  uint64_t offset = 0;
  for (const GgufTensorOut& t : tensors) {
    head.put_string(t.name);
    // Outer dimensions of 1 are not written, as ggml's writer counts dimensions
    // (ggml_n_dims): a [1, n] tensor is stored as [n].
    size_t first = 0;
    while (first + 1 < t.shape.size() && t.shape[first] == 1) ++first;
    head.put<uint32_t>(static_cast<uint32_t>(t.shape.size() - first));
    for (size_t d = t.shape.size(); d-- > first;)
      head.put<uint64_t>(static_cast<uint64_t>(t.shape[d]));
    head.put<uint32_t>(t.ggml_type);
    head.put<uint64_t>(offset);
    offset += (t.bytes + alignment - 1) / alignment * alignment;
  }
  head.pad_to(alignment);

  // Beside the target, so the final rename stays on one file system.
  const std::string tmp = path + ".partial";
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(tmp.c_str(), "wb"));
  if (!f) return Status::Error(fmt::format("{}: cannot create ({})", tmp, std::strerror(errno)));
  const auto fail = [&](const std::string& why) {
    f.reset();
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    return Status::Error(why);
  };
  const auto write = [&](const uint8_t* p, size_t n) {
    return n == 0 || std::fwrite(p, 1, n, f.get()) == n;
  };
  if (!write(head.bytes().data(), head.bytes().size()))
    return fail(fmt::format("{}: write failed ({})", tmp, std::strerror(errno)));
  std::vector<uint8_t> buf;
  const uint8_t zeros[256] = {};
  for (size_t i = 0; i < tensors.size(); ++i) {
    const GgufTensorOut& t = tensors[i];
    buf.assign(t.bytes, 0);
    if (Status s = t.fill(buf.data()); !s.ok()) return fail(s.message());
    const uint64_t pad = (alignment - t.bytes % alignment) % alignment;
    bool ok = write(buf.data(), buf.size());
    for (uint64_t left = pad; ok && left > 0;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(left, sizeof(zeros)));
      ok = write(zeros, n);
      left -= n;
    }
    if (!ok)
      return fail(
          fmt::format("{}: write failed at tensor '{}' ({})", tmp, t.name, std::strerror(errno)));
    if (on_tensor) on_tensor(i);
  }
  if (std::fclose(f.release()) != 0) {  // the last buffered bytes reach the disk here
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    return Status::Error(fmt::format("{}: write failed ({})", tmp, std::strerror(errno)));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return Status::Error(
        fmt::format("{}: cannot move the finished file into place ({})", path, ec.message()));
  }
  return Status::Ok();
}

}  // namespace hanpu::model
