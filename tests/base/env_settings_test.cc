// The HANPU_* table: every entry named HANPU_*, once; whole numbers read within their range
// only; "0" and nothing else switches a behaviour off.
#include "base/env_settings.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

namespace hanpu {
namespace {

TEST(EnvSettings, EveryVariableIsNamedOnceWithAMeaning) {
  std::set<std::string> names;
  for (const EnvVarInfo& v : env_vars()) {
    EXPECT_EQ(std::string(v.name).rfind("HANPU_", 0), 0u) << v.name;
    EXPECT_TRUE(names.insert(v.name).second) << v.name;
    EXPECT_GT(std::string(v.meaning).size(), 10u) << v.name;
    EXPECT_STREQ(env_var_info(v.var).name, v.name);
  }
  EXPECT_EQ(names.size(), 7u);
}

TEST(EnvSettings, IntegersAreReadWithinTheirRangeOnly) {
  const char* name = env_var_info(EnvVar::kSpinUs).name;
  unsetenv(name);
  EXPECT_FALSE(env_integer(EnvVar::kSpinUs, 0, 1000).has_value());
  for (const char* bad : {"", "abc", "12x", "-1", "1001", " 5", "99999999999999999999"}) {
    setenv(name, bad, 1);
    EXPECT_FALSE(env_integer(EnvVar::kSpinUs, 0, 1000).has_value()) << "'" << bad << "'";
  }
  setenv(name, "250", 1);
  EXPECT_EQ(env_integer(EnvVar::kSpinUs, 0, 1000), 250);
  setenv(name, "0", 1);
  EXPECT_EQ(env_integer(EnvVar::kSpinUs, 0, 1000), 0);
  unsetenv(name);
}

TEST(EnvSettings, OnlyZeroSwitchesOff) {
  const char* name = env_var_info(EnvVar::kBalance).name;
  unsetenv(name);
  EXPECT_FALSE(env_switched_off(EnvVar::kBalance));
  EXPECT_EQ(env_text(EnvVar::kBalance), nullptr);
  for (const char* on : {"1", "", "00", "off", "no"}) {
    setenv(name, on, 1);
    EXPECT_FALSE(env_switched_off(EnvVar::kBalance)) << "'" << on << "'";
  }
  setenv(name, "0", 1);
  EXPECT_TRUE(env_switched_off(EnvVar::kBalance));
  EXPECT_STREQ(env_text(EnvVar::kBalance), "0");
  unsetenv(name);
}

}  // namespace
}  // namespace hanpu
