find_program(LOWBIT_CCACHE ccache)
if(LOWBIT_CCACHE)
  set(CMAKE_C_COMPILER_LAUNCHER "${LOWBIT_CCACHE}")
  set(CMAKE_CXX_COMPILER_LAUNCHER "${LOWBIT_CCACHE}")
endif()

find_program(LOWBIT_LLD NAMES ld.lld-19 ld.lld)
if(LOWBIT_LLD)
  # lld links the MLIR tools several times faster than bfd on a 2-core machine.
  add_link_options("-fuse-ld=lld")
endif()

add_compile_options(-Wall -Wextra)
