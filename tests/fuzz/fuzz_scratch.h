// A scratch folder for fuzz targets whose parser reads files by path: made once per process
// (mkdtemp), each input written into it before the call.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

namespace hanpu::fuzz {

inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    std::string t = "/tmp/hanpu_fuzz_XXXXXX";
    if (mkdtemp(t.data()) == nullptr) __builtin_trap();
    return t;
  }();
  return dir;
}

// Writes `size` bytes of `data` to scratch_dir()/name and returns its path.
inline std::string write_scratch(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace hanpu::fuzz
