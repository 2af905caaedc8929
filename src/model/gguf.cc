// GGUF header parsing (see gguf.h): a bounds-checked cursor over the mapped bytes.
#include "model/gguf.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace hanpu::model {

int64_t GgufValue::as_int() const {
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  if (const auto* u = std::get_if<uint64_t>(&v)) return static_cast<int64_t>(*u);
  return 0;
}

namespace {

class Cursor {
 public:
  Cursor(const uint8_t* b, size_t n, const std::string& file) : b_(b), n_(n), file_(file) {}
  size_t pos() const { return pos_; }
  Status fail(const std::string& what) const {
    return Status::Error(fmt::format("{}: {} (at byte offset {})", file_, what, pos_));
  }
  template <class T>
  Status read(T* out, const char* what) {
    if (n_ - pos_ < sizeof(T)) return fail(fmt::format("file ends inside {}", what));
    std::memcpy(out, b_ + pos_, sizeof(T));  // GGUF is little-endian, as every target here
    pos_ += sizeof(T);
    return Status::Ok();
  }
  Status read_string(std::string* out, const char* what) {
    uint64_t len = 0;
    HANPU_RETURN_IF_ERROR(read(&len, what));
    if (len > kGgufMaxString) return fail(fmt::format("{} length {} is absurd", what, len));
    if (n_ - pos_ < len)
      return fail(fmt::format("{} of {} bytes runs past the end of the file", what, len));
    out->assign(reinterpret_cast<const char*>(b_ + pos_), len);
    pos_ += len;
    return Status::Ok();
  }
  Status skip_to(size_t p) {
    if (p > n_)
      return fail(
          fmt::format("data section at {} starts past the end of the file ({} bytes)", p, n_));
    pos_ = p;
    return Status::Ok();
  }

 private:
  const uint8_t* b_;
  size_t n_, pos_ = 0;
  const std::string& file_;
};

template <class T, class Stored>
Status read_number(Cursor& c, GgufValue* out) {
  T x{};
  HANPU_RETURN_IF_ERROR(c.read(&x, "a metadata value"));
  out->v = static_cast<Stored>(x);
  return Status::Ok();
}

Status read_value(Cursor& c, uint32_t type, int depth, GgufValue* out) {
  if (type <= kGgufF64) out->type = static_cast<GgufType>(type);
  switch (type) {
    case kGgufU8:
      return read_number<uint8_t, uint64_t>(c, out);
    case kGgufI8:
      return read_number<int8_t, int64_t>(c, out);
    case kGgufU16:
      return read_number<uint16_t, uint64_t>(c, out);
    case kGgufI16:
      return read_number<int16_t, int64_t>(c, out);
    case kGgufU32:
      return read_number<uint32_t, uint64_t>(c, out);
    case kGgufI32:
      return read_number<int32_t, int64_t>(c, out);
    case kGgufU64:
      return read_number<uint64_t, uint64_t>(c, out);
    case kGgufI64:
      return read_number<int64_t, int64_t>(c, out);
    case kGgufF32:
      return read_number<float, double>(c, out);
    case kGgufF64:
      return read_number<double, double>(c, out);
    case kGgufBool: {
      uint8_t x = 0;
      HANPU_RETURN_IF_ERROR(c.read(&x, "a metadata value"));
      if (x > 1) return c.fail(fmt::format("bool value {}", x));
      out->v = x == 1;
      return Status::Ok();
    }
    case kGgufString: {
      std::string s;
      HANPU_RETURN_IF_ERROR(c.read_string(&s, "a metadata string"));
      out->v = std::move(s);
      return Status::Ok();
    }
    case kGgufArray: {
      if (depth > 0) return c.fail("nested metadata arrays are not supported");
      uint32_t et = 0;
      uint64_t n = 0;
      HANPU_RETURN_IF_ERROR(c.read(&et, "an array type"));
      HANPU_RETURN_IF_ERROR(c.read(&n, "an array length"));
      if (n > kGgufMaxArray) return c.fail(fmt::format("array length {} is absurd", n));
      if (et > kGgufF64 || et == kGgufArray)
        return c.fail(fmt::format("array element type {} is not a GGUF value type", et));
      std::vector<GgufValue> items;
      items.reserve(std::min<uint64_t>(n, 1u << 16));  // grows as elements actually parse
      for (uint64_t i = 0; i < n; ++i) {
        GgufValue item;
        HANPU_RETURN_IF_ERROR(read_value(c, et, depth + 1, &item));
        items.push_back(std::move(item));
      }
      out->v = std::move(items);
      out->elem_type = static_cast<GgufType>(et);
      return Status::Ok();
    }
    default:
      return c.fail(fmt::format("unknown metadata value type {}", type));
  }
}

// Names of the ggml types hanpu does not load, for the error that refuses them.
const char* unsupported_ggml_type_name(uint32_t t) {
  switch (t) {
    case 9:
      return "Q8_1";
    case 15:
      return "Q8_K";
    case 16:
      return "IQ2_XXS";
    case 17:
      return "IQ2_XS";
    case 18:
      return "IQ3_XXS";
    case 19:
      return "IQ1_S";
    case 21:
      return "IQ3_S";
    case 22:
      return "IQ2_S";
    case 24:
      return "I8";
    case 25:
      return "I16";
    case 26:
      return "I32";
    case 27:
      return "I64";
    case 28:
      return "F64";
    case 29:
      return "IQ1_M";
    case 34:
      return "TQ1_0";
    case 35:
      return "TQ2_0";
    case 39:
      return "MXFP4";
    default:
      return nullptr;
  }
}

struct Info {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type;
  uint64_t offset;
};

}  // namespace

Status parse_gguf(const uint8_t* bytes, size_t size, const std::string& file,
                  GgufMetadata* meta_out, WeightStore* store) {
  Cursor c(bytes, size, file);
  uint32_t magic = 0, version = 0;
  HANPU_RETURN_IF_ERROR(c.read(&magic, "the magic"));
  if (std::memcmp(bytes, "GGUF", 4) != 0)
    return Status::Error(fmt::format("{}: not a GGUF file (bad magic at offset 0)", file));
  HANPU_RETURN_IF_ERROR(c.read(&version, "the version"));
  if (version != 2 && version != 3)
    return c.fail(fmt::format("GGUF version {} is not supported (2 or 3)", version));
  uint64_t n_tensors = 0, n_meta = 0;
  HANPU_RETURN_IF_ERROR(c.read(&n_tensors, "the tensor count"));
  HANPU_RETURN_IF_ERROR(c.read(&n_meta, "the metadata count"));
  if (n_tensors > kGgufMaxTensors)
    return c.fail(fmt::format("tensor count {} is absurd", n_tensors));
  if (n_meta > kGgufMaxMetadata) return c.fail(fmt::format("metadata count {} is absurd", n_meta));
  GgufMetadata meta;
  for (uint64_t i = 0; i < n_meta; ++i) {
    std::string key;
    uint32_t type = 0;
    HANPU_RETURN_IF_ERROR(c.read_string(&key, "a metadata key"));
    HANPU_RETURN_IF_ERROR(c.read(&type, "a metadata type"));
    GgufValue v;
    HANPU_RETURN_IF_ERROR(read_value(c, type, 0, &v));
    if (!meta.emplace(key, std::move(v)).second)
      return c.fail(fmt::format("metadata key '{}' appears twice", key));
  }
  uint64_t alignment = 32;
  if (auto it = meta.find("general.alignment"); it != meta.end()) {
    if (!it->second.is_int() || it->second.as_int() <= 0 || it->second.as_int() > 65536 ||
        (it->second.as_int() & (it->second.as_int() - 1)) != 0) {
      return Status::Error(
          fmt::format("{}: general.alignment must be a power of two <= 65536", file));
    }
    alignment = static_cast<uint64_t>(it->second.as_int());
  }
  std::vector<Info> infos;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    Info t;
    uint32_t n_dims = 0;
    HANPU_RETURN_IF_ERROR(c.read_string(&t.name, "a tensor name"));
    HANPU_RETURN_IF_ERROR(c.read(&n_dims, "a tensor's dimension count"));
    if (n_dims == 0 || n_dims > 4)
      return c.fail(fmt::format("tensor '{}' has {} dimensions (1..4)", t.name, n_dims));
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t ne = 0;
      HANPU_RETURN_IF_ERROR(c.read(&ne, "a tensor dimension"));
      t.ne.push_back(ne);
    }
    HANPU_RETURN_IF_ERROR(c.read(&t.type, "a tensor type"));
    HANPU_RETURN_IF_ERROR(c.read(&t.offset, "a tensor offset"));
    infos.push_back(std::move(t));
  }
  const uint64_t data_start = (c.pos() + alignment - 1) / alignment * alignment;
  HANPU_RETURN_IF_ERROR(c.skip_to(data_start));
  const uint64_t data_size = size - data_start;
  struct Range {
    uint64_t begin, end;
    const std::string* name;
  };
  std::vector<Range> ranges;
  std::vector<std::pair<std::string, StoredTensor>> parsed;
  for (const Info& t : infos) {
    const auto bad = [&](const std::string& what) {
      return Status::Error(fmt::format("{}: tensor '{}': {}", file, t.name, what));
    };
    StoredTensor st;
    if (t.type == 0) {
      st.dtype = DType::kF32;
    } else if (t.type == 1) {
      st.dtype = DType::kF16;
    } else if (t.type == 30) {
      st.dtype = DType::kBF16;
    } else if (std::optional<QuantType> q = quant_type_of_ggml(t.type)) {
      st.quant = q;
    } else {
      const char* name = unsupported_ggml_type_name(t.type);
      return bad(fmt::format("type {} is not supported; hanpu loads {}",
                             name ? std::string(name) : fmt::format("id {}", t.type),
                             "F32, F16, BF16, " + quant_type_names()));
    }
    const std::optional<uint64_t> counted = checked_numel(t.ne);
    if (!counted) return bad("absurdly large shape");
    const uint64_t numel = *counted;
    for (auto it = t.ne.rbegin(); it != t.ne.rend(); ++it)
      st.shape.push_back(static_cast<int64_t>(*it));
    if (st.quant) {
      const QuantTypeInfo& q = quant_type_info(*st.quant);
      if (t.ne[0] % static_cast<uint64_t>(q.block_elems) != 0) {
        return bad(fmt::format("rows of {} values are not whole {} blocks of {}", t.ne[0], q.name,
                               q.block_elems));
      }
    }
    const uint64_t bytes_needed = stored_bytes(st, numel);
    if (t.offset % alignment != 0)
      return bad(
          fmt::format("offset {} is not a multiple of the alignment {}", t.offset, alignment));
    if (t.offset > data_size || bytes_needed > data_size - t.offset) {
      return bad(fmt::format(
          "data [{}, {}) runs past the end of the data section ({} bytes; file truncated?)",
          t.offset, t.offset + bytes_needed, data_size));
    }
    st.data = bytes + data_start + t.offset;
    st.file_offset = data_start + t.offset;
    if (st.quant) {
      const QuantTypeInfo& q = quant_type_info(*st.quant);
      const uint64_t blocks = numel / static_cast<uint64_t>(q.block_elems);
      const size_t b = first_block_with_bad_scale(*st.quant, st.data, blocks);
      if (b < blocks) {
        return bad(fmt::format("{} block {} (row {}, file offset {}) has a NaN or infinite scale",
                               q.name, b, b * q.block_elems / t.ne[0],
                               st.file_offset + b * static_cast<uint64_t>(q.bytes)));
      }
    }
    st.file = file;
    // A zero-size tensor holds no bytes and so overlaps nothing, wherever its offset points.
    if (bytes_needed > 0) ranges.push_back({t.offset, t.offset + bytes_needed, &t.name});
    parsed.emplace_back(t.name, std::move(st));
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  // Each range against the one reaching furthest before it (not merely the previous one).
  for (size_t i = 1, far = 0; i < ranges.size(); ++i) {
    if (ranges[i].begin < ranges[far].end) {
      return Status::Error(fmt::format("{}: tensors '{}' and '{}' overlap in the data section",
                                       file, *ranges[far].name, *ranges[i].name));
    }
    if (ranges[i].end > ranges[far].end) far = i;
  }
  WeightStore local;
  for (auto& [name, t] : parsed) {
    if (local.find(name) != nullptr)
      return Status::Error(fmt::format("{}: tensor '{}' appears twice", file, name));
    HANPU_RETURN_IF_ERROR(local.add(name, t));
  }
  for (auto& [name, t] : parsed) HANPU_RETURN_IF_ERROR(store->add(name, std::move(t)));
  *meta_out = std::move(meta);
  return Status::Ok();
}

Status load_gguf(const std::string& path, GgufMetadata* meta, WeightStore* store) {
  MappedFile f;
  HANPU_RETURN_IF_ERROR(MappedFile::open(path, &f));
  const std::shared_ptr<const MappedFile> kept = store->keep(std::move(f));
  HANPU_RETURN_IF_ERROR(parse_gguf(kept->data(), kept->size(), path, meta, store));
  store->set_owner(path, kept);
  return Status::Ok();
}

Status gguf_int(const GgufMetadata& m, const std::string& key, const std::string& file,
                bool required, int64_t fallback, int64_t* out) {
  const auto it = m.find(key);
  if (it == m.end()) {
    if (required) return Status::Error(fmt::format("{}: metadata '{}' is missing", file, key));
    *out = fallback;
    return Status::Ok();
  }
  if (!it->second.is_int())
    return Status::Error(fmt::format("{}: metadata '{}' is not an integer", file, key));
  *out = it->second.as_int();
  return Status::Ok();
}

Status gguf_number(const GgufMetadata& m, const std::string& key, const std::string& file,
                   double fallback, double* out) {
  const auto it = m.find(key);
  if (it == m.end()) {
    *out = fallback;
    return Status::Ok();
  }
  if (const auto* d = std::get_if<double>(&it->second.v)) {
    *out = *d;
  } else if (it->second.is_int()) {
    *out = static_cast<double>(it->second.as_int());
  } else {
    return Status::Error(fmt::format("{}: metadata '{}' is not a number", file, key));
  }
  return Status::Ok();
}

const std::string* gguf_string(const GgufMetadata& meta, const std::string& key) {
  const auto it = meta.find(key);
  return it == meta.end() ? nullptr : std::get_if<std::string>(&it->second.v);
}

}  // namespace hanpu::model
