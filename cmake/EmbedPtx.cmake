# cmake -DINPUT=<file.ptx> -DOUTPUT=<header.h> -DNAME=<identifier> -DNAMESPACE=<ns> -P EmbedPtx.cmake
# Writes a header holding the PTX text as `inline constexpr char NAME[]` in
# namespace NAMESPACE: GPU hosts have the driver, which JIT-compiles PTX, but
# no nvcc, so small fixed kernels travel inside the binaries that launch them.
file(READ "${INPUT}" ptx)
if(NOT ptx MATCHES "\\.entry")
  message(FATAL_ERROR "${INPUT} holds no kernel entry")
endif()
set(body "// Generated from ${INPUT} by cmake/EmbedPtx.cmake. Do not edit.\n#pragma once\n\nnamespace ${NAMESPACE} {\ninline constexpr char ${NAME}[] = R\"lowbit_ptx(${ptx})lowbit_ptx\";\n} // namespace ${NAMESPACE}\n")
file(WRITE "${OUTPUT}.tmp" "${body}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
