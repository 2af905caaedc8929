# Cross-compiling hanpu for 64-bit ARM (Debian's g++-aarch64-linux-gnu and the :arm64
# multiarch -dev packages; scripts/test_arm64 sets it up and runs the tests under qemu).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# The :arm64 packages' .pc files, not the host's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
# The cross compiler does not search /usr/include, where the (architecture-independent)
# headers of Highway, fmt, CLI11, nlohmann-json, GoogleTest, PCRE2 and utf8proc live; the
# script links just those into HANPU_CROSS_HEADERS so the host's libc headers stay out.
if(DEFINED ENV{HANPU_CROSS_HEADERS})
  set(CMAKE_CXX_FLAGS_INIT "-isystem $ENV{HANPU_CROSS_HEADERS}")
endif()
# gtest_discover_tests lists each test binary's tests after it is built: through qemu-user,
# which takes the loader and libc of the multiarch libc6:arm64 from /lib/aarch64-linux-gnu.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
