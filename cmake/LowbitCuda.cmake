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
