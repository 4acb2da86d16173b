// RUN: lowbit-opt %s | FileCheck %s
// RUN: lowbit-opt %s | lowbit-opt | FileCheck %s

// CHECK-LABEL: func.func @quant_schemes
// CHECK-DAG: lb.tensor = #lb.quant<granularity = tensor, scale = f32>
// CHECK-DAG: lb.channel = #lb.quant<granularity = channel, scale = bf16, zero = sub_code>
// CHECK-DAG: lb.group = #lb.quant<granularity = group, group_size = 128, scale = f16, zero = sub_value>
// CHECK-DAG: lb.gptq = #lb.quant<granularity = group, group_size = 128, scale = f16, zero = quantized, act_order = true>
// CHECK-DAG: lb.mx = #lb.quant<granularity = group, group_size = 32, scale = !lb.float<ue8m0, fn>>
// CHECK-DAG: lb.nv = #lb.quant<granularity = group, group_size = 16, scale = f8E4M3FN>
// CHECK-DAG: lb.nvfp4 = #lb.quant<granularity = group, group_size = 16, scale = f8E4M3FN, tensor_scale = f32>
// CHECK-DAG: lb.compact = #lb.quant<granularity = group, group_size = 32, scale = ui8, zero = sub_value, super_block = 256, super_step = f16>
func.func @quant_schemes() attributes {
    lb.tensor = #lb.quant<granularity = tensor, scale = f32>,
    lb.channel = #lb.quant<granularity = channel, scale = bf16, zero = sub_code>,
    lb.group = #lb.quant<granularity = group, group_size = 128, scale = f16, zero = sub_value>,
    lb.gptq = #lb.quant<granularity = group, group_size = 128, scale = f16, zero = quantized, act_order = true>,
    lb.mx = #lb.quant<granularity = group, group_size = 32, scale = !lb.float<ue8m0, fn>>,
    lb.nv = #lb.quant<granularity = group, group_size = 16, scale = f8E4M3FN>,
    lb.nvfp4 = #lb.quant<granularity = group, group_size = 16, scale = f8E4M3FN, tensor_scale = f32>,
    lb.compact = #lb.quant<granularity = group, group_size = 32, scale = ui8, zero = sub_value, super_block = 256, super_step = f16>} {
  return
}

// CHECK-LABEL: func.func @schedules
// CHECK-DAG: lb.gemv = #lb.schedule<family = gemv, tile = [1, 256, 512], warps = [1, 4], stages = 2, split_k = 4>
// CHECK-DAG: lb.mma = #lb.schedule<family = mma, tile = [64, 128, 64], warps = [2, 2], stages = 4, split_k = 1>
// cluster_k is printed only when it is not 1.
// CHECK-DAG: lb.cluster = #lb.schedule<family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 8, cluster_k = 4>
// CHECK-DAG: lb.unclustered = #lb.schedule<family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 8>
func.func @schedules() attributes {
    lb.cluster = #lb.schedule<family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 8, cluster_k = 4>,
    lb.unclustered = #lb.schedule<family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 8, cluster_k = 1>,
    lb.gemv = #lb.schedule<family = gemv, tile = [1, 256, 512], warps = [1, 4], stages = 2, split_k = 4>,
    lb.mma = #lb.schedule<family = mma, tile = [64, 128, 64], warps = [2, 2], stages = 4, split_k = 1>} {
  return
}
