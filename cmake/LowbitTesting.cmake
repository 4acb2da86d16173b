find_package(GTest REQUIRED)
include(GoogleTest)

# lowbit_add_gtest(<target> SOURCES ... [LIBS ...] [GPU])
# One GoogleTest executable; every TEST becomes its own ctest entry. GPU tests
# get the ctest label `gpu` and report GTEST_SKIP as a ctest skip, so a
# machine without a device shows them as skipped, never as passed.
function(lowbit_add_gtest target)
  cmake_parse_arguments(ARG "GPU" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${target} ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  set(labels unit)
  if(ARG_GPU)
    set(labels gpu)
  endif()
  gtest_discover_tests(${target}
    DISCOVERY_MODE PRE_TEST
    PROPERTIES LABELS "${labels}" SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
endfunction()
