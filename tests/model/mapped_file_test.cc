// Releasing the pages of a mapped weights file that hold only bytes copied out at load
// (MappedFile::release, WeightStore::release_copied): whole pages inside the range leave the
// process's resident memory (the present bits of /proc/self/pagemap), pages holding bytes
// outside it stay, and every byte still reads as in the file.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <vector>

#include "base/rng.h"
#include "fixtures.h"
#include "model/gguf.h"
#include "model/mapped_file.h"
#include "model/weight_store.h"

namespace hanpu::model {
namespace {

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

// Whether the page holding p is mapped into this process now (pagemap bit 63).
bool resident(const void* p) {
  const int fd = ::open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0) return false;  // the tests skip where pagemap cannot be read
  uint64_t entry = 0;
  const off_t at = static_cast<off_t>(reinterpret_cast<uintptr_t>(p) / kPage * sizeof(entry));
  const bool read = pread(fd, &entry, sizeof(entry), at) == static_cast<ssize_t>(sizeof(entry));
  ::close(fd);
  return read && (entry >> 63) != 0;
}

// Reads every page so all are resident (volatile: the reads are the point).
void touch(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; i += kPage)
    static_cast<void>(*static_cast<const volatile uint8_t*>(p + i));
}

TEST(MappedFile, ReleaseDropsWholePagesInsideTheRangeAndKeepsTheBytes) {
  if (::access("/proc/self/pagemap", R_OK) != 0) GTEST_SKIP() << "no /proc/self/pagemap here";
  const std::string path = testing::temp_file("mapped_file", "pages.bin");
  std::vector<uint8_t> bytes(16 * kPage + 123);
  Rng rng(41);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng.next());
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  MappedFile f;
  ASSERT_TRUE(MappedFile::open(path, &f).ok());
  touch(f.data(), f.size());
  for (size_t p = 0; p < 16; ++p) ASSERT_TRUE(resident(f.data() + p * kPage)) << p;
  // Bytes from inside page 2 to inside page 9: pages 3..8 are wholly inside.
  f.release(2 * kPage + 100, 9 * kPage + 7);
  for (size_t p = 0; p < 16; ++p) {
    EXPECT_EQ(resident(f.data() + p * kPage), p < 3 || p > 8) << "page " << p;
  }
  // A range inside one page releases nothing; a range past the end is clipped.
  f.release(10 * kPage + 1, 11 * kPage - 1);
  EXPECT_TRUE(resident(f.data() + 10 * kPage));
  f.release(12 * kPage, 1000 * kPage);
  EXPECT_FALSE(resident(f.data() + 12 * kPage));
  EXPECT_FALSE(resident(f.data() + 15 * kPage));
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), f.data())) << "released bytes read back";
}

// The fixture's Q8_0 GGUF: a 19,008-byte header, then token_embd (26,112 bytes) first.
TEST(WeightStore, ReleaseCopiedDropsTheHeaderAndConvertedTensorsOnly) {
  if (::access("/proc/self/pagemap", R_OK) != 0) GTEST_SKIP() << "no /proc/self/pagemap here";
  GgufMetadata meta;
  WeightStore store;
  ASSERT_TRUE(
      load_gguf(testing::fixture_dir("qwen35-tiny") + "/model-q8_0.gguf", &meta, &store).ok());
  const StoredTensor* embd = store.find("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  const uint8_t* base = embd->data - embd->file_offset;
  ASSERT_GE(embd->file_offset, 4 * kPage);
  const uint8_t* first_whole = base + (embd->file_offset + kPage - 1) / kPage * kPage;
  touch(base, embd->file_offset + 6 * kPage);
  store.release_copied();
  EXPECT_FALSE(resident(base)) << "the header's first page";
  EXPECT_TRUE(resident(first_whole)) << "a page of a tensor read in place";
  std::vector<float> wide;
  ASSERT_TRUE(store.get_f32("token_embd.weight", embd->shape, &wide).ok());
  std::vector<float> before = wide;
  store.release_copied();
  EXPECT_FALSE(resident(first_whole)) << "a page of a converted tensor";
  ASSERT_TRUE(store.get_f32("token_embd.weight", embd->shape, &wide).ok());
  EXPECT_EQ(wide, before) << "a released tensor reads back the same";
}

}  // namespace
}  // namespace hanpu::model
