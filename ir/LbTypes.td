#ifndef LOWBIT_IR_LBTYPES_TD
#define LOWBIT_IR_LBTYPES_TD

include "ir/LbDialect.td"
include "ir/LbEnums.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

class Lb_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Lb_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

// A memref element so that weights and scales of a minifloat type are
// kernel arguments.
def Lb_MiniFloatType : Lb_Type<"MiniFloat", "float", [MemRefElementTypeInterface]> {
  let summary = "a generic ExMy minifloat storage type";
  let description = [{
    `!lb.float<e2m1, finite>` is OCP FP4 e2m1; `!lb.float<ue8m0, fn>` the
    unsigned MX scale type; `!lb.float<e4m3, bias = 8, fn>` an e4m3 with a
    non-standard bias (the default bias is 2^(e-1) - 1 and is printed only when
    it differs). The value of a code follows from the parameters alone:
    subnormals where the exponent field is 0 (unless `mantissa = 0` and the
    type is unsigned, as e8m0, whose every code is a power of two), and the
    `special` rule for the top codes.
  }];
  let parameters = (ins
    "unsigned":$exponent,
    "unsigned":$mantissa,
    "int64_t":$bias,
    "bool":$isSigned,
    "::lowbit::lb::SpecialValues":$special
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Storage width in bits: sign, exponent and mantissa fields.
    unsigned getWidth() const {
      return (getIsSigned() ? 1 : 0) + getExponent() + getMantissa();
    }
  }];
}

def Lb_OffsetIntType : Lb_Type<"OffsetInt", "int", [MemRefElementTypeInterface]> {
  let summary = "unsigned codes read with a constant offset";
  let description = [{
    `!lb.int<bits = 2, offset = -1, ternary = true>` is ternary {-1, 0, 1}
    stored as the 2-bit codes 0, 1, 2 (code 3 is invalid); `!lb.int<bits = 4,
    offset = -8>` is an excess-8 int4 (GGUF Q4_0's codes). A code q is worth
    q + offset. Plain unsigned and two's-complement codes use the builtin
    `ui<bits>` / `si<bits>`.
  }];
  let parameters = (ins
    "unsigned":$bits,
    DefaultValuedParameter<"int64_t", "0">:$offset,
    DefaultValuedParameter<"bool", "false">:$ternary
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Lb_LutType : Lb_Type<"Lut", "lut", [MemRefElementTypeInterface]> {
  let summary = "codes that index a lookup table";
  let description = [{
    `!lb.lut<4, [-1.0, ..., 1.0]>` decodes a 4-bit code `q` to `table[q]`
    (nf4, the FP4 value table, or a user codebook). `!lb.lut<4>` has no table
    in the type: the `lb.qmatmul` then takes it as its `table` operand.
  }];
  let parameters = (ins
    "unsigned":$bits,
    OptionalParameter<"::mlir::DenseF64ArrayAttr", "decoded values, one per code">:$table
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The table, empty when it is supplied as an operand at run time.
    ::llvm::ArrayRef<double> getValues() const {
      return getTable() ? getTable().asArrayRef() : ::llvm::ArrayRef<double>();
    }
  }];
}

#endif // LOWBIT_IR_LBTYPES_TD
