/* flashtune/flashtune.h — the C ABI of the flashtune runtime, for C, Python (ctypes), Rust.
 *
 * The same runtime as flashtune/runtime.h behind an opaque handle: open a runtime on a tuning
 * database, ask what it would launch (ft_plan), launch attention on the caller's stream
 * (ft_forward), and its backward pass (ft_backward: dq, dk, dv into caller-owned memory, with a
 * workspace sized by ft_backward_workspace_bytes). Every function returns an int status: 0 (FT_OK) on success, else one of the
 * FT_* codes below, with a message for the calling thread in ft_last_error().
 *
 * Layout (FA-2's): q [B, Nq, Hq, D], k/v [B, Nk, Hkv, D], o like q, lse [B, Hq, Nq] fp32.
 * Strides are in elements: {batch, seq, head}; the last dim is contiguous.
 *
 * Thread safety: an ft_runtime may be shared by many threads (ft_forward and ft_plan are
 * thread-safe); ft_runtime_close must not race with other calls on the same handle.
 * ft_last_error is per thread. Plain C99.
 */
#ifndef FLASHTUNE_FLASHTUNE_H_
#define FLASHTUNE_FLASHTUNE_H_

#include <stdint.h>

#include "flashtune/export.h"

FLASHTUNE_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* Status codes; the same order as flashtune::Code. */
enum {
  FT_OK = 0,
  FT_INVALID_ARGUMENT = 1,
  FT_NOT_FOUND = 2,
  FT_COMPILE_ERROR = 3,
  FT_NO_DRIVER = 4,
  FT_NO_DEVICE = 5,
  FT_DRIVER_ERROR = 6,
  FT_OUT_OF_RESOURCES = 7,
  FT_WRONG_RESULT = 8,
  FT_FAULT = 9,
  FT_TIMEOUT = 10,
  FT_DATABASE_ERROR = 11,
  FT_CORRUPT = 12,
  FT_IO_ERROR = 13,
  FT_UNSUPPORTED = 14,
  FT_INTERNAL = 15
};

/* Element types. Zero is deliberately not a dtype, so a zero-filled struct is rejected. */
enum { FT_DTYPE_F16 = 1, FT_DTYPE_BF16 = 2 };

/* Where a plan came from. */
enum { FT_PLAN_EXACT = 0, FT_PLAN_NEAREST = 1, FT_PLAN_HEURISTIC = 2 };

typedef struct ft_runtime ft_runtime;

typedef struct ft_problem {
  int dtype;     /* FT_DTYPE_* */
  int head_dim;  /* 32, 64, 96, 128, 160, 192, 224, 256 */
  int causal;    /* 0 or 1 */
  int64_t batch;
  int64_t seqlen_q;
  int64_t seqlen_k;
  int64_t heads_q;
  int64_t heads_kv;
} ft_problem;

typedef struct ft_forward_args {
  ft_problem problem;
  float softmax_scale; /* 0: 1/sqrt(head_dim) */
  const void* q;       /* device pointers */
  const void* k;
  const void* v;
  void* o;
  float* lse;          /* may be NULL: the log-sum-exp is not written */
  int64_t q_strides[3]; /* {batch, seq, head}, in elements */
  int64_t k_strides[3];
  int64_t v_strides[3];
  int64_t o_strides[3];
} ft_forward_args;

/* A backward call: the forward call's arguments (o and lse as the forward wrote them; lse is
 * required), the gradient of o, the gradients to write, and the workspace. */
typedef struct ft_backward_args {
  ft_forward_args forward;
  const void* d_o;        /* like o */
  void* dq;               /* like q */
  void* dk;               /* like k (summed over each K/V head's query heads) */
  void* dv;               /* like v */
  int64_t d_o_strides[3]; /* {batch, seq, head}, in elements */
  int64_t dq_strides[3];
  int64_t dk_strides[3];
  int64_t dv_strides[3];
  void* workspace;        /* device memory, 256-byte aligned, >= ft_backward_workspace_bytes */
  int64_t workspace_bytes;
  int deterministic;      /* 1: bit-identical dq, dk, dv on every run (slower); 0 or 1 */
} ft_backward_args;

typedef struct ft_plan_info {
  char variant_uri[128]; /* "fa2_fwd_bf16_d128_br128_bc64_w4_s2_full" */
  int source;            /* FT_PLAN_* */
  char source_name[16];  /* "exact" / "nearest" / "heuristic" */
  char bucket[64];       /* the problem's bucket */
  char tuned_bucket[64]; /* the winner's bucket, "" for heuristic */
  double tuned_median_us;/* the winner's measured median, 0 when unknown */
  /* The variant's query tile (its family's first parameter), key tile (second), warps per
   * block and K/V pipeline stages ("s"; 0 when the family has none). */
  int block_m, block_n, warps, stages;
  char why[1024];        /* one sentence, truncated to fit */
  char family[32];       /* the kernel family, "fa2_fwd" */
} ft_plan_info;

/* Opens a runtime on the tuning database at db_path (NULL or "": $FLASHTUNE_DB, else
 * ./flashtune.db). A missing file or a machine without a GPU is not an error. On success
 * stores the handle in *out and returns FT_OK; on failure *out is set to NULL (when out is not
 * NULL). Warnings (e.g. an untuned GPU) go to stderr. */
int ft_runtime_open(const char* db_path, ft_runtime** out);

/* Releases the runtime and the kernels it loaded. NULL is ignored. */
void ft_runtime_close(ft_runtime* runtime);

/* Launches attention on `stream` (a CUstream / cudaStream_t of the calling thread's current
 * context, NULL = the legacy default stream). No allocation, no synchronisation: capturable
 * into a CUDA graph once warm. FT_INVALID_ARGUMENT naming the argument launches nothing. */
int ft_forward(ft_runtime* runtime, const ft_forward_args* args, void* stream);

/* What ft_forward would launch for `problem`, and why, into *out. */
int ft_plan(ft_runtime* runtime, const ft_problem* problem, ft_plan_info* out);

/* Device workspace bytes an ft_backward call of `problem` needs, into *out. */
int ft_backward_workspace_bytes(const ft_problem* problem, int64_t* out);

/* The backward pass on `stream` (a CUstream; NULL = the legacy default stream): dq, dk, dv.
 * Allocates nothing and never synchronises (CUDA-graph capturable once warmed up). */
int ft_backward(ft_runtime* runtime, const ft_backward_args* args, void* stream);

/* What ft_backward would launch for `problem`, and why, into *out. block_m and block_n report
 * the family's first two parameters: for fa2_bwd, keys per block and queries per step. */
int ft_plan_backward(ft_runtime* runtime, const ft_problem* problem, ft_plan_info* out);

/* The calling thread's last error message ("" when the last call succeeded). Valid until the
 * thread's next flashtune call. */
const char* ft_last_error(void);

/* "ok", "invalid_argument", ... ; "unknown" for a value that is not a status. */
const char* ft_status_name(int status);

/* "0.1.0". */
const char* ft_version(void);

#ifdef __cplusplus
}
#endif
FLASHTUNE_API_END

#endif /* FLASHTUNE_FLASHTUNE_H_ */
