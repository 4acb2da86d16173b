find_package(GTest REQUIRED)
include(GoogleTest)

# lowbit_add_gtest(<target> SOURCES ... [LIBS ...] [GPU])
# One GoogleTest executable; every TEST becomes its own ctest entry. GPU tests
# get the ctest label `gpu` and report GTEST_SKIP as a ctest skip, so a
# machine without a device shows them as skipped, never as passed.
function(lowbit_add_gtest target)
  cmake_parse_arguments(ARG "GPU" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${target} ${ARG_SOURCES})
  # Tests share fixtures across folders (tests/...), and see the layers
  # through the libraries they link, like any other target.
  lowbit_publish_headers(${target} tests PRIVATE PATHS tests)
  target_link_libraries(${target} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  set(labels unit)
  if(ARG_GPU)
    set(labels gpu)
  endif()
  gtest_discover_tests(${target}
    DISCOVERY_MODE PRE_TEST
    PROPERTIES LABELS "${labels}" SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
endfunction()

# lowbit_test_kernel_set(<target> SPEC <toml> OUTPUT <dir | file.db> [SCHEDULES ...])
# Compiles a GPU test's kernels with `lowbit compile` at build time, on the
# machine with the compiler; they travel to the GPU host with the test
# binaries (build/kernels/). An OUTPUT ending in .db is a kernel database,
# anything else a kernel-set directory. Each SCHEDULES entry becomes one
# --schedule; without any, the compiler's default schedules.
function(lowbit_test_kernel_set target)
  cmake_parse_arguments(ARG "" "SPEC;OUTPUT" "SCHEDULES" ${ARGN})
  get_filename_component(parent ${ARG_OUTPUT} DIRECTORY)
  if(ARG_OUTPUT MATCHES "\\.db$")
    set(stamp ${ARG_OUTPUT})
    set(clean ${CMAKE_COMMAND} -E rm -f ${ARG_OUTPUT} ${ARG_OUTPUT}-wal ${ARG_OUTPUT}-shm)
  else()
    set(stamp ${ARG_OUTPUT}/kernels.json)
    set(clean ${CMAKE_COMMAND} -E rm -rf ${ARG_OUTPUT})
  endif()
  set(schedules)
  foreach(schedule ${ARG_SCHEDULES})
    list(APPEND schedules --schedule "${schedule}")
  endforeach()
  get_filename_component(name ${ARG_OUTPUT} NAME)
  add_custom_command(OUTPUT ${stamp}
    COMMAND ${clean}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${parent}
    COMMAND lowbit compile ${ARG_SPEC} -o ${ARG_OUTPUT} ${schedules}
    DEPENDS lowbit lowbit_compiler ${ARG_SPEC}
    COMMENT "Compiling the test kernel set ${name}"
    VERBATIM)
  add_custom_target(${target} ALL DEPENDS ${stamp})
endfunction()
