/* A C host application of liblowbit_runtime: W4A16 (uint4 weights, f16
 * scales per 128 weights along K, f16 activations), N = K = 4096.
 *
 *   lowbit_host_app SYSTEM_DB [USER_DB]
 *
 * Opens the kernel database, plans the problem, packs random weights on the
 * device, runs lowbit_matmul for M = 1, 7, 64 and 300, checks every result
 * against a double-precision CPU reference and prints which kernel served
 * each M and why. Exit status: 0 all matched; 1 a mismatch or an error;
 * 2 usage; 77 no GPU here (skipped).
 */
#include <lowbit/lowbit.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 4096, K = 4096, GROUP = 128, EXIT_SKIPPED = 77 };

/* The tolerance for f16 outputs: ‖y − ref‖ / ‖ref‖ over the checked outputs. */
static const double kTolerance = 2e-3;

static uint64_t rngState = 0x9E3779B97F4A7C15ull;
static uint64_t nextRandom(void) { /* xorshift64* */
  rngState ^= rngState >> 12;
  rngState ^= rngState << 25;
  rngState ^= rngState >> 27;
  return rngState * 0x2545F4914F6CDD1Dull;
}

/* Exact value of an f16 bit pattern. */
static double halfToDouble(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1F;
  int mantissa = bits & 0x3FF;
  double sign = (bits & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0x1F)
    return mantissa ? NAN : sign * INFINITY;
  if (exponent == 0)
    return sign * ldexp(mantissa, -24);
  return sign * ldexp(1024 + mantissa, exponent - 25);
}

/* A random f16 with magnitude in [2^(lowExp-15), 2^(highExp-14)): built from
 * its bits, so host and device see exactly the same value. */
static uint16_t randomHalf(int lowExp, int highExp, int withSign) {
  uint16_t exponent = (uint16_t)(lowExp + (int)(nextRandom() % (uint64_t)(highExp - lowExp + 1)));
  uint16_t bits = (uint16_t)((exponent << 10) | (nextRandom() & 0x3FF));
  if (withSign && (nextRandom() & 1))
    bits |= 0x8000;
  return bits;
}

static int check(lowbit_status status, const char *what) {
  if (status == LOWBIT_STATUS_SUCCESS)
    return 1;
  fprintf(stderr, "%s failed: %s\n  %s\n", what, lowbit_status_string(status),
          lowbit_last_error());
  return 0;
}

static void printChoice(const lowbit_plan *plan, int64_t m) {
  lowbit_choice choice;
  memset(&choice, 0, sizeof choice);
  choice.struct_size = sizeof choice;
  if (!check(lowbit_plan_explain(plan, m, &choice), "lowbit_plan_explain"))
    return;
  char upper[32];
  if (choice.m_hi < 0)
    snprintf(upper, sizeof upper, "inf");
  else
    snprintf(upper, sizeof upper, "%lld", (long long)choice.m_hi);
  printf("  M = %-4lld kernel %s (%s, %s%s), id %.12s, M range [%lld, %s)\n", (long long)m,
         choice.kernel_name, choice.family, choice.arch,
         choice.jit_from_ptx ? ", JIT from PTX" : "", choice.kernel_id,
         (long long)choice.m_lo, upper);
  printf("           tier: %s%s; database %s\n", choice.tier,
         choice.heuristic ? " (no tuning table for this device)" : "", choice.database_path);
}

/* y[row, col] of the reference, from the codes and scales in double. */
static double reference(const uint16_t *x, const uint8_t *codes, const uint16_t *scales,
                        int64_t row, int64_t col) {
  double sum = 0;
  for (int64_t g = 0; g < K / GROUP; ++g) {
    double partial = 0;
    for (int64_t k = g * GROUP; k < (g + 1) * GROUP; ++k)
      partial += halfToDouble(x[row * K + k]) * codes[col * K + k];
    sum += partial * halfToDouble(scales[col * (K / GROUP) + g]);
  }
  return sum;
}

/* Relative error over all outputs (small M) or the first and last rows plus
 * random samples (large M); -1 when an output was left unwritten (NaN). */
static double relativeError(int64_t m, const uint16_t *x, const uint8_t *codes,
                            const uint16_t *scales, const uint16_t *y) {
  double errorSquared = 0, referenceSquared = 0;
  int64_t i, samples = m * N <= 65536 ? m * N : 2 * N + 4096;
  for (i = 0; i < m * N; ++i)
    if (isnan(halfToDouble(y[i])))
      return -1;
  for (i = 0; i < samples; ++i) {
    int64_t row, col;
    if (m * N <= 65536) {
      row = i / N;
      col = i % N;
    } else if (i < 2 * N) {
      row = i < N ? 0 : m - 1;
      col = i % N;
    } else {
      row = (int64_t)(nextRandom() % (uint64_t)m);
      col = (int64_t)(nextRandom() % N);
    }
    double want = reference(x, codes, scales, row, col);
    double got = halfToDouble(y[row * N + col]);
    errorSquared += (got - want) * (got - want);
    referenceSquared += want * want;
  }
  return sqrt(errorSquared / referenceSquared);
}

int main(int argc, char **argv) {
  static const int64_t rowCounts[] = {1, 7, 64, 300};
  enum { MAX_M = 300 };
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s SYSTEM_DB [USER_DB]\n", argv[0]);
    return 2;
  }
  printf("lowbit %s (header %d.%d.%d)\n", lowbit_version_string(), LOWBIT_VERSION_MAJOR,
         LOWBIT_VERSION_MINOR, LOWBIT_VERSION_PATCH);

  lowbit_context_options options;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.system_db_path = argv[1];
  options.user_db_path = argc > 2 ? argv[2] : NULL;
  options.device_ordinal = 0;
  lowbit_context *context = NULL;
  lowbit_status status = lowbit_context_create(&options, &context);
  if (status == LOWBIT_STATUS_NO_DEVICE) {
    printf("skipped: %s\n  %s\n", lowbit_status_string(status), lowbit_last_error());
    return EXIT_SKIPPED;
  }
  if (!check(status, "lowbit_context_create"))
    return 1;

  lowbit_problem problem;
  memset(&problem, 0, sizeof problem);
  problem.struct_size = sizeof problem;
  problem.n = N;
  problem.k = K;
  problem.activation = LOWBIT_DTYPE_F16;
  problem.weight = LOWBIT_WEIGHT_UINT4;
  problem.scale = LOWBIT_DTYPE_F16;
  problem.granularity = LOWBIT_GRANULARITY_GROUP;
  problem.group_size = GROUP;
  problem.zero = LOWBIT_ZERO_NONE;
  lowbit_plan *plan = NULL;
  if (!check(lowbit_plan_create(context, &problem, &plan), "lowbit_plan_create")) {
    lowbit_context_destroy(context);
    return 1;
  }

  size_t weightBytes = 0, scaleBytes = 0, workspaceBytes = 0;
  uint64_t layoutId = 0;
  int ok = check(lowbit_plan_packed_sizes(plan, &weightBytes, &scaleBytes, NULL, &workspaceBytes),
                 "lowbit_plan_packed_sizes") &&
           check(lowbit_plan_layout_id(plan, &layoutId), "lowbit_plan_layout_id");

  /* Host data: codes one per byte, f16 scales in [2^-8, 2^-6), x in ±[2^-5, 2). */
  uint8_t *codes = malloc((size_t)N * K);
  uint16_t *scales = malloc(scaleBytes ? scaleBytes : 1);
  uint16_t *x = malloc((size_t)MAX_M * K * 2);
  uint16_t *y = malloc((size_t)MAX_M * N * 2);
  void *packedDevice = NULL, *scalesDevice = NULL, *xDevice = NULL, *yDevice = NULL;
  if (!codes || !scales || !x || !y) {
    fprintf(stderr, "out of host memory\n");
    ok = 0;
  }
  if (ok) {
    size_t i;
    for (i = 0; i < (size_t)N * K; ++i)
      codes[i] = (uint8_t)(nextRandom() & 15);
    for (i = 0; i < scaleBytes / 2; ++i)
      scales[i] = randomHalf(7, 8, 0);
    ok = check(lowbit_device_alloc(context, weightBytes, &packedDevice), "lowbit_device_alloc") &&
         check(lowbit_device_alloc(context, scaleBytes, &scalesDevice), "lowbit_device_alloc") &&
         check(lowbit_device_alloc(context, (size_t)MAX_M * K * 2, &xDevice),
               "lowbit_device_alloc") &&
         check(lowbit_device_alloc(context, (size_t)MAX_M * N * 2, &yDevice),
               "lowbit_device_alloc") &&
         /* Packing happens once, at load time, not per call. */
         check(lowbit_pack_weights(plan, codes, packedDevice, weightBytes, LOWBIT_MEMORY_DEVICE,
                                   NULL),
               "lowbit_pack_weights") &&
         check(lowbit_memcpy(context, scalesDevice, scales, scaleBytes,
                             LOWBIT_COPY_HOST_TO_DEVICE),
               "lowbit_memcpy");
  }

  lowbit_weights weights;
  memset(&weights, 0, sizeof weights);
  weights.struct_size = sizeof weights;
  weights.data = packedDevice;
  weights.bytes = weightBytes;
  weights.layout_id = layoutId;

  int failures = 0;
  size_t r;
  for (r = 0; ok && r < sizeof rowCounts / sizeof rowCounts[0]; ++r) {
    int64_t m = rowCounts[r], i;
    for (i = 0; i < m * K; ++i)
      x[i] = randomHalf(10, 15, 1);
    ok = check(lowbit_memcpy(context, xDevice, x, (size_t)(m * K * 2), LOWBIT_COPY_HOST_TO_DEVICE),
               "lowbit_memcpy") &&
         /* 0xFF bytes are f16 NaN: an output the kernel forgets stays NaN. */
         check(lowbit_memset(context, yDevice, 0xFF, (size_t)(m * N * 2)), "lowbit_memset") &&
         check(lowbit_matmul(plan, m, xDevice, &weights, scalesDevice, NULL, yDevice, NULL,
                             workspaceBytes, NULL),
               "lowbit_matmul") &&
         check(lowbit_stream_synchronize(context, NULL), "lowbit_stream_synchronize") &&
         check(lowbit_memcpy(context, y, yDevice, (size_t)(m * N * 2),
                             LOWBIT_COPY_DEVICE_TO_HOST),
               "lowbit_memcpy");
    if (!ok)
      break;
    printChoice(plan, m);
    double error = relativeError(m, x, codes, scales, y);
    int good = error >= 0 && error < kTolerance;
    failures += !good;
    if (error < 0)
      printf("           MISMATCH: outputs left unwritten (NaN)\n");
    else
      printf("           relative error %.3g (tolerance %.0e): %s\n", error, kTolerance,
             good ? "ok" : "MISMATCH");
  }

  lowbit_device_free(context, packedDevice);
  lowbit_device_free(context, scalesDevice);
  lowbit_device_free(context, xDevice);
  lowbit_device_free(context, yDevice);
  free(codes);
  free(scales);
  free(x);
  free(y);
  lowbit_plan_destroy(plan);
  lowbit_context_destroy(context);
  if (!ok)
    return 1;
  if (failures) {
    printf("FAILED: %d of %d M values mismatched\n", failures,
           (int)(sizeof rowCounts / sizeof rowCounts[0]));
    return 1;
  }
  printf("all M values match\n");
  return 0;
}
