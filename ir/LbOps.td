#ifndef LOWBIT_IR_LBOPS_TD
#define LOWBIT_IR_LBOPS_TD

include "ir/LbDialect.td"
include "ir/LbAttrs.td"
include "ir/LbTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Lb_QMatmulOp : Lb_Op<"qmatmul", [Pure, AttrSizedOperandSegments]> {
  let summary = "Y[M,N] = X[M,K] · dequant(W[N,K])ᵀ";
  let description = [{
    `codes` holds the weight codes in their storage type (`ui4`, `si4`,
    `!lb.float<...>`, `!lb.lut<...>`), logically [N, K]; how they are packed
    in memory is a layout decided later, not part of the problem. `scales`
    (and `zeros`) have the shape `#lb.quant` implies: [1] per tensor, [N] per
    channel, [N, K / group_size] per group. M may be dynamic. The `quant`
    and `schedule` attributes are written without their `#lb.` prefix, so
    that the `:` of the operand types is not read as an attribute type.

    Quantized activations (`si8`, `f8E4M3FN`) carry `x_scales`, f32 of shape
    [M] (one per token) or [1] (per tensor): x = q_x · s_x, and y (f16, bf16
    or f32, the caller's choice) is x · dequant(W)ᵀ. f16 and bf16 activations
    take none, and y has their type.

    ```mlir
    %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
        : (tensor<?x4096xf16>, tensor<4096x4096xui4>, tensor<4096x32xf16>) -> tensor<?x4096xf16>
    ```
  }];
  let arguments = (ins
    AnyRankedTensor:$x,
    Optional<AnyRankedTensor>:$x_scales,
    AnyRankedTensor:$codes,
    AnyRankedTensor:$scales,
    Optional<AnyRankedTensor>:$zeros,
    Optional<AnyRankedTensor>:$table,
    Lb_QuantAttr:$quant,
    OptionalAttr<Lb_ScheduleAttr>:$schedule
  );
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $x (`x_scales` `(` $x_scales^ `:` type($x_scales) `)`)? `,` $codes `,` $scales
    (`zeros` `(` $zeros^ `:` type($zeros) `)`)?
    (`table` `(` $table^ `:` type($table) `)`)?
    `quant` $quant (`schedule` $schedule^)? attr-dict
    `:` `(` type($x) `,` type($codes) `,` type($scales) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

include "ir/LbTileOps.td"
include "ir/LbMmaOps.td"
include "ir/LbMmaS8Ops.td"
include "ir/LbWgmmaOps.td"

#endif // LOWBIT_IR_LBOPS_TD
