#ifndef LOWBIT_PASSES_PASSES_TD
#define LOWBIT_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def LbTile : Pass<"lb-tile", "mlir::ModuleOp"> {
  let summary = "instantiate each scheduled lb.qmatmul as a tile-level kernel";
  let description = [{
    For every `lb.qmatmul` carrying a `#lb.schedule`, adds a kernel function
    (`lb.kernel`) with memref arguments whose body is the schedule's kernel
    family (`gemv`, `mma`) written with scf/arith loops and lb tile ops.
    The weight argument has no layout yet: `lb-propagate-layouts` derives it.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect", "mlir::func::FuncDialect"];
}

def LbPropagateLayouts : Pass<"lb-propagate-layouts", "mlir::ModuleOp"> {
  let summary = "derive each kernel's weight layout from its fragment anchors";
  let description = [{
    Fixes the layout at each `lb.load_codes` anchor (the fragment a thread
    needs), composes it with the in-register interleave of the decode that
    consumes it, and inverts the composition so that every thread's load is
    one contiguous 16-byte vector. The result, an F2-linear map from (n, k)
    inside a tile to a code offset, is recorded on the kernel as
    `lb.weight_layout` (the serialized form the runtime packer applies) and
    on each load as its `tile`.
  }];
}

def LbLowerDecode : Pass<"lb-lower-decode", "mlir::ModuleOp"> {
  let summary = "lower lb.decode to lop3 / magic-number sequences";
  let description = [{
    Replaces each `lb.decode` by the bit-level sequence chosen from its code
    and value types: for 4-bit integers, one lop3 per f16x2/bf16x2 register
    that ORs two codes into the mantissa of a magic number, then one
    pair_arith to remove the magic (and the signed offset). To s8 bytes
    (i8 values): shifts and lop3 only.
  }];
  // Its sequences use arith (shifts, xor, constants), which its input need
  // not contain: a lone lb.decode to s8 aborted lowbit-opt without it.
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

#endif // LOWBIT_PASSES_PASSES_TD
