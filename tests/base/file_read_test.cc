// Untrusted files are read only when they are regular files within a bound, and JSON only
// within a nesting depth: a FIFO, a device, a directory, an oversized file or a deeply nested
// document is refused by name, quickly, with `out` untouched.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/file_read.h"
#include "base/input_limits.h"
#include "base/json_limits.h"

namespace hanpu {
namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("hanpu_file_read_" + name);
  fs::remove_all(p);
  return p.string();
}

void expect_refused(const std::string& path, int64_t max, const std::string& want) {
  std::string out = "kept";
  const Status st = read_regular_file(path, max, "the thing", &out);
  ASSERT_FALSE(st.ok()) << path;
  EXPECT_NE(st.message().find(want), std::string::npos) << st.message();
  EXPECT_EQ(out, "kept");
}

TEST(FileRead, RegularFilesReadWhole) {
  const std::string p = temp_path("regular");
  std::ofstream(p) << "hello";
  std::string out;
  ASSERT_TRUE(read_regular_file(p, 5, "the thing", &out).ok());
  EXPECT_EQ(out, "hello");
  const std::string empty = temp_path("empty");
  std::ofstream(empty).flush();
  ASSERT_TRUE(read_regular_file(empty, 5, "the thing", &out).ok());
  EXPECT_EQ(out, "");
}

TEST(FileRead, SpecialFilesAreRefusedWithoutBlocking) {
  // A FIFO with no writer: an open without O_NONBLOCK would wait forever.
  const std::string fifo = temp_path("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  expect_refused(fifo, kMaxJsonFileBytes,
                 fifo + ": the thing must be a regular file, this is a FIFO");
  expect_refused("/dev/zero", kMaxTextFileBytes,
                 "/dev/zero: the thing must be a regular file, this is a character device");
  const std::string dir = temp_path("dir");
  fs::create_directories(dir);
  expect_refused(dir, kMaxJsonFileBytes, "this is a directory");
  expect_refused(temp_path("missing"), kMaxJsonFileBytes, "cannot open the thing: No such file");
  int fd = -1;
  int64_t size = 0;
  EXPECT_FALSE(open_regular_file(fifo, "weights", &fd, &size).ok());
}

TEST(FileRead, AFileOverTheBoundIsRefusedNamingIt) {
  const std::string p = temp_path("big");
  std::ofstream(p) << std::string(100, 'x');
  expect_refused(p, 99, "the thing is 100 bytes or more, over the limit of 99 bytes");
  std::string out;
  EXPECT_TRUE(read_regular_file(p, 100, "the thing", &out).ok());
  EXPECT_EQ(out.size(), 100u);
}

TEST(JsonLimits, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  nlohmann::json j = "kept";
  Status st = parse_json(deep, "deep.json", &j);
  EXPECT_NE(st.message().find("deep.json: JSON nests deeper than 128 levels at byte 128"),
            std::string::npos)
      << st.message();
  EXPECT_EQ(j, "kept");
  // Objects count too; brackets inside strings (escaped quotes included) do not.
  std::string objects;
  for (int i = 0; i < 200; ++i) objects += "{\"a\":";
  st = parse_json(objects + "1" + std::string(200, '}'), "o.json", &j);
  EXPECT_NE(st.message().find("nests deeper than 128"), std::string::npos) << st.message();
  const std::string in_string =
      "{\"k\": \"" + std::string(500, '[') + "\\\"" + std::string(500, '{') + "\"}";
  ASSERT_TRUE(parse_json(in_string, "s.json", &j).ok());
  EXPECT_EQ(j["k"].get<std::string>().size(), 1001u);
  const std::string at_limit = std::string(128, '[') + std::string(128, ']');
  EXPECT_TRUE(parse_json(at_limit, "l.json", &j).ok());
  EXPECT_FALSE(parse_json("[" + at_limit + "]", "l.json", &j).ok());
}

TEST(JsonLimits, MalformedJsonNamesTheByteAndExcerptsAreShort) {
  nlohmann::json j;
  const Status st = parse_json("{\"a\": ]", "m.json", &j);
  EXPECT_NE(st.message().find("m.json: malformed JSON at byte 7"), std::string::npos)
      << st.message();
  const nlohmann::json wide = nlohmann::json::array({std::string(1000, 'x'), 1, 2});
  EXPECT_EQ(json_excerpt(wide, 10), "[\"xxxxxxxx...");
  EXPECT_EQ(json_excerpt(nlohmann::json(std::string("\xff"))),
            "\"\xEF\xBF\xBD\"");  // invalid UTF-8 replaced, no throw
}

}  // namespace
}  // namespace hanpu
