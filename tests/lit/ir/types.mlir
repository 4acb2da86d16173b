// RUN: lowbit-opt %s | FileCheck %s
// RUN: lowbit-opt %s | lowbit-opt | FileCheck %s

// CHECK-LABEL: func.func @minifloats
// CHECK-SAME: !lb.float<e2m1, finite>
// CHECK-SAME: !lb.float<e2m3, finite>
// CHECK-SAME: !lb.float<e3m2, finite>
// CHECK-SAME: !lb.float<e4m3, fn>
// CHECK-SAME: !lb.float<e5m2, ieee>
// CHECK-SAME: !lb.float<ue8m0, fn>
// CHECK-SAME: !lb.float<e4m3, bias = 8, fn>
func.func @minifloats(
    %fp4: tensor<8x!lb.float<e2m1, finite>>,
    %fp6a: tensor<8x!lb.float<e2m3, finite>>,
    %fp6b: tensor<8x!lb.float<e3m2, finite>>,
    %fp8a: tensor<8x!lb.float<e4m3, fn>>,
    %fp8b: tensor<8x!lb.float<e5m2, bias = 15, ieee>>,
    %e8m0: tensor<8x!lb.float<ue8m0, fn>>,
    %odd: tensor<8x!lb.float<e4m3, bias = 8, fn>>) {
  return
}

// CHECK-LABEL: func.func @luts
// CHECK-SAME: !lb.lut<2, [-1.000000e+00, -5.000000e-01, 5.000000e-01, 1.000000e+00]>
// CHECK-SAME: !lb.lut<4>
func.func @luts(%a: tensor<4x!lb.lut<2, [-1.0, -0.5, 0.5, 1.0]>>,
                %b: tensor<4x!lb.lut<4>>) {
  return
}
