# Only the toolkit's headers, NVRTC and (for benchmarks) cuBLAS are used at
# build time; the driver itself is loaded with dlopen at run time.
if(NOT CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDAToolkit_ROOT} AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::nvrtc)
  message(FATAL_ERROR
    "lowbit needs the CUDA Toolkit (12.x or 13.x) with NVRTC. Install it to "
    "/usr/local/cuda (https://developer.nvidia.com/cuda-downloads) or point "
    "CUDAToolkit_ROOT at an existing installation.")
endif()
message(STATUS "lowbit: CUDA Toolkit ${CUDAToolkit_VERSION} at ${CUDAToolkit_LIBRARY_ROOT}")

# lowbit_embed_ptx(<source.cu> <header> <NAME> <NAMESPACE>)
# Compiles one small fixed kernel to PTX (compute_80) and writes <header>
# holding it as `inline constexpr char NAME[]` (cmake/EmbedPtx.cmake): GPU
# hosts have the driver, which JIT-compiles PTX, but no nvcc. Add <header>
# to the sources of the target that includes it.
find_program(LOWBIT_NVCC nvcc HINTS ${CUDAToolkit_BIN_DIR} /usr/local/cuda/bin REQUIRED)
function(lowbit_embed_ptx source header name namespace)
  get_filename_component(stem ${source} NAME_WE)
  set(ptx ${CMAKE_CURRENT_BINARY_DIR}/${stem}.ptx)
  add_custom_command(OUTPUT ${ptx}
    COMMAND ${LOWBIT_NVCC} -ptx -arch=compute_80 ${source} -o ${ptx}
    DEPENDS ${source}
    COMMENT "Compiling ${stem}.cu to PTX"
    VERBATIM)
  add_custom_command(OUTPUT ${header}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${ptx} -DOUTPUT=${header} -DNAME=${name}
            -DNAMESPACE=${namespace} -P ${PROJECT_SOURCE_DIR}/cmake/EmbedPtx.cmake
    DEPENDS ${ptx} ${PROJECT_SOURCE_DIR}/cmake/EmbedPtx.cmake
    COMMENT "Embedding ${stem}'s PTX"
    VERBATIM)
endfunction()
