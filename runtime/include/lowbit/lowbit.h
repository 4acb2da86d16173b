/* lowbit runtime: dispatch tuned low-bit matmul kernels from a C host app.
 *
 *   Y[M, N] = X[M, K] · dequant(W[N, K])ᵀ
 *
 * Flow: lowbit_context_create (device + kernel databases) -> lowbit_plan_create
 * (one problem: formats and N, K; every kernel it may need is loaded here) ->
 * lowbit_pack_weights once per weight matrix -> lowbit_matmul per call, for any
 * M. See README.md, "Using lowbit from a host application".
 *
 * Conventions
 *  - Every call returns a lowbit_status. lowbit_status_string() names it;
 *    lowbit_last_error() gives the detail of the most recent failing call on
 *    the calling thread.
 *  - Handles are opaque. Option and output structs start with `struct_size`:
 *    set it to sizeof(the struct) from the header you compiled against. A
 *    larger size (a newer header) is accepted as long as the fields this
 *    library does not know are zero.
 *  - Device pointers (x, y, scales, zeros, packed weights, workspace) are
 *    CUdeviceptr values cast to void *; `stream` is a CUstream cast to void *
 *    (NULL: the legacy default stream). The stream must belong to the
 *    context's device (the primary context, which the CUDA runtime uses too).
 *  - No call prints, exits or lets a C++ exception escape.
 *
 * The library loads the CUDA driver with dlopen, so a program linked to it
 * starts on a machine without a GPU; lowbit_context_create then returns
 * LOWBIT_STATUS_NO_DEVICE.
 */
#ifndef LOWBIT_LOWBIT_H
#define LOWBIT_LOWBIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define LOWBIT_API
#else
#define LOWBIT_API __attribute__((visibility("default")))
#endif

/* ---- version ---------------------------------------------------------- */

#define LOWBIT_VERSION_MAJOR 0
#define LOWBIT_VERSION_MINOR 1
#define LOWBIT_VERSION_PATCH 0
/* 10000 * major + 100 * minor + patch */
#define LOWBIT_VERSION                                                          \
  (LOWBIT_VERSION_MAJOR * 10000 + LOWBIT_VERSION_MINOR * 100 + LOWBIT_VERSION_PATCH)

/* The version of the library actually loaded, encoded like LOWBIT_VERSION. */
LOWBIT_API uint32_t lowbit_version(void);
/* "0.1.0" */
LOWBIT_API const char *lowbit_version_string(void);

/* ---- status ----------------------------------------------------------- */

typedef enum lowbit_status {
  LOWBIT_STATUS_SUCCESS = 0,
  LOWBIT_STATUS_INVALID_ARGUMENT = 1,  /* NULL handle/pointer, bad enum, bad struct_size */
  LOWBIT_STATUS_INVALID_SHAPE = 2,     /* M <= 0, M too large, N/K/group not servable */
  LOWBIT_STATUS_MISALIGNED = 3,        /* a pointer lacks the alignment the kernels need */
  LOWBIT_STATUS_UNSUPPORTED = 4,       /* valid but not (yet) supported, e.g. a newer field */
  LOWBIT_STATUS_NO_DEVICE = 5,         /* no CUDA driver, no device, or bad ordinal */
  LOWBIT_STATUS_DATABASE_ERROR = 6,    /* a database cannot be opened or read */
  LOWBIT_STATUS_DATABASE_TOO_NEW = 7,  /* a database written by a newer lowbit (schema) */
  LOWBIT_STATUS_UNKNOWN_PROBLEM = 8,   /* no database has kernels for the problem */
  LOWBIT_STATUS_NO_KERNEL = 9,         /* the problem is known, but nothing runs on this device */
  LOWBIT_STATUS_CORRUPT_KERNEL = 10,   /* missing/corrupt cubin or PTX, bad launch data */
  LOWBIT_STATUS_LAYOUT_CONFLICT = 11,  /* the plan's kernels need different weight layouts */
  LOWBIT_STATUS_LAYOUT_MISMATCH = 12,  /* weights packed for another layout (or too small) */
  LOWBIT_STATUS_BUFFER_TOO_SMALL = 13, /* an output or workspace buffer is too small */
  LOWBIT_STATUS_DRIVER_ERROR = 14,     /* a CUDA driver call failed */
  LOWBIT_STATUS_LAUNCH_FAILED = 15,    /* cuLaunchKernel failed */
  LOWBIT_STATUS_OUT_OF_MEMORY = 16,    /* host or device allocation failed */
  LOWBIT_STATUS_INTERNAL_ERROR = 17,   /* a bug in lowbit; please report it */
  LOWBIT_STATUS_FILE_ERROR = 18        /* a file cannot be read or is malformed (GGUF) */
} lowbit_status;

/* A static, one-line description of `status` ("unknown lowbit_status" for a
 * value outside the enum). Never NULL. */
LOWBIT_API const char *lowbit_status_string(lowbit_status status);

/* The detail of the most recent call on this thread that did not succeed,
 * e.g. which pointer was misaligned or why a kernel could not load. Calls that
 * succeed leave it unchanged (so lowbit_matmul's hot path never touches it).
 * "" when no call on this thread has failed. Valid until the next failing
 * call on this thread. Never NULL. */
LOWBIT_API const char *lowbit_last_error(void);

/* ---- problem description ---------------------------------------------- */

/* 0 is never a valid value, so a zero-initialized struct is rejected with a
 * message instead of silently meaning something. */
typedef enum lowbit_dtype {
  LOWBIT_DTYPE_F16 = 1,
  LOWBIT_DTYPE_BF16 = 2,
  LOWBIT_DTYPE_F32 = 3, /* scales and tensor scales only */
  /* Block scales, one byte per group, GROUP granularity and LOWBIT_ZERO_NONE
   * only: */
  LOWBIT_DTYPE_E8M0 = 4, /* OCP MX: 2^(code - 127), 0xFF is NaN; group_size 32 */
  LOWBIT_DTYPE_E4M3 = 5, /* OCP e4m3fn (bias 7, S.1111.111 is NaN, no infinity);
                          * NVFP4's block scale, usually with group_size 16 and
                          * tensor_scale = LOWBIT_DTYPE_F32 */
  /* Two-level scales' codes, one byte per group, with super_block > 0: */
  LOWBIT_DTYPE_U8 = 6, /* 0..255 (also the mins of LOWBIT_ZERO_SUB_VALUE) */
  LOWBIT_DTYPE_S8 = 7  /* -128..127, without zero points */
} lowbit_dtype;

/* Weight codes. Unsigned uintB holds 0..2^B-1; signed intB holds the B-bit
 * two's complement pattern. Minifloats hold the OCP bit pattern (sign,
 * exponent, mantissa); codes that decode to NaN or Inf are refused when
 * packed. Lookup codes index a table: NF4 is QLoRA's NormalFloat table. */
typedef enum lowbit_weight_format {
  LOWBIT_WEIGHT_UINT1 = 1,
  LOWBIT_WEIGHT_UINT2 = 2,
  LOWBIT_WEIGHT_UINT3 = 3,
  LOWBIT_WEIGHT_UINT4 = 4,
  LOWBIT_WEIGHT_UINT5 = 5,
  LOWBIT_WEIGHT_UINT6 = 6,
  LOWBIT_WEIGHT_UINT7 = 7,
  LOWBIT_WEIGHT_UINT8 = 8,
  LOWBIT_WEIGHT_INT1 = 17,
  LOWBIT_WEIGHT_INT2 = 18,
  LOWBIT_WEIGHT_INT3 = 19,
  LOWBIT_WEIGHT_INT4 = 20,
  LOWBIT_WEIGHT_INT5 = 21,
  LOWBIT_WEIGHT_INT6 = 22,
  LOWBIT_WEIGHT_INT7 = 23,
  LOWBIT_WEIGHT_INT8 = 24,
  LOWBIT_WEIGHT_TERNARY = 32, /* {-1, 0, 1} as the 2-bit codes 0, 1, 2 (3 is invalid) */
  LOWBIT_WEIGHT_E2M1 = 48,    /* OCP FP4: ±{0, 0.5, 1, 1.5, 2, 3, 4, 6} */
  LOWBIT_WEIGHT_E4M3 = 49,    /* OCP FP8 e4m3fn (0x7F and 0xFF are NaN) */
  LOWBIT_WEIGHT_E5M2 = 50,    /* OCP FP8 e5m2 (IEEE-style Inf and NaN) */
  LOWBIT_WEIGHT_E2M3 = 51,    /* OCP FP6 e2m3: ±7.5 at most, no Inf or NaN */
  LOWBIT_WEIGHT_E3M2 = 52,    /* OCP FP6 e3m2: ±28 at most, no Inf or NaN */
  LOWBIT_WEIGHT_NF4 = 64,     /* 4-bit codes of the NormalFloat table */
  LOWBIT_WEIGHT_LUT4 = 65,    /* 4-bit codes of the table in lowbit_problem.table */
  LOWBIT_WEIGHT_FLOAT = 66    /* the minifloat in lowbit_problem.weight_float */
} lowbit_weight_format;

/* A minifloat's special encodings (lowbit_float_format.flags, or-ed); none
 * set: every code is a finite number, as in OCP e2m1, e2m3 and e3m2. */
typedef enum lowbit_float_flag {
  LOWBIT_FLOAT_IEEE = 1,         /* all-ones exponent: Inf (mantissa 0) and NaN */
  LOWBIT_FLOAT_NAN_ALL_ONES = 2, /* OCP "fn": only the all-ones code (sign aside) is NaN */
  LOWBIT_FLOAT_UNSIGNED = 4,     /* no sign bit */
  LOWBIT_FLOAT_NO_SUBNORMALS = 8 /* exponent 0 is an ordinary binade: no subnormals, no zero */
} lowbit_float_flag;

/* Any minifloat, by its parameters: a code's value is
 * (-1)^sign · 2^(exponent - bias) · 1.mantissa, with subnormals at exponent
 * 0 unless LOWBIT_FLOAT_NO_SUBNORMALS. The kernels derive its decode from
 * these numbers, so a format without a name of its own (e3m3 with bias 5,
 * say) runs like the named ones. A format equal to a named one (e2m1:
 * 2, 1, 1, 0) is that format. */
typedef struct lowbit_float_format {
  int32_t exponent_bits; /* 1..8 */
  int32_t mantissa_bits; /* 0..23; sign + exponent + mantissa at most 8 for weights */
  int32_t bias;
  uint32_t flags; /* lowbit_float_flag values, or-ed */
} lowbit_float_format;

typedef enum lowbit_granularity {
  LOWBIT_GRANULARITY_TENSOR = 1,  /* one scale: scales[1] */
  LOWBIT_GRANULARITY_CHANNEL = 2, /* one scale per output row: scales[N] */
  LOWBIT_GRANULARITY_GROUP = 3    /* per `group_size` weights along K: scales[N][K / group_size] */
} lowbit_granularity;

typedef enum lowbit_zero_mode {
  LOWBIT_ZERO_NONE = 1,      /* w = q · s */
  LOWBIT_ZERO_SUB_CODE = 2,  /* w = (q - z) · s; z has the scale dtype and layout */
  LOWBIT_ZERO_SUB_VALUE = 3, /* w = q · s - z; z has the scale dtype and layout */
  /* w = (q - z) · s with z an integer code per scale (GPTQ and AWQ zeros), in
   * the scales' layout, packed by lowbit_pack_zeros: uint4 codes 0..15 or
   * uint8 codes 0..255. */
  LOWBIT_ZERO_UINT4_CODES = 4,
  LOWBIT_ZERO_UINT8_CODES = 5
} lowbit_zero_mode;

/* The scales of quantized activations (x = q_x · s_x, f32). */
typedef enum lowbit_activation_scale {
  LOWBIT_ACTIVATION_SCALE_NONE = 0,  /* F16 and BF16 activations */
  LOWBIT_ACTIVATION_SCALE_TOKEN = 1, /* one per row of x: x_scales[M] */
  LOWBIT_ACTIVATION_SCALE_TENSOR = 2 /* one for all of x: x_scales[1] */
} lowbit_activation_scale;

typedef struct lowbit_problem {
  size_t struct_size; /* sizeof(lowbit_problem) */
  int64_t n, k;
  lowbit_dtype activation; /* x (and y): F16 or BF16; or quantized, S8 or E4M3 (below) */
  lowbit_weight_format weight;
  lowbit_dtype scale; /* F16, BF16, F32, E8M0 or E4M3; zeros use the same dtype (or are codes) */
  lowbit_granularity granularity;
  int64_t group_size; /* GROUP only (must divide K); 0 otherwise */
  lowbit_zero_mode zero;
  /* NVFP4's second level: LOWBIT_DTYPE_F32 for one f32 that multiplies every
   * E4M3 block scale (w = q · s_block · s_tensor), 0 for none. The kernels
   * read it from the scales buffer, after the block scales: at byte offset
   * round_up(scale count, 4), as lowbit_matmul describes. (This field took
   * what was padding in earlier headers: zero-initialize the struct.) */
  lowbit_dtype tensor_scale;
  /* LOWBIT_WEIGHT_LUT4 only, NULL otherwise: the 16 values codes 0..15
   * decode to, the table of the kernel set's spec (weight =
   * "lut<4,[v0, ..., v15]>"). Kernels are compiled for their table and
   * found by its values, compared exactly: pass the spec's numbers as
   * doubles. (Added after tensor_scale: a struct_size that ends at
   * tensor_scale, from an older header, is accepted and means no table.) */
  const double *table;
  /* 1: act-order weights (GPTQ's desc_act, g_idx), imported with their
   * columns sorted by group (`lowbit import` writes the permutation), so
   * y = x[:, perm] · dequant(W)ᵀ. The plan gathers x into the workspace
   * before each matmul; perm travels with the packed weights
   * (lowbit_pack_permutation). 0: none. (Added after table: an older
   * struct_size means 0.) */
  int act_order;
  /* Two-level scales (the compact int4 encoding; GGUF k-quants' shape):
   * super_block > 0 makes `scale` a code dtype, LOWBIT_DTYPE_U8 or
   * LOWBIT_DTYPE_S8, one byte per group (GROUP granularity), multiplied by
   * one step of dtype super_step (F16, BF16 or F32) per super_block weights
   * along K (a multiple of group_size that divides K). The scales buffer
   * holds the codes in the scales' order ([N][K / group_size]), then the
   * steps [N][K / super_block] from byte offset round_up(code count, 16).
   * With LOWBIT_ZERO_SUB_VALUE the zeros (mins) are U8 codes laid out the
   * same way with their own steps: w = q · (c_s · d_s) − c_z · d_z.
   * 0 and 0: one level. (Added after act_order: an older struct_size means
   * 0.) */
  int64_t super_block;
  lowbit_dtype super_step;
  /* Quantized activations: with activation LOWBIT_DTYPE_S8 (int8) or
   * LOWBIT_DTYPE_E4M3 (OCP e4m3fn), x holds one-byte codes with f32 scales,
   * activation_scale says how many, and output is y's dtype: F16, BF16 or
   * F32. F16 and BF16 activations leave both 0 (y has their dtype; an
   * output equal to it means the same). S8 runs on the integer tensor
   * cores (8-, 4- and 2-bit integer and ternary weights, per-channel, per-tensor or
   * group scales, (q - z)·s zero points); E4M3 on the fp8 tensor cores of
   * sm_89 and up (E4M3 weights, per-channel or per-tensor scales). Such
   * plans are called through lowbit_matmul_quantized, or with f16 or bf16
   * x through lowbit_matmul_quantizing. (Added after super_step: an older
   * struct_size means 0 and 0.) */
  lowbit_activation_scale activation_scale;
  lowbit_dtype output;
  /* LOWBIT_WEIGHT_FLOAT only, all zero otherwise: the weight codes' format.
   * (Added after output: an older struct_size means all zero.) */
  lowbit_float_format weight_float;
} lowbit_problem;

/* ---- context ---------------------------------------------------------- */

typedef struct lowbit_context lowbit_context;

typedef struct lowbit_context_options {
  size_t struct_size; /* sizeof(lowbit_context_options) */
  /* Read-only kernel database shipped with the application. Required unless
   * user_db_path is given. */
  const char *system_db_path;
  /* Database written by `lowbit tune` on this machine; takes precedence over
   * the system one. Optional (NULL); a path whose file does not exist yet is
   * skipped (nothing has been tuned), any other problem with it is an error.
   * The runtime only reads it. */
  const char *user_db_path;
  int device_ordinal; /* CUDA device, 0 for the first */
} lowbit_context_options;

/* Loads the driver, reads the device's fingerprint, retains its primary
 * context and opens the databases. LOWBIT_STATUS_NO_DEVICE when there is no
 * driver or no such device; LOWBIT_STATUS_DATABASE_TOO_NEW for a database of a
 * newer schema. On failure *out_context is set to NULL. */
LOWBIT_API lowbit_status lowbit_context_create(const lowbit_context_options *options,
                                               lowbit_context **out_context);
/* NULL is a no-op. Plans created from the context stay valid after it. */
LOWBIT_API lowbit_status lowbit_context_destroy(lowbit_context *context);

/* ---- plan ------------------------------------------------------------- */

typedef struct lowbit_plan lowbit_plan;

/* Resolves the problem's kernel for every M range (tuned dispatch table for
 * this device, or the built-in heuristic), checks that they share one weight
 * layout, and loads all of them onto the device: cubins directly, PTX with a
 * one-time JIT when no cubin fits the device. Nothing is compiled or read from
 * a database after this. */
LOWBIT_API lowbit_status lowbit_plan_create(lowbit_context *context, const lowbit_problem *problem,
                                            lowbit_plan **out_plan);
/* NULL is a no-op. Unloads the plan's kernels, so no lowbit_matmul with the
 * plan may be running on any thread, and the work it launched must have
 * finished (synchronize those streams first). */
LOWBIT_API lowbit_status lowbit_plan_destroy(lowbit_plan *plan);

typedef struct lowbit_choice {
  size_t struct_size; /* set by the caller: sizeof(lowbit_choice) */
  /* The strings below are owned by the plan and live as long as it. */
  const char *kernel_name;   /* the __global__ entry point */
  const char *kernel_id;     /* sha256 of the cubin, as in `lowbit db ls` */
  const char *family;        /* "gemv", "mma", ... */
  const char *arch;          /* compiled-for arch, e.g. "sm_90a" */
  int64_t m_lo;              /* the range [m_lo, m_hi) containing the queried M */
  int64_t m_hi;              /* -1: open-ended */
  const char *tier;          /* "exact device", ..., "built-in heuristic" */
  int heuristic;             /* 1 when no tuning table applies to this device */
  int jit_from_ptx;          /* 1 when the kernel was JIT-compiled from PTX at plan creation */
  const char *database_path; /* the database that answered */
  const char *notes;         /* entries skipped and fallbacks taken, one per line; "" if none */
} lowbit_choice;

/* Which kernel serves M, and why. */
LOWBIT_API lowbit_status lowbit_plan_explain(const lowbit_plan *plan, int64_t m,
                                             lowbit_choice *out_choice);

/* Buffer sizes in bytes for the plan's problem. Any pointer may be NULL.
 * weight_bytes covers the permutation an act-order plan packs after the
 * codes (lowbit_pack_permutation). An act-order plan's workspace also
 * depends on M: lowbit_plan_workspace_bytes gives it.
 * scale_bytes includes the tensor scale and the padding before it (see
 * lowbit_matmul). zero_bytes is 0 for LOWBIT_ZERO_NONE. workspace_bytes is what
 * lowbit_matmul needs to run the fastest path at every M: 0 unless a tuned table
 * serves some M with the dense path (a dequant kernel writing the weights into
 * the workspace, then cuBLASLt), which needs N * K activation values (rounded up
 * to 256 bytes) plus 32 MiB for cuBLASLt. */
LOWBIT_API lowbit_status lowbit_plan_packed_sizes(const lowbit_plan *plan, size_t *weight_bytes,
                                                  size_t *scale_bytes, size_t *zero_bytes,
                                                  size_t *workspace_bytes);

/* The workspace lowbit_matmul needs at M: workspace_bytes of
 * lowbit_plan_packed_sizes, plus, for an act-order plan, M · K activation
 * values (rounded up to 256 bytes) for the permuted x, which come first.
 * For a plan with s8 or e4m3 activations: what lowbit_matmul_quantizing needs at M,
 * round_up(M · K, 256) bytes of codes, then round_up(4 · M, 256) bytes of
 * scales per token (256 per tensor); lowbit_matmul_quantized needs none of it. */
LOWBIT_API lowbit_status lowbit_plan_workspace_bytes(const lowbit_plan *plan, int64_t m,
                                                     size_t *out_bytes);
/* The id of the weight layout the plan's kernels read (a 64-bit hash of the
 * layout's description). Packed weights carry it in lowbit_weights so that a
 * plan rejects weights packed for another layout. */
LOWBIT_API lowbit_status lowbit_plan_layout_id(const lowbit_plan *plan, uint64_t *out_layout_id);

/* ---- weights ---------------------------------------------------------- */

typedef enum lowbit_memory {
  LOWBIT_MEMORY_HOST = 1,
  LOWBIT_MEMORY_DEVICE = 2
} lowbit_memory;

/* Permutes weight codes into the plan's layout.
 *  codes:      host memory, row-major [N, K], one code per byte in its low bits
 *              (signed codes in two's complement, not sign-extended). A code
 *              the format does not have (a higher bit set, ternary's 3) is
 *              LOWBIT_STATUS_INVALID_ARGUMENT, never masked.
 *  packed_out: `where` says whether it is host memory or a device pointer
 *              (device: 16-byte aligned); packed_bytes must be at least
 *              lowbit_plan_packed_sizes' weight_bytes.
 *  DEVICE: the codes are packed on the host into a temporary buffer and copied
 *  with cuMemcpyHtoDAsync on `stream`; the call returns after that copy has
 *  finished (it synchronizes `stream`). Not for the hot path. HOST: `stream`
 *  is ignored. */
LOWBIT_API lowbit_status lowbit_pack_weights(const lowbit_plan *plan, const uint8_t *codes,
                                             void *packed_out, size_t packed_bytes,
                                             lowbit_memory where, void *stream);

/* Packs zero codes (LOWBIT_ZERO_UINT4_CODES / UINT8_CODES) as the plan's
 * kernels read them.
 *  zero_codes: host memory, one code per byte in the scales' layout
 *              ([N][K / group_size], [N] per channel, [1] per tensor); `count`
 *              is that many codes. A code too wide for the zero format is an
 *              error (LOWBIT_STATUS_INVALID_ARGUMENT), never masked.
 *  packed_out: at least lowbit_plan_packed_sizes' zero_bytes (uint4: two codes
 *              a byte), host memory or a device pointer as `where` says; the
 *              DEVICE copy is made and finished as in lowbit_pack_weights.
 * Any other zero mode is LOWBIT_STATUS_INVALID_ARGUMENT: its zeros are passed
 * to lowbit_matmul as they are. */
LOWBIT_API lowbit_status lowbit_pack_zeros(const lowbit_plan *plan, const uint8_t *zero_codes,
                                           size_t count, void *packed_out, size_t packed_bytes,
                                           lowbit_memory where, void *stream);

/* Act-order plans only: writes the permutation into the packed weights
 * buffer, after the codes lowbit_pack_weights wrote (which leaves it alone),
 * so lowbit_matmul computes y = x[:, perm] · dequant(W)ᵀ.
 *  permutation: host memory, K int32 values, each column 0..K-1 exactly
 *               once (anything else is LOWBIT_STATUS_INVALID_ARGUMENT).
 *  packed_out:  the whole packed weights buffer (weight_bytes of
 *               lowbit_plan_packed_sizes), host memory or a device pointer
 *               as `where` says; the DEVICE copy is made and finished as in
 *               lowbit_pack_weights. */
LOWBIT_API lowbit_status lowbit_pack_permutation(const lowbit_plan *plan,
                                                 const int32_t *permutation, void *packed_out,
                                                 size_t packed_bytes, lowbit_memory where,
                                                 void *stream);
/* The inverse of lowbit_pack_weights (and lowbit_pack_permutation), on the
 * host: reads the plan's packed weights from `packed` (host memory,
 * packed_bytes of it) and writes the N * K codes, one per byte, row-major,
 * into codes_out (codes_count must be N * K). For an act-order plan, the K
 * int32 entries of the permutation go to permutation_out when it is not
 * NULL. For reference checks, export, and the CPU path of bindings. */
LOWBIT_API lowbit_status lowbit_unpack_weights(const lowbit_plan *plan, const void *packed,
                                               size_t packed_bytes, uint8_t *codes_out,
                                               size_t codes_count, int32_t *permutation_out);

/* Packed weights on the device, as lowbit_matmul takes them. */
typedef struct lowbit_weights {
  size_t struct_size; /* sizeof(lowbit_weights) */
  const void *data;   /* device pointer, 16-byte aligned */
  size_t bytes;       /* size of the buffer at `data` */
  uint64_t layout_id; /* lowbit_plan_layout_id of the plan that packed them */
} lowbit_weights;

/* ---- matmul ----------------------------------------------------------- */

/* y[M, N] = x[M, K] · dequant(w)ᵀ, launched on `stream` (asynchronous).
 *  x, y:    device, row-major, the activation dtype, 16-byte aligned.
 *  scales:  device, the scale dtype, laid out as lowbit_granularity says.
 *           GROUP scales are 16-byte aligned (kernels load a row's scales
 *           of a K chunk as one vector); CHANNEL and TENSOR scales are
 *           aligned to the scale dtype's size. With a tensor scale, the
 *           block scales (count = N · K / group_size bytes) are followed by
 *           zero padding to the next multiple of 4 bytes and then the f32
 *           tensor scale (lowbit_plan_packed_sizes' scale_bytes in all).
 *           The kernels multiply each block scale by it; it is never folded
 *           into the scales.
 *  zeros:   device, like scales (zero codes: as lowbit_pack_zeros packed
 *           them, any alignment); required when the problem has a zero mode,
 *           NULL otherwise.
 *  workspace: device, 16-byte aligned, lowbit_plan_workspace_bytes(m): an
 *           act-order plan's gathered x first (required), then what the
 *           dense path needs (lowbit_plan_packed_sizes' workspace_bytes). With less (or NULL), M that the dense path
 *           serves run on the plan's nearest other kernel instead (the plan's
 *           notes name it); only a plan whose every kernel is the dense path
 *           returns LOWBIT_STATUS_BUFFER_TOO_SMALL. The dense path overwrites
 *           the workspace, so calls on different streams need their own.
 * The hot path: no allocation, no synchronization, no compilation and no
 * database access; just a range lookup and cuLaunchKernel (the dense path:
 * two launches, its kernel and cublasLtMatmul; act-order: the gather of x
 * first). Safe to call from
 * several threads at once with one plan, and under CUDA graph capture. */
LOWBIT_API lowbit_status lowbit_matmul(const lowbit_plan *plan, int64_t m, const void *x,
                                       const lowbit_weights *w, const void *scales,
                                       const void *zeros, void *y, void *workspace,
                                       size_t workspace_bytes, void *stream);

/* lowbit_matmul for a problem with quantized activations (activation
 * LOWBIT_DTYPE_S8 or LOWBIT_DTYPE_E4M3): y = (x_scales · x) · dequant(w)ᵀ.
 *  x:        device, row-major [M, K], one byte per element, 16-byte aligned.
 *  x_scales: device, f32, 4-byte aligned: M of them (one per row of x) for
 *            LOWBIT_ACTIVATION_SCALE_TOKEN, one for
 *            LOWBIT_ACTIVATION_SCALE_TENSOR.
 *            Required.
 *  y:        device, row-major [M, N] of the problem's output dtype (F16,
 *            BF16: 2 bytes; F32: 4 bytes), 16-byte aligned.
 * The rest as lowbit_matmul, with its hot-path guarantees. These problems
 * never take the dense path, and act_order = 1 with them is
 * LOWBIT_STATUS_UNSUPPORTED at lowbit_plan_create. lowbit_matmul on such
 * a plan, or this on a plan for F16 or BF16 activations, is
 * LOWBIT_STATUS_INVALID_ARGUMENT, naming the entry point the plan takes. */
LOWBIT_API lowbit_status lowbit_matmul_quantized(const lowbit_plan *plan, int64_t m, const void *x,
                                                 const void *x_scales, const lowbit_weights *w,
                                                 const void *scales, const void *zeros, void *y,
                                                 void *workspace, size_t workspace_bytes,
                                                 void *stream);

/* lowbit_matmul_quantized for callers that hold f16 or bf16 activations, on
 * a plan for LOWBIT_DTYPE_S8 or LOWBIT_DTYPE_E4M3 activations: lowbit
 * quantizes x on the device, then multiplies, y = (s_x · q_x) · dequant(w)ᵀ
 * with qmax = 127 (S8) or 448 (E4M3, its largest finite value) and
 *   s_x = absmax / qmax (f32; 1 when absmax is 0, so zeros give zero codes),
 *   S8:   q_x = clamp(round_to_nearest_even(x / s_x), -127, 127),
 *   E4M3: q_x = the E4M3FN value nearest x / s_x, ties to an even code,
 *         magnitudes past 448 saturating to 448 (cvt.rn.satfinite),
 * absmax = max |x| over each row of x (LOWBIT_ACTIVATION_SCALE_TOKEN) or over
 * all of it (LOWBIT_ACTIVATION_SCALE_TENSOR), every step in f32 as written
 * (non-finite x gives unspecified codes).
 *  x:         device, row-major [M, K] of x_dtype, LOWBIT_DTYPE_F16 or
 *             LOWBIT_DTYPE_BF16, 16-byte aligned.
 *  workspace: device, 16-byte aligned, at least lowbit_plan_workspace_bytes(m)
 *             (LOWBIT_STATUS_BUFFER_TOO_SMALL with less, or NULL). It receives
 *             q_x [M, K] (a byte each) at its start and, at byte
 *             round_up(M · K, 256), the f32 scales: M of them per token; per
 *             tensor the one scale, then a word the quantizer uses. Calls on
 *             different streams need their own.
 *  y, w, scales, zeros: as lowbit_matmul_quantized.
 * On `stream`, in order: per token, one quantize kernel; per tensor, a 4-byte
 * cuMemsetD32Async of that word, a kernel reducing max |x| into it, and the
 * quantize kernel; then the plan's matmul kernel. No allocation or host
 * synchronization, so it is safe under CUDA graph capture, with the hot-path
 * guarantees of lowbit_matmul. Errors: LOWBIT_STATUS_INVALID_ARGUMENT for a
 * plan with f16 or bf16 activations (naming lowbit_matmul), an x_dtype other
 * than F16 or BF16, or a NULL x, y, w or scales; LOWBIT_STATUS_MISALIGNED,
 * LOWBIT_STATUS_INVALID_SHAPE and launch failures as lowbit_matmul. */
LOWBIT_API lowbit_status lowbit_matmul_quantizing(const lowbit_plan *plan, int64_t m,
                                                  const void *x, lowbit_dtype x_dtype,
                                                  const lowbit_weights *w, const void *scales,
                                                  const void *zeros, void *y, void *workspace,
                                                  size_t workspace_bytes, void *stream);

/* ---- GGUF files ---------------------------------------------------------- */
/* llama.cpp's model files, read as `lowbit import gguf` reads them, for a host
 * app that serves a GGUF model directly: open the file, find a layer, load
 * it, then lowbit_plan_create(problem), lowbit_pack_weights(codes), and copy
 * the scales (and zeros) to the device for lowbit_matmul. The k-quants stay
 * in their stored bytes per weight (two-level scales: sub-scale codes and
 * their steps), nothing is widened to f16 scales. No device is needed.
 *
 * The file is untrusted: every count, length, shape and offset is checked
 * against its bytes; a malformed or truncated file is LOWBIT_STATUS_FILE_ERROR
 * with the field and tensor in lowbit_last_error(). */

typedef struct lowbit_gguf lowbit_gguf;             /* an open file (mapped, read-only) */
typedef struct lowbit_gguf_layer lowbit_gguf_layer; /* one tensor, converted */

/* Maps and parses the file's header, metadata and tensor directory (GGUF
 * versions 2 and 3). On failure *out_file is NULL. */
LOWBIT_API lowbit_status lowbit_gguf_open(const char *path, lowbit_gguf **out_file);
/* NULL is a no-op. Layers loaded from the file stay valid after it. */
LOWBIT_API lowbit_status lowbit_gguf_close(lowbit_gguf *file);
LOWBIT_API lowbit_status lowbit_gguf_tensor_count(const lowbit_gguf *file, size_t *out_count);

typedef struct lowbit_gguf_tensor {
  size_t struct_size; /* set by the caller: sizeof(lowbit_gguf_tensor) */
  /* The strings below are owned by the file and live as long as it. */
  const char *name;      /* as stored, e.g. "blk.0.ffn_up.weight" */
  const char *ggml_type; /* "q4_K", "f32", ... */
  int64_t n;             /* rows: ne[1] · ne[2] · ... (1 for a vector) */
  int64_t k;             /* ne[0], the contiguous dimension */
  int quantized;         /* 1: a quantized matrix */
  int readable;          /* 1: lowbit_gguf_load_layer reads it */
  const char *reason;    /* why not, when readable is 0; "" otherwise */
} lowbit_gguf_tensor;

/* The tensor at `index` (0 .. count - 1, in the file's order). */
LOWBIT_API lowbit_status lowbit_gguf_tensor_info(const lowbit_gguf *file, size_t index,
                                                 lowbit_gguf_tensor *out_tensor);
/* The index of the tensor named `name`; LOWBIT_STATUS_INVALID_ARGUMENT when
 * there is none. */
LOWBIT_API lowbit_status lowbit_gguf_find_tensor(const lowbit_gguf *file, const char *name,
                                                 size_t *out_index);

/* Converts a readable tensor into the buffers lowbit_matmul takes, for
 * `activation` LOWBIT_DTYPE_F16 or LOWBIT_DTYPE_BF16. Every weight keeps its
 * value exactly (a block whose d is Inf or NaN is LOWBIT_STATUS_FILE_ERROR).
 * Host memory: about N · K bytes of codes plus the scales. */
LOWBIT_API lowbit_status lowbit_gguf_load_layer(const lowbit_gguf *file, size_t index,
                                                lowbit_dtype activation,
                                                lowbit_gguf_layer **out_layer);
/* NULL is a no-op. */
LOWBIT_API lowbit_status lowbit_gguf_layer_destroy(lowbit_gguf_layer *layer);

typedef struct lowbit_gguf_layer_data {
  size_t struct_size; /* set by the caller: sizeof(lowbit_gguf_layer_data) */
  /* The pointers below are owned by the layer and live as long as it. */
  /* lowbit_plan_create's input: the problem `lowbit import gguf` writes into
   * spec.toml for this tensor, so a kernel set compiled from that spec
   * serves it. */
  lowbit_problem problem;
  const uint8_t *codes; /* N · K codes, one a byte, row-major: lowbit_pack_weights' input */
  size_t code_count;
  const void *scales; /* lowbit_matmul's scales, byte for byte: copy them to the device */
  size_t scale_bytes; /* lowbit_plan_packed_sizes' scale_bytes */
  /* lowbit_matmul's zeros, byte for byte (the mins of a k-quant: codes,
   * then their steps), or, for LOWBIT_ZERO_UINT4_CODES / UINT8_CODES, one
   * code a byte for lowbit_pack_zeros. NULL and 0 without zero points. */
  const void *zeros;
  size_t zero_bytes;
  const char *notes; /* what the conversion kept or changed, one per line */
} lowbit_gguf_layer_data;

LOWBIT_API lowbit_status lowbit_gguf_layer_data_get(const lowbit_gguf_layer *layer,
                                                    lowbit_gguf_layer_data *out_data);

/* ---- device memory conveniences ---------------------------------------- */
/* For programs without their own CUDA allocator (examples, tests, tools). An
 * inference engine passes its own device pointers instead. All act on the
 * context's device and are synchronous. */

typedef enum lowbit_copy_kind {
  LOWBIT_COPY_HOST_TO_DEVICE = 1,
  LOWBIT_COPY_DEVICE_TO_HOST = 2,
  LOWBIT_COPY_DEVICE_TO_DEVICE = 3
} lowbit_copy_kind;

/* cuMemAlloc (256-byte aligned). *out_pointer is NULL on failure. */
LOWBIT_API lowbit_status lowbit_device_alloc(lowbit_context *context, size_t bytes,
                                             void **out_pointer);
/* NULL is a no-op. */
LOWBIT_API lowbit_status lowbit_device_free(lowbit_context *context, void *pointer);
LOWBIT_API lowbit_status lowbit_memcpy(lowbit_context *context, void *destination,
                                       const void *source, size_t bytes, lowbit_copy_kind kind);
/* Sets every byte to `value` (e.g. 0xFF poisons f16/bf16 outputs with NaN). */
LOWBIT_API lowbit_status lowbit_memset(lowbit_context *context, void *destination,
                                       unsigned char value, size_t bytes);
/* Waits for all work on `stream` (NULL: the legacy default stream). */
LOWBIT_API lowbit_status lowbit_stream_synchronize(lowbit_context *context, void *stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOWBIT_LOWBIT_H */
