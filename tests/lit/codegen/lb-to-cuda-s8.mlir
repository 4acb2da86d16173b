// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// W8A8 on the integer tensor cores. x is bytes, x_scales f32 and y the f32
// the problem asked for. The 8-bit codes' derived layout is the s8 one.
// CHECK: extern "C" __global__
// CHECK-NEXT: w8a8__mma_t16x64x128_w1x1_s1_k4(const unsigned char *__restrict__ [[X:arg0]], const float *__restrict__ [[XS:arg1]], const unsigned char *__restrict__ arg2, const u16 *__restrict__ arg3, float *__restrict__ [[Y:arg4]], long long [[M:arg5]])
// CHECK: FragC_s32 [[ACC:v[0-9]+]] = {{[{][{]}}0, 0, 0, 0{{[}][}]}};
// A lane's B fragment: one 8-byte load of its token's row, zeros past M.
// CHECK: FragB_s8 [[B:v[0-9]+]];
// CHECK: const U32x2 w = ld_global_v2([[X]] + ({{.*}}) * 1024LL + {{.*}});
// CHECK: [[B]].r[0] = w.r[0]; [[B]].r[1] = w.r[1];
// The A fragment names the decoded registers of both k16 units: slice 1 is
// registers 2 and 3 of each.
// CHECK: FragA_s8 [[A:v[0-9]+]];
// CHECK: [[A]].r[0] = [[S0:v[0-9]+]][0]; [[A]].r[1] = [[S0]][1]; [[A]].r[2] = [[S1:v[0-9]+]][0]; [[A]].r[3] = [[S1]][1];
// CHECK: mma_m16n8k32({{.*}}, [[A]], [[B]]);
// CHECK: FragA_s8 [[A1:v[0-9]+]];
// CHECK: [[A1]].r[0] = [[S0]][2]; [[A1]].r[1] = [[S0]][3]; [[A1]].r[2] = [[S1]][2]; [[A1]].r[3] = [[S1]][3];
// The s32 sums become f32 once, before the warps' partials.
// CHECK: .r[0] = (float)
// Token scales: rows past M read 0.
// CHECK: const long long token = {{.*}} + 2 * (threadIdx.x & 3);
// CHECK: .r[0] = token + 0 < [[M]] ? [[XS]][token + 0] : 0.f;
// CHECK: .r[1] = token + 1 < [[M]] ? [[XS]][token + 1] : 0.f;
// CHECK: .r[3] = {{v[0-9]+}}.r[3] * {{v[0-9]+}}.r[1];
// An f32 y takes the sums as they are.
// CHECK: if (row + 0 < [[M]]) [[Y]][(row + 0) * 256LL + col + 0] = {{v[0-9]+}}.r[0];
func.func @w8a8(%x: tensor<?x1024xsi8>, %xs: tensor<?xf32>, %w: tensor<256x1024xsi8>, %s: tensor<256xf16>) -> tensor<?x256xf32> {
  %y = lb.qmatmul %x x_scales(%xs : tensor<?xf32>), %w, %s quant <granularity = channel, scale = f16>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x1024xsi8>, tensor<256x1024xsi8>, tensor<256xf16>) -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}
