// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// Split-K mma with stages = 2: 4 warps, each with a ring of 8 slots (2
// chunks of four 32-wide blocks) in dynamic shared memory. The codes ring
// (4 x 8 slots of 64 x 32 4-bit codes) comes first, the activations ring
// (16 x 32 f16 per slot) after it; the partial sums stay static.
// CHECK: __shared__ __align__(128) unsigned char [[P:smem[0-9]+]][16384];
// CHECK: extern __shared__ __align__(128) unsigned char lb_dynamic_smem[];
// CHECK: unsigned char *const [[W:smem[0-9]+]] = lb_dynamic_smem + 0;
// CHECK: unsigned char *const [[X:smem[0-9]+]] = lb_dynamic_smem + 32768;
// A warp copies its own slots: lane l copies 16-byte chunks l, l + 32 of a
// slot's 1024 code bytes, the bytes it reads back.
// CHECK: for (int c = (int)(threadIdx.x % 32); c < 64; c += 32) {
// CHECK: cp_async16(base + (u32)(group * 1024 + chunk * 16), source);
// Activation rows past M are zero-filled.
// CHECK: for (int c = (int)(threadIdx.x & 31); c < 64; c += 32) {
// CHECK: const bool inside = row < arg4;
// CHECK: cp_async16_zfill(base + (u32)c * 16u, source, inside);
// CHECK: cp_async_commit();
// The main loop: block i has landed when at most 6 groups are pending.
// CHECK: cp_async_wait<6>();
// CHECK-NEXT: __syncwarp();
// CHECK: = ld_shared_v4([[W]] + (
// CHECK: const U32x4 w = *reinterpret_cast<const U32x4 *>([[X]] + ((
// CHECK: mma_m16n8k16(
func.func @m(%x: tensor<?x1024xf16>, %w: tensor<256x1024xui4>, %s: tensor<256x8xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 2, split_k = 4>
      : (tensor<?x1024xf16>, tensor<256x1024xui4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}
