// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// The dequant kernel writes its output (the dense weights, so not const)
// with one 16-byte store per subtile: the two k16 steps' registers of a
// column are its 8 consecutive K values. Its z blocks are no cluster.
// CHECK: extern "C" __global__ void __launch_bounds__({{[0-9, ]+}})
// CHECK-NOT: __cluster_dims__
// CHECK-NEXT: dense__dequant_t1x64x256_w1x1_s1_k2(
// CHECK-SAME: const {{.*}} *__restrict__ arg0
// CHECK-SAME: , u16 *__restrict__ arg3, long long arg4)
// CHECK: = (long long)(blockIdx.z);
// CHECK-COUNT-8: *reinterpret_cast<uint4 *>(arg3 + {{.*}}) = make_uint4(
// CHECK-NOT: __syncthreads
func.func @dense(%x: tensor<?x1024xf16>, %w: tensor<128x1024xui4>, %s: tensor<128x8xf16>) -> tensor<?x128xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = dequant, tile = [1, 64, 256], warps = [1, 1], stages = 1, split_k = 2>
      : (tensor<?x1024xf16>, tensor<128x1024xui4>, tensor<128x8xf16>) -> tensor<?x128xf16>
  return %y : tensor<?x128xf16>
}
