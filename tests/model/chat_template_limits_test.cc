// Hostile chat templates (issue class 4): recursion, deep nesting, unbounded loops and string
// blow-ups end in an error naming the bound, never a stack overflow, an allocation of
// gigabytes or a render that runs for hours.
#include <gtest/gtest.h>

#include <string>

#include "model/chat_template.h"

namespace hanpu::model {
namespace {

// The error of parsing then rendering `source` ("" where it renders).
std::string template_error(const std::string& source) {
  ChatTemplate t;
  Status st = ChatTemplate::parse(source, "evil.jinja", &t);
  if (st.ok()) {
    std::string out;
    st = t.render({{"user", "hi"}}, {}, &out);
  }
  return st.ok() ? "" : st.message();
}

void expect_bounded(const std::string& source, const std::string& want) {
  const std::string error = template_error(source);
  EXPECT_NE(error.find(want), std::string::npos)
      << (error.empty() ? "rendered" : error.substr(0, 400));
  EXPECT_NE(error.find("evil.jinja"), std::string::npos) << error.substr(0, 200);
}

TEST(ChatTemplateLimits, DeepNestingIsRefusedWhileParsing) {
  expect_bounded("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}",
                 "template nests deeper than 600 levels");
  expect_bounded("{{ " + std::string(100000, '[') + std::string(100000, ']') + " }}",
                 "nests deeper than 600 levels");
  std::string nots;
  for (int i = 0; i < 100000; ++i) nots += "not ";
  expect_bounded("{{ " + nots + "true }}", "nests deeper than 600 levels ('not' operators)");
  expect_bounded("{{ " + std::string(100000, '-') + "1 }}", "nests deeper than 600 levels");
  std::string ifs;
  for (int i = 0; i < 20000; ++i) ifs += "{% if true %}";
  expect_bounded(ifs, "nests deeper than 600 levels");
}

TEST(ChatTemplateLimits, RecursionAndWorkAreBoundedWhileRendering) {
  expect_bounded("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
                 "nests deeper than 600 levels");
  expect_bounded("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                 "template took more than 2000000 steps");
  expect_bounded("{{ range(1000000000) | length }}",
                 "range() of 1000000000 items is over the limit of 1048576");
  expect_bounded("{{ range(-5, 2000000000, 1) | length }}", "over the limit of 1048576");
}

// Values nested in themselves, or nested deeper than the engine can print or free on a normal
// stack: a clear error, never a stack overflow or a leak.
TEST(ChatTemplateLimits, SelfNestedAndDeepValuesAreBounded) {
  // A value put inside itself has no end to print; it is taken apart when the render ends
  // (LeakSanitizer checks nothing is left).
  expect_bounded("{% set a = [] %}{{ a.append(a) }}",
                 "nests deeper than 1000 levels (a value nested in itself");
  expect_bounded("{% set a = [] %}{% set b = [a] %}{% set x = a.append(b) %}{{ a | tojson }}",
                 "a value nested in itself");
  EXPECT_EQ(
      template_error("{% set ns = namespace(x=1) %}{% set ns.me = ns %}{% set ns.l = [[ns]] %}ok"),
      "");
  // Shared, not nested: a list holding another twice prints both.
  ChatTemplate t;
  ASSERT_TRUE(ChatTemplate::parse("{% set a = [1] %}{% set b = [] %}{% set x = b.append(a) %}{% "
                                  "set x = b.append(a) %}{{ b | tojson }}",
                                  "shared.jinja", &t)
                  .ok());
  std::string out;
  ASSERT_TRUE(t.render({{"user", "hi"}}, {}, &out).ok());
  EXPECT_EQ(out, "[[1], [1]]");
  expect_bounded(
      "{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor "
      "%}{{ ns.x }}",
      "a value nested in itself or too deeply");
  // Built until the step budget ends it, then freed (recursively) without a crash.
  expect_bounded(
      "{% set ns = namespace(x={}) %}{% for i in range(1000000) %}{% set ns.x = {'a': ns.x} %}{% "
      "endfor %}",
      "more than 2000000 steps");
}

TEST(ChatTemplateLimits, StringBlowUpsAreRefusedBeforeTheyAreMade) {
  expect_bounded("{{ 'ab' * 1000000000000 }}",
                 "template string of 67108865 bytes is over the limit of 67108864");
  expect_bounded(
      "{% set ns = namespace(s='abcd') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% "
      "endfor %}"
      "{{ ns.s | length }}",
      "template string of 4194304 pieces is over the limit of 2097152");
  expect_bounded(
      "{% set ns = namespace(s='x' * 1000000) %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s "
      "%}"
      "{% endfor %}",
      "template string of 128000000 bytes is over the limit of 67108864");
  expect_bounded("{{ 'x' | indent(1000000000000) }}", "over the limit of 67108864");
  // Within the bounds a template still renders as before.
  EXPECT_EQ(template_error("{% for i in range(1000) %}{{ 'ab' * 100 }}{% endfor %}"), "");
}

}  // namespace
}  // namespace hanpu::model
