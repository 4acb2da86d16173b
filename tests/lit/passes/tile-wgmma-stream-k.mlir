// RUN: lowbit-opt %s --lb-tile | FileCheck %s

// scheduler = stream_k: persistent blocks walk the whole tiles (all but
// the last one or two waves, or every tile), then split the rest along K into one run
// of K tiles a block. The kernel takes the workspace after M.
func.func @sk(%x: tensor<?x192xf16>, %w: tensor<256x192xui4>, %s: tensor<256xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      schedule <family = wgmma, tile = [32, 256, 64], warps = [1, 4], stages = 2, split_k = 1, scheduler = stream_k>
      : (tensor<?x192xf16>, tensor<256x192xui4>, tensor<256xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// CHECK-LABEL: func.func @sk__wgmma_t32x256x64_w1x4_s2_k1_stream_k
// CHECK-SAME: %[[M:[a-z0-9]+]]: index, %[[WS:[a-z0-9]+]]: memref<?xf32>)
// CHECK-SAME: lb.schedule = #lb.schedule<family = wgmma, tile = [32, 256, 64], warps = [1, 4], stages = 2, split_k = 1, scheduler = stream_k>
// The producer. Whole tiles (core::streamKWholeTiles): all of them when
// the last wave is full or at least three-quarters full, else the waves
// before the last full one (so the tail is one to two waves' tiles).
// CHECK: scf.if
// CHECK: %[[TILES:.*]] = arith.muli
// CHECK: %[[P:.*]] = lb.thread_coord grid_x
// CHECK: %[[WAVES:.*]] = arith.divui %[[TILES]], %[[P]]
// CHECK: %[[LEFT:.*]] = arith.remui %[[TILES]], %[[P]]
// CHECK: %[[THREEQUARTERS:.*]] = arith.muli %[[P]], %c3
// CHECK: %[[LEFT4:.*]] = arith.muli %[[LEFT]], %c4
// CHECK: %[[FULLENOUGH:.*]] = arith.cmpi uge, %[[LEFT4]], %[[THREEQUARTERS]]
// CHECK: %[[EVEN:.*]] = arith.cmpi eq, %[[LEFT]]
// CHECK: %[[RUNWHOLE:.*]] = arith.ori %[[EVEN]], %[[FULLENOUGH]]
// CHECK: %[[LESS:.*]] = arith.subi %[[WAVES]]
// CHECK: %[[ANY:.*]] = arith.cmpi ugt, %[[WAVES]]
// CHECK: %[[BEFORE:.*]] = arith.select %[[ANY]], %[[LESS]]
// CHECK: %[[SPLITFROM:.*]] = arith.muli %[[BEFORE]], %[[P]]
// CHECK: %[[WHOLETILES:.*]] = arith.select %[[RUNWHOLE]], %[[TILES]], %[[SPLITFROM]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[WHOLETILES]] step %{{.*}} {
// CHECK: lb.warp_uniform
// CHECK: lb.copy_paired_activations_async
// The tail: U = tail tiles x 3 K tiles; block b runs b U / P .. (b + 1) U / P.
// CHECK: %[[TAIL:.*]] = arith.subi %[[TILES]], %[[WHOLETILES]]
// CHECK: %[[B:.*]] = lb.thread_coord block_x
// CHECK: %[[U:.*]] = arith.muli %[[TAIL]], %c3
// CHECK: %[[BU:.*]] = arith.muli %[[B]], %[[U]]
// CHECK: %[[BEGIN:.*]] = arith.divui %[[BU]], %{{.*}}
// CHECK: %[[END:.*]] = arith.divui %{{.*}}, %{{.*}}
// CHECK: %[[FIRSTPIECE:.*]] = arith.divui %[[BEGIN]], %c3
// CHECK: %[[NONEMPTY:.*]] = arith.cmpi ult, %[[BEGIN]], %[[END]]
// CHECK: %[[PIECES:.*]] = arith.select %[[NONEMPTY]]
// CHECK: scf.for %[[PIECE:.*]] = %{{.*}} to %[[PIECES]] step
// CHECK: %[[TAILTILE:.*]] = arith.addi %[[FIRSTPIECE]], %[[PIECE]]
// CHECK: lb.warp_uniform %[[TAILTILE]]
// A piece: K tiles max(begin, tile's first) .. min(end, tile's end) of it,
// through the ring after the whole tiles' and the run's earlier ones.
// CHECK: arith.maxui %[[BEGIN]]
// CHECK: arith.minui %[[END]]
// CHECK: scf.for
// CHECK: lb.copy_paired_activations_async
// The consumers: the whole tiles store y; a tail piece that does not start
// its tile leaves its partials and sets its flag; the one that does adds
// the later blocks' partials in block order, each after its flag.
// CHECK: } else {
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: scf.for {{.*}} iter_args
// CHECK: lb.mbarrier_arrive
// CHECK-COUNT-4: lb.store_wgmma_accumulator
// CHECK: scf.for
// CHECK: scf.for {{.*}} iter_args
// CHECK: lb.mbarrier_arrive
// CHECK: %[[WRITES:.*]] = arith.cmpi ugt, %{{.*}}, %c0
// CHECK: scf.if %[[WRITES]] {
// CHECK-COUNT-4: lb.store_wgmma_partials %{{.*}}, %[[WS]][%{{.*}}] : vector<16xf32>, memref<?xf32>
// CHECK: lb.release_flag %[[WS]][%{{.*}}] : memref<?xf32>
// CHECK: } else {
// CHECK: scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: lb.wait_flag %[[WS]]
// CHECK-COUNT-4: lb.add_wgmma_partials
// CHECK: scf.yield
// CHECK-COUNT-4: lb.store_wgmma_accumulator
