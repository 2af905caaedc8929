# Writes include/hanpu/version.h with the commit the tree is at now, on every build (a
# configure-time commit goes stale as commits land on an existing build folder). The file is
# rewritten only when its text changes, so nothing recompiles on an unchanged commit.
# Run as: cmake -DSOURCE_DIR=... -DOUT=... -DVERSION=x.y.z -P hanpu_version.cmake
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE HANPU_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT HANPU_COMMIT)
  set(HANPU_COMMIT "unknown")
endif()
string(REPLACE "." ";" parts "${VERSION}")
list(GET parts 0 PROJECT_VERSION_MAJOR)
list(GET parts 1 PROJECT_VERSION_MINOR)
list(GET parts 2 PROJECT_VERSION_PATCH)
set(PROJECT_VERSION ${VERSION})
configure_file(${SOURCE_DIR}/include/hanpu/version.h.in ${OUT}.new @ONLY)
file(COPY_FILE ${OUT}.new ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.new)
