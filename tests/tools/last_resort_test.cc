// The CLI's last resort (issue class 12): whatever escapes the command ends it with a message
// and exit code 2; what returns normally keeps its exit code.
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>

#include "last_resort.h"

namespace hanpu::cli {
namespace {

TEST(LastResort, EscapingExceptionsBecomeExitCode2WithAMessage) {
  EXPECT_EQ(run_with_last_resort([] { return 7; }), 7);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_with_last_resort([]() -> int { throw std::bad_alloc(); }), 2);
  EXPECT_EQ(run_with_last_resort([]() -> int { throw std::runtime_error("vector::reserve"); }), 2);
  EXPECT_EQ(run_with_last_resort([]() -> int { throw 42; }), 2);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("error: out of memory"), std::string::npos) << err;
  EXPECT_NE(err.find("error: vector::reserve\n"), std::string::npos) << err;
  EXPECT_NE(err.find("error: an unexpected exception ended the run"), std::string::npos) << err;
}

}  // namespace
}  // namespace hanpu::cli
