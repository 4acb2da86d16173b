if(NOT MLIR_DIR AND EXISTS /usr/lib/llvm-19/lib/cmake/mlir)
  set(MLIR_DIR /usr/lib/llvm-19/lib/cmake/mlir)
endif()
find_package(MLIR REQUIRED CONFIG)
if(NOT LLVM_VERSION_MAJOR EQUAL 19)
  message(FATAL_ERROR "lowbit needs LLVM/MLIR 19, found ${LLVM_PACKAGE_VERSION} at ${MLIR_DIR}")
endif()
message(STATUS "lowbit: MLIR from ${MLIR_DIR}")

list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
include(TableGen)
include(AddLLVM)
include(AddMLIR)

# MLIR's headers come with lowbit_ir (ir/CMakeLists.txt), so only the layers
# above it see them; they are system headers there: their warnings are not ours.
set(LOWBIT_MLIR_INCLUDE_DIRS ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
add_definitions(${LLVM_DEFINITIONS})
if(NOT LLVM_ENABLE_RTTI)
  message(FATAL_ERROR "lowbit expects an LLVM built with RTTI (Debian's is)")
endif()

set(LOWBIT_LIT "/usr/lib/llvm-19/build/utils/lit/lit.py" CACHE FILEPATH "lit.py")
set(LOWBIT_LLVM_TOOLS_DIR "${LLVM_TOOLS_BINARY_DIR}" CACHE PATH "FileCheck and friends")
