#ifndef LOWBIT_IR_LBATTRS_TD
#define LOWBIT_IR_LBATTRS_TD

include "ir/LbDialect.td"
include "ir/LbEnums.td"
include "mlir/IR/AttrTypeBase.td"

class Lb_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Lb_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Lb_QuantAttr : Lb_Attr<"Quant", "quant"> {
  let summary = "a quantization scheme: scale granularity, scale type, zeros";
  let description = [{
    `#lb.quant<granularity = group, group_size = 128, scale = f16, zero = none>`:
    one f16 scale per 128 consecutive weights along K. `group_size` is
    meaningful only for `group`. `act_order = true` means groups follow the
    `g_idx` permutation of K, which the runtime applies to the activations.
  }];
  let parameters = (ins
    "::lowbit::lb::ScaleGranularity":$granularity,
    DefaultValuedParameter<"int64_t", "0">:$group_size,
    "::mlir::Type":$scale,
    DefaultValuedParameter<"::lowbit::lb::ZeroMode", "::lowbit::lb::ZeroMode::none">:$zero,
    DefaultValuedParameter<"bool", "false">:$act_order
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Lb_ScheduleAttr : Lb_Attr<"Schedule", "schedule"> {
  let summary = "how a kernel computes a problem: family, tiles, warps, stages";
  let description = [{
    `#lb.schedule<family = mma, tile = [64, 128, 64], warps = [2, 2], stages = 4, split_k = 1>`.
    `tile` is the block tile [M, N, K]; `warps` the warp grid over [M, N].
    The schedule never names a datatype: the tuner searches these alone.
  }];
  let parameters = (ins
    "::lowbit::lb::KernelFamily":$family,
    ArrayRefParameter<"int64_t", "block tile [M, N, K]">:$tile,
    ArrayRefParameter<"int64_t", "warp grid [M, N]">:$warps,
    "int64_t":$stages,
    "int64_t":$split_k
  );
  let assemblyFormat = [{
    `<` `family` `=` $family `,` `tile` `=` `[` $tile `]` `,`
    `warps` `=` `[` $warps `]` `,` `stages` `=` $stages `,` `split_k` `=` $split_k `>`
  }];
  let genVerifyDecl = 1;
}

def Lb_SwizzleAttr : Lb_Attr<"Swizzle", "swizzle"> {
  let summary = "a shared-memory layout: rows of `bytes` with XOR-swizzled 16-byte chunks";
  let description = [{
    `#lb.swizzle<bytes = 128>`: a buffer of rows of 128 bytes in which the
    16-byte chunk c of row r lives at chunk c ^ (r mod 8), the layout the TMA
    unit writes with CU_TENSOR_MAP_SWIZZLE_128B and wgmma reads with a
    descriptor of swizzle mode 128B (PTX ISA, "Shared Memory Matrix Layout").
    Both units apply it to address bits, so a stage must start on a multiple
    of 8 rows x `bytes` (1024 bytes for 128), and one attribute gives the
    TMA's swizzle, the descriptor's mode and that alignment.
  }];
  let parameters = (ins "int64_t":$bytes);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Rows that one swizzle pattern spans (8: a chunk index has 3 bits).
    static constexpr int64_t kPatternRows = 8;
    /// The alignment a buffer in this layout needs: one whole pattern.
    int64_t getAlignment() const { return kPatternRows * getBytes(); }
  }];
}

def Lb_ThreadCoordAttr : EnumAttr<Lb_Dialect, Lb_ThreadCoord, "coord">;
def Lb_FragmentAttr : EnumAttr<Lb_Dialect, Lb_Fragment, "fragment">;
def Lb_PairOpAttr : EnumAttr<Lb_Dialect, Lb_PairOp, "pair_op">;

#endif // LOWBIT_IR_LBATTRS_TD
