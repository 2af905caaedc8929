// GGUF block decoding (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K, IQ4_NL, IQ4_XS) against the `gguf`
// Python package's dequantize, bit for bit, on the committed vectors (tests/fixtures/quant,
// scripts/make_quant_vectors.py: random blocks with zero, extreme and subnormal f16 scales); NaN
// and infinite scales found by block.
#include "base/quant_blocks.h"
#include "base/quant_quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace hanpu {
namespace {

std::vector<uint8_t> read_fixture(const std::string& name) {
  std::ifstream in(std::string(HANPU_FIXTURES_DIR) + "/quant/" + name, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

TEST(QuantBlocks, EveryTypeDecodesBitForBitAsTheGgufPackage) {
  for (const QuantTypeInfo& t : quant_types()) {
    const std::vector<uint8_t> blocks = read_fixture(lower(t.name) + ".blocks");
    const std::vector<uint8_t> want = read_fixture(lower(t.name) + ".f32");
    ASSERT_FALSE(blocks.empty()) << t.name << ": fixture missing";
    ASSERT_EQ(blocks.size() % static_cast<size_t>(t.bytes), 0u) << t.name;
    const size_t n = blocks.size() / static_cast<size_t>(t.bytes);
    ASSERT_EQ(want.size(), n * static_cast<size_t>(t.block_elems) * sizeof(float)) << t.name;
    // Poisoned, with one value past the end that must stay untouched.
    std::vector<float> got(n * static_cast<size_t>(t.block_elems) + 1, NAN);
    dequantize_blocks(t.type, blocks.data(), n, got.data());
    ASSERT_TRUE(std::isnan(got.back())) << t.name << ": wrote past the end";
    size_t differ = 0, first = 0;
    for (size_t i = 0; i < n * static_cast<size_t>(t.block_elems); ++i) {
      uint32_t a, b;
      std::memcpy(&a, &got[i], 4);
      std::memcpy(&b, want.data() + 4 * i, 4);
      if (a != b && differ++ == 0) first = i;
    }
    float first_want;
    std::memcpy(&first_want, want.data() + 4 * first, 4);
    EXPECT_EQ(differ, 0u) << t.name << ": first at value " << first << " (block "
                          << first / static_cast<size_t>(t.block_elems) << "): " << got[first]
                          << " against " << first_want;
    EXPECT_EQ(first_block_with_bad_scale(t.type, blocks.data(), n), n) << t.name;
  }
}

// The quantizers against the `gguf` package's quantize on the committed rows (a zero block,
// values on half steps, tiny and huge values).
// The 32-value types against the gguf package, the K and IQ4 types against ggml's own
// quantizer (what llama-quantize writes), on the vectors scripts/make_quant_vectors.py made.
TEST(QuantBlocks, QuantizersMatchGgufAndGgmlBitForBit) {
  int checked = 0;
  for (const QuantTypeInfo& t : quant_types()) {
    if (!quant_type_quantizable(t.type)) continue;
    const std::vector<uint8_t> in = read_fixture(lower(t.name) + ".quant_in.f32");
    const std::vector<uint8_t> want = read_fixture(lower(t.name) + ".quant_out.blocks");
    ASSERT_FALSE(in.empty()) << t.name;
    const size_t blocks = in.size() / sizeof(float) / static_cast<size_t>(t.block_elems);
    ASSERT_EQ(want.size(), blocks * static_cast<size_t>(t.bytes)) << t.name;
    std::vector<float> x(blocks * static_cast<size_t>(t.block_elems));
    std::memcpy(x.data(), in.data(), in.size());
    std::vector<uint8_t> got(want.size() + 1, 0xAB);
    quantize_blocks(t.type, x.data(), blocks, got.data());
    EXPECT_EQ(got.back(), 0xAB) << t.name << ": wrote past the end";
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(got[i], want[i]) << t.name << " byte " << i << " (block " << i / t.bytes << ")";
    ++checked;
  }
  EXPECT_EQ(checked, 10);
}

// Quantizing then decoding loses no more than the type's grid allows. Gaussian rows (fresh each
// run, the seed printed) with a different scale per row: the expected NMSE of a uniform grid of
// 2^b levels spanning a block of 32 Gaussians (max |x| about 2.5 sigma) is step^2 / 12 over
// sigma^2 = (5 / 2^b)^2 / 12: 8.1e-3 at 4 bits, 2.0e-3 at 5, 5.1e-4 at 6, 3.2e-5 at 8 (Q8_0's
// step is 2 max / 255). The bounds are 1.5 times those; a wrong scale, code or packing is off
// by orders of magnitude. IQ4's 16 non-linear levels fit Gaussians at least as well as 4 bits.
TEST(QuantBlocks, QuantizeThenDecodeStaysWithinTheGridsError) {
  const struct {
    QuantType type;
    double bound;
  } cases[] = {{QuantType::kQ4_0, 1.2e-2},   {QuantType::kQ4_1, 1.2e-2},
               {QuantType::kQ5_0, 3.0e-3},   {QuantType::kQ5_1, 3.0e-3},
               {QuantType::kQ8_0, 4.8e-5},   {QuantType::kQ4_K, 1.2e-2},
               {QuantType::kQ5_K, 3.0e-3},   {QuantType::kQ6_K, 7.6e-4},
               {QuantType::kIQ4_NL, 1.2e-2}, {QuantType::kIQ4_XS, 1.2e-2}};
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  for (const auto& c : cases) {
    const QuantTypeInfo& t = quant_type_info(c.type);
    const size_t rows = 16, per_row = 1024, blocks = per_row / static_cast<size_t>(t.block_elems);
    std::vector<float> x(rows * per_row), back(x.size(), std::nanf(""));
    for (size_t r = 0; r < rows; ++r) {
      const float scale = std::pow(10.0f, static_cast<float>(static_cast<int>(r % 7) - 3));
      for (size_t i = 0; i < per_row; ++i) x[r * per_row + i] = scale * normal(gen);
    }
    std::vector<uint8_t> q(rows * blocks * static_cast<size_t>(t.bytes) + 1, 0xAB);
    quantize_blocks(c.type, x.data(), rows * blocks, q.data());
    EXPECT_EQ(q.back(), 0xAB) << t.name << ": wrote past the end";
    dequantize_blocks(c.type, q.data(), rows * blocks, back.data());
    for (size_t r = 0; r < rows; ++r) {
      double err = 0, ref = 0;
      for (size_t i = r * per_row; i < (r + 1) * per_row; ++i) {
        ASSERT_TRUE(std::isfinite(back[i])) << t.name << " value " << i;
        err += (static_cast<double>(back[i]) - x[i]) * (static_cast<double>(back[i]) - x[i]);
        ref += static_cast<double>(x[i]) * x[i];
      }
      EXPECT_LE(err / ref, c.bound) << t.name << " row " << r;
    }
  }
}

// A block of zeros quantizes to blocks that decode to exact zeros in every type.
TEST(QuantBlocks, ZerosStayZeros) {
  for (const QuantTypeInfo& t : quant_types()) {
    if (!quant_type_quantizable(t.type)) continue;
    std::vector<float> x(static_cast<size_t>(t.block_elems), 0.0f), back(x.size(), 1.0f);
    std::vector<uint8_t> q(static_cast<size_t>(t.bytes), 0xAB);
    quantize_blocks(t.type, x.data(), 1, q.data());
    dequantize_blocks(t.type, q.data(), 1, back.data());
    for (float v : back) ASSERT_EQ(v, 0.0f) << t.name;
  }
}

TEST(QuantBlocks, NanAndInfiniteScalesAreFoundByBlock) {
  for (const QuantTypeInfo& t : quant_types()) {
    std::vector<uint8_t> blocks(static_cast<size_t>(t.bytes) * 5, 0x11);
    // Where the f16 d and dmin are (quant_blocks.h's layouts).
    const int d_at = t.type == QuantType::kQ6_K   ? 208
                     : t.type == QuantType::kQ3_K ? 108
                     : t.type == QuantType::kQ2_K ? 80
                                                  : 0;
    const int m_at = t.type == QuantType::kQ2_K ? 82 : 2;
    const bool has_min = t.type == QuantType::kQ4_1 || t.type == QuantType::kQ5_1 ||
                         t.type == QuantType::kQ4_K || t.type == QuantType::kQ5_K ||
                         t.type == QuantType::kQ2_K;
    for (size_t b = 0; b < 5; ++b) {  // d = 1.0 (f16 0x3c00) in every block
      blocks[b * t.bytes + d_at] = 0x00;
      blocks[b * t.bytes + d_at + 1] = 0x3c;
      if (has_min) {
        blocks[b * t.bytes + m_at] = 0x00;
        blocks[b * t.bytes + m_at + 1] = 0x3c;
      }
    }
    EXPECT_EQ(first_block_with_bad_scale(t.type, blocks.data(), 5), 5u) << t.name;
    for (const uint16_t bad :
         {uint16_t{0x7e00}, uint16_t{0x7c00}, uint16_t{0xfc00}}) {  // NaN, +inf, -inf
      std::vector<uint8_t> b = blocks;
      std::memcpy(&b[3 * t.bytes + d_at], &bad, 2);
      EXPECT_EQ(first_block_with_bad_scale(t.type, b.data(), 5), 3u) << t.name << " d " << bad;
      if (has_min) {
        std::vector<uint8_t> m = blocks;
        std::memcpy(&m[2 * t.bytes + m_at], &bad, 2);
        EXPECT_EQ(first_block_with_bad_scale(t.type, m.data(), 5), 2u) << t.name << " m " << bad;
      }
    }
  }
}

TEST(QuantBlocks, TheTableMatchesGgufsTypeIds) {
  EXPECT_EQ(quant_type_of_ggml(2), QuantType::kQ4_0);
  EXPECT_EQ(quant_type_of_ggml(8), QuantType::kQ8_0);
  EXPECT_FALSE(quant_type_of_ggml(0).has_value());  // F32
  EXPECT_EQ(quant_type_of_ggml(12), QuantType::kQ4_K);
  EXPECT_EQ(quant_type_of_ggml(14), QuantType::kQ6_K);
  EXPECT_EQ(quant_type_of_ggml(23), QuantType::kIQ4_XS);
  EXPECT_FALSE(quant_type_of_ggml(15).has_value());  // Q8_K: activations only
  EXPECT_FALSE(quant_type_of_ggml(16).has_value());  // IQ2_XXS: not supported
  for (const QuantTypeInfo& t : quant_types()) {
    EXPECT_EQ(&quant_type_info(t.type), &t);
    EXPECT_EQ(quant_type_of_ggml(t.ggml_type), t.type);
  }
}

}  // namespace
}  // namespace hanpu
