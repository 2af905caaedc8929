#pragma once
// hanpu local change (see ../README.md): bounds on the work, nesting and sizes of one parse
// and one render, so a hostile chat template gets an error instead of overflowing the stack,
// exhausting memory or running for hours. Real templates (Qwen3.5's, Llama's, Mistral's) stay
// far inside them.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace jinja {

// Nested parser calls (each bracket, unary operator, ternary or block level takes a few).
inline constexpr size_t kMaxParseDepth = 600;
// Nested statement / expression executions at run time (macro recursion included).
inline constexpr size_t kMaxRenderDepth = 600;
// Statement / expression executions in one render, a loop iteration counted as one plus the
// variables its scope copies. Qwen3.5's template takes about 60 a message.
inline constexpr uint64_t kMaxRenderSteps = 2000000;
// Bytes of one string value (the rendered text included), and the pieces it is kept in (each
// costs tens of bytes beside its text, so 'a' ~ 'a' doubled in a loop grows by pieces).
inline constexpr size_t kMaxStringBytes = size_t{64} << 20;
inline constexpr size_t kMaxStringParts = size_t{1} << 21;
// Items of one list (range() included) and iterations of one loop.
inline constexpr int64_t kMaxRangeItems = int64_t{1} << 20;

// What one render has used; shared by every scope of its context.
struct render_usage {
    uint64_t steps = 0;
    size_t depth = 0;
};

// Thrown when a template passes one of the bounds above.
struct limit_exceeded : public std::runtime_error {
    explicit limit_exceeded(const std::string & what) : std::runtime_error(what) {}
};

// Nesting of a value that is printed, serialised or gathered: a list appended to itself has
// no end, and each level is a recursive call.
inline constexpr size_t kMaxValueDepth = 1000;
inline size_t & value_walk_depth() {
    thread_local size_t depth = 0;
    return depth;
}

// Increments `depth` for the guard's life; throws past `max`.
struct depth_guard {
    size_t & depth;
    depth_guard(size_t & d, size_t max, const char * what) : depth(d) {
        if (depth >= max) {
            throw limit_exceeded(std::string("template nests deeper than ") + std::to_string(max) + " levels (" + what + ")");
        }
        ++depth;
    }
    ~depth_guard() { --depth; }
    depth_guard(const depth_guard &) = delete;
    depth_guard & operator=(const depth_guard &) = delete;
};

// Guards one level of a recursive walk over a value (printing, tojson, gathering output).
struct value_walk_guard {
    depth_guard guard{value_walk_depth(), kMaxValueDepth, "a value nested in itself or too deeply"};
};

inline void check_string_bytes(size_t n, size_t parts = 1) {
    if (n > kMaxStringBytes) {
        throw limit_exceeded("template string of " + std::to_string(n) + " bytes is over the limit of " +
                             std::to_string(kMaxStringBytes));
    }
    if (parts > kMaxStringParts) {
        throw limit_exceeded("template string of " + std::to_string(parts) + " pieces is over the limit of " +
                             std::to_string(kMaxStringParts));
    }
}

inline void check_items(size_t n) {
    if (n > static_cast<size_t>(kMaxRangeItems)) {
        throw limit_exceeded("template list of " + std::to_string(n) + " items is over the limit of " +
                             std::to_string(kMaxRangeItems));
    }
}

} // namespace jinja
