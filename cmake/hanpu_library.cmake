# One helper so every folder of src/ becomes one library target with the same settings, and
# the layer rules of docs/architecture.md are enforced by the compiler: a target sees
# include/ (the public API) and, privately, a view of src/ holding only its own folder and the
# folders its rule allows (symbolic links made at configure time), so an include that crosses
# a rule does not compile. scripts/check_layers checks the same rules textually.

# The rules: the ```layers block of docs/architecture.md, "src/<folder>: <folder> ...".
file(STRINGS ${PROJECT_SOURCE_DIR}/docs/architecture.md hanpu_arch_lines)
set(hanpu_in_rules FALSE)
foreach(line IN LISTS hanpu_arch_lines)
  if(line STREQUAL "```layers")
    set(hanpu_in_rules TRUE)
  elseif(line STREQUAL "```")
    set(hanpu_in_rules FALSE)
  elseif(hanpu_in_rules AND line MATCHES "^src/([a-z_/]+):(.*)$")
    string(REPLACE "/" "_" key "${CMAKE_MATCH_1}")
    string(STRIP "${CMAKE_MATCH_2}" deps)
    separate_arguments(deps)
    set(HANPU_LAYER_DEPS_${key} ${deps} CACHE INTERNAL "")
    set(HANPU_LAYER_KNOWN_${key} TRUE CACHE INTERNAL "")
  endif()
endforeach()

# The view of src/ a target in src/<folder> may include from: <build>/layers/<folder>/.
function(hanpu_layer_view folder out)
  string(REPLACE "/" "_" key "${folder}")
  if(NOT HANPU_LAYER_KNOWN_${key})
    message(FATAL_ERROR "src/${folder} has no line in docs/architecture.md's layers block")
  endif()
  set(view ${PROJECT_BINARY_DIR}/layers/${key})
  foreach(part ${folder} ${HANPU_LAYER_DEPS_${key}})
    if(NOT IS_DIRECTORY ${PROJECT_SOURCE_DIR}/src/${part})
      continue()  # a third-party prefix (jinja): its target brings its own include path
    endif()
    get_filename_component(parent ${view}/${part} DIRECTORY)
    file(MAKE_DIRECTORY ${parent})
    if(NOT EXISTS ${view}/${part})
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${part} ${view}/${part} SYMBOLIC)
    endif()
  endforeach()
  set(${out} ${view} PARENT_SCOPE)
endfunction()

function(hanpu_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
  hanpu_layer_view(${folder} view)
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include
                             PRIVATE ${view})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# Tests, benchmarks and the CLI see all of src/.
function(hanpu_sees_all_layers name)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src)
endfunction()
