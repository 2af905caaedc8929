# libhanpu, the one library users link (static by default, shared with BUILD_SHARED_LIBS=ON),
# made from the objects of every layer's target, and what `cmake --install` puts in place:
# include/hanpu, the library, hanpuConfig.cmake exporting hanpu::hanpu, hanpu.pc and the CLI.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(HANPU_LIBRARY_PARTS hanpu_base hanpu_parallel hanpu_simd hanpu_cpu_la hanpu_cpu_attn hanpu_cpu_nn hanpu_plan
                        hanpu_npu_machine hanpu_npu_sim hanpu_npu_kernels hanpu_model_io hanpu_model hanpu_capi
                        llama_jinja)
set(objects "")
foreach(part ${HANPU_LIBRARY_PARTS})
  list(APPEND objects $<TARGET_OBJECTS:${part}>)
endforeach()
add_library(hanpu_lib ${objects})
add_library(hanpu::hanpu ALIAS hanpu_lib)
set_target_properties(hanpu_lib PROPERTIES OUTPUT_NAME hanpu EXPORT_NAME hanpu LINKER_LANGUAGE CXX
                      VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
target_include_directories(hanpu_lib INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                           $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(hanpu_lib INTERFACE cxx_std_20)
# The parts' own dependencies: private, so a shared libhanpu carries them and a static one
# lists them for the linker only (hanpuConfig.cmake finds them again).
set(HANPU_PC_REQUIRES "libhwy libhwy-contrib libpcre2-8 libutf8proc fmt")
target_link_libraries(hanpu_lib PRIVATE fmt::fmt PkgConfig::HWY PkgConfig::HWY_CONTRIB PkgConfig::PCRE2
                      PkgConfig::UTF8PROC Threads::Threads)
if(OPENBLAS_FOUND)
  target_link_libraries(hanpu_lib PRIVATE PkgConfig::OPENBLAS)
  string(APPEND HANPU_PC_REQUIRES " openblas")
endif()

get_target_property(HANPU_LIBRARY_TYPE hanpu_lib TYPE)
if(HANPU_LIBRARY_TYPE STREQUAL "STATIC_LIBRARY")
  set(HANPU_STATIC ON)
  # A static libhanpu needs its dependencies on the consumer's link line: pkg-config --libs
  # names them without --static, and a C program gets the C++ runtime.
  set(HANPU_PC_REQUIRES_LINE "Requires: ${HANPU_PC_REQUIRES}")
  set(HANPU_PC_LIBS "-L\${libdir} -lhanpu -lstdc++ -lm -pthread")
else()
  set(HANPU_STATIC OFF)
  set(HANPU_PC_REQUIRES_LINE "Requires.private: ${HANPU_PC_REQUIRES}")
  set(HANPU_PC_LIBS "-L\${libdir} -lhanpu")
endif()
if(OPENBLAS_FOUND)
  set(HANPU_OPENBLAS ON)
else()
  set(HANPU_OPENBLAS OFF)
endif()

install(TARGETS hanpu_lib EXPORT hanpuTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS hanpu RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/hanpu DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/include/hanpu/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hanpu)
install(EXPORT hanpuTargets NAMESPACE hanpu:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hanpu)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hanpuConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/hanpuConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hanpu)
# 0.x: a new minor version may change the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hanpuConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/hanpuConfig.cmake ${PROJECT_BINARY_DIR}/hanpuConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hanpu)
configure_file(${PROJECT_SOURCE_DIR}/cmake/hanpu.pc.in ${PROJECT_BINARY_DIR}/hanpu.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/hanpu.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
