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

def Lb_ThreadCoordAttr : EnumAttr<Lb_Dialect, Lb_ThreadCoord, "coord">;
def Lb_FragmentAttr : EnumAttr<Lb_Dialect, Lb_Fragment, "fragment">;
def Lb_PairOpAttr : EnumAttr<Lb_Dialect, Lb_PairOp, "pair_op">;

#endif // LOWBIT_IR_LBATTRS_TD
