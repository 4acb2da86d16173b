# cmake -DINPUT=<file.ptx> -DOUTPUT=<header.h> -DNAME=<identifier> -P EmbedPtx.cmake
# Writes a header holding the PTX text as `inline constexpr char NAME[]`.
file(READ "${INPUT}" ptx)
if(NOT ptx MATCHES "\\.entry")
  message(FATAL_ERROR "${INPUT} holds no kernel entry")
endif()
set(body "// Generated from ${INPUT} by compiler/measure/EmbedPtx.cmake. Do not edit.\n#pragma once\n\nnamespace lowbit::measure {\ninline constexpr char ${NAME}[] = R\"lowbit_ptx(${ptx})lowbit_ptx\";\n} // namespace lowbit::measure\n")
file(WRITE "${OUTPUT}.tmp" "${body}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
