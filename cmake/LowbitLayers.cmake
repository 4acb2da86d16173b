# The include paths enforce the layers (docs/architecture.md, "Layers"): no
# target sees the source root. Each library publishes an include root of its
# own under build/include/<layer>/ that holds only its folder (a symlink into
# the source tree, spelled as the #includes spell it), so a target sees the
# headers of the libraries it links and nothing else: `#include "ir/LbOps.h"`
# in a library that does not link lowbit_ir does not compile. MLIR's headers
# come with lowbit_ir only. scripts/check-layers.py (ctest `layers`) states the
# same rules as data and also checks what no include path can (a layer that
# links a library it should not).
#
# lowbit_publish_headers(<target> <layer> [PRIVATE] PATHS <path>...
#                        [GENERATED <path>...])
#   PATHS: folders or single headers of the source tree, relative to its
#   root; GENERATED: the same in the build tree (ODS .inc files, embedded
#   PTX), put on the path as system headers (generated code is not ours to
#   keep warning-free). Public unless PRIVATE (an executable's own headers).
#   Several targets of one layer name the same <layer> and share its root.
function(lowbit_publish_headers target layer)
  cmake_parse_arguments(ARG "PRIVATE" "" "PATHS;GENERATED" ${ARGN})
  set(scope PUBLIC)
  if(ARG_PRIVATE)
    set(scope PRIVATE)
  endif()
  foreach(kind PATHS GENERATED)
    if(kind STREQUAL "PATHS")
      set(root ${PROJECT_BINARY_DIR}/include/${layer})
      set(tree ${PROJECT_SOURCE_DIR})
    else()
      set(root ${PROJECT_BINARY_DIR}/include/${layer}-generated)
      set(tree ${PROJECT_BINARY_DIR})
    endif()
    if(NOT ARG_${kind})
      continue()
    endif()
    foreach(path ${ARG_${kind}})
      get_filename_component(parent ${root}/${path} DIRECTORY)
      file(MAKE_DIRECTORY ${parent})
      file(REMOVE ${root}/${path})
      file(CREATE_LINK ${tree}/${path} ${root}/${path} SYMBOLIC)
    endforeach()
    if(kind STREQUAL "PATHS")
      target_include_directories(${target} ${scope} $<BUILD_INTERFACE:${root}>)
    else()
      target_include_directories(${target} SYSTEM ${scope} $<BUILD_INTERFACE:${root}>)
    endif()
  endforeach()
endfunction()
