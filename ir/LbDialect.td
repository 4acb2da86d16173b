#ifndef LOWBIT_IR_LBDIALECT_TD
#define LOWBIT_IR_LBDIALECT_TD

include "mlir/IR/OpBase.td"

def Lb_Dialect : Dialect {
  let name = "lb";
  let summary = "lowbit: low-bit mixed-precision matrix multiplication";
  let description = [{
    The `lb` dialect keeps a weight's storage format (its element type and the
    `#lb.quant` scheme) apart from how a kernel computes it (the
    `#lb.schedule`). Formats narrower than MLIR's builtin types are spelled
    `!lb.float<...>` (any ExMy minifloat) and `!lb.lut<...>` (codebooks).
  }];
  let cppNamespace = "::lowbit::lb";
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    // Each kind is registered in its own file, where its storage is complete.
    void registerTypes();
    void registerAttributes();
  }];
}

class Lb_Op<string mnemonic, list<Trait> traits = []>
    : Op<Lb_Dialect, mnemonic, traits>;

#endif // LOWBIT_IR_LBDIALECT_TD
