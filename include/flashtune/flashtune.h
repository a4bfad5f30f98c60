/* flashtune/flashtune.h — the C ABI of the flashtune runtime, for C, Python (ctypes), Rust.
 *
 * The same runtime as flashtune/runtime.h behind an opaque handle: open a runtime on a tuning
 * database, ask what it would launch (ft_plan), launch attention on the caller's stream
 * (ft_forward, or ft_forward_ex for decode, paged K/V caches and packed variable-length batches),
 * and its backward pass (ft_backward: dq, dk, dv into caller-owned memory, with a workspace sized
 * by ft_backward_workspace_bytes). Every function returns an int status: 0 (FT_OK) on success, else one of the
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

/* How q/k/v are laid out (ft_attention_args.layout); flashtune/forward_args.h has the details. */
enum { FT_LAYOUT_DENSE = 0, FT_LAYOUT_PAGED = 1, FT_LAYOUT_VARLEN = 2 };

/* Where a plan came from. */
enum { FT_PLAN_EXACT = 0, FT_PLAN_NEAREST = 1, FT_PLAN_HEURISTIC = 2, FT_PLAN_NEIGHBOUR = 3 };

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

/* The arguments of ft_forward_ex: every layout, decode's workspace, versioned.
 * struct_size first: set it to sizeof(ft_attention_args). Later versions only append fields,
 * so a caller built against this header keeps working with a newer library (which treats the
 * missing fields as zero); a struct_size the library does not know is FT_INVALID_ARGUMENT.
 * Zero-fill the struct (memset) before setting fields. */
typedef struct ft_attention_args {
  uint32_t struct_size;  /* sizeof(ft_attention_args) */
  int layout;            /* FT_LAYOUT_*; problem.seqlen_k (and seqlen_q for varlen) are maxima */
  ft_problem problem;
  float softmax_scale;   /* 0: 1/sqrt(head_dim) */
  const void* q;         /* device pointers */
  const void* k;         /* paged: the page pool [num_blocks, block_size, Hkv, D] */
  const void* v;
  void* o;
  float* lse;            /* may be NULL; [B, Hq, Nq] (varlen: [Hq, total_q]) */
  int64_t q_strides[3];  /* {batch, seq, head} in elements; paged k/v: {block, seq, head};
                            varlen: batch must be 0 */
  int64_t k_strides[3];
  int64_t v_strides[3];
  int64_t o_strides[3];
  const int32_t* seqlens_k;     /* [B]: keys per sequence; paged: required; dense: optional */
  const int32_t* block_table;   /* paged: [B, block_table_stride] page indexes */
  int64_t block_table_stride;   /* paged: >= max_blocks_per_seq */
  int64_t max_blocks_per_seq;   /* paged: table columns a sequence may use */
  int64_t num_blocks;           /* paged: pages in the pools */
  int32_t block_size;           /* paged: keys per page, a power of two in [1, 256] */
  const int32_t* cu_seqlens_q;  /* varlen: [B + 1] row offsets into q/o; paged: NULL, or packed
                                   queries (q/o [total_q, Hq, D], batch strides 0, lse [Hq, total_q]) */
  const int32_t* cu_seqlens_k;  /* varlen: [B + 1] row offsets into k/v */
  int64_t total_q;              /* varlen, and paged with cu_seqlens_q: rows of q/o */
  int64_t total_k;              /* varlen: rows of k/v */
  void* workspace;              /* device, 16-byte aligned, ft_workspace_size bytes (may be NULL when 0) */
  int64_t workspace_bytes;
  /* Version 2. Varlen or paged with cu_seqlens_q, a mixed prefill + decode batch whose decode
   * sequences come first: sequences [0, decode_seqs) have at most decode_max_seqlen_q (1..16)
   * queries each and run on the decode kernel, the rest on a prefill kernel (two launches).
   * 0: one launch. */
  int64_t decode_seqs;
  int64_t decode_max_seqlen_q;
} ft_attention_args;

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
  void* workspace;        /* device memory, 16-byte aligned, >= ft_backward_workspace_bytes */
  int64_t workspace_bytes;
  int deterministic;      /* 1: bit-identical dq, dk, dv on every run (slower); 0 or 1 */
} ft_backward_args;

typedef struct ft_plan_info {
  char variant_uri[128]; /* "fa2_fwd_bf16_d128_br128_bc64_w4_s2_full" */
  int source;            /* FT_PLAN_* */
  char source_name[16];  /* "exact" / "nearest" / "heuristic" / "neighbour" */
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

/* ft_runtime_options.online_tuning: 0 (what zero-filling gives) follows the environment,
 * FLASHTUNE_ONLINE_TUNE=1; the others say so explicitly. */
enum { FT_ONLINE_TUNING_FROM_ENV = 0, FT_ONLINE_TUNING_ON = 1, FT_ONLINE_TUNING_OFF = 2 };

/* What ft_runtime_open_ex takes. struct_size first: set it to sizeof(ft_runtime_options).
 * Later versions only append fields; a struct_size the library does not know is
 * FT_INVALID_ARGUMENT. */
typedef struct ft_runtime_options {
  uint32_t struct_size;          /* sizeof(ft_runtime_options) */
  const char* db_path;           /* NULL or "": $FLASHTUNE_DB, else ./flashtune.db */
  /* Online tuning (flashtune/runtime.h): an untuned bucket runs its best guess while a
   * background `flashtune tune` process tunes it; later calls launch the winner. */
  int online_tuning;             /* FT_ONLINE_TUNING_* */
  const char* online_tuning_cli; /* NULL or "": $FLASHTUNE_CLI, else next to the library, else $PATH */
  int online_tuning_budget;      /* measurements per bucket; 0: 16 */
  int online_tuning_timeout_s;   /* a worker is killed after this; 0: 300 */
} ft_runtime_options;

/* ft_runtime_open with options. options NULL is FT_INVALID_ARGUMENT, as are negative budgets
 * and time limits and an online_tuning outside FT_ONLINE_TUNING_*. */
int ft_runtime_open_ex(const ft_runtime_options* options, ft_runtime** out);

/* Releases the runtime and the kernels it loaded (and stops its online tuning, killing a
 * running worker). NULL is ignored. */
void ft_runtime_close(ft_runtime* runtime);

/* Launches attention on `stream` (a CUstream / cudaStream_t of the calling thread's current
 * context, NULL = the legacy default stream). No allocation, no synchronisation: capturable
 * into a CUDA graph once warm. FT_INVALID_ARGUMENT naming the argument launches nothing. */
int ft_forward(ft_runtime* runtime, const ft_forward_args* args, void* stream);

/* ft_forward for every layout (dense, paged, varlen) and for decode (few query rows), whose
 * split-key kernels write partials into args->workspace (a varlen or paged prefill on sm_90a
 * keeps its tile counter there; without the workspace, or in a small call, it runs on the static
 * tile order). Calls that may run at once, on different streams, each need a workspace of their own.
 * Same contract as ft_forward: nothing is launched on bad input, no allocation, no
 * synchronisation, capturable once warm. */
int ft_forward_ex(ft_runtime* runtime, const ft_attention_args* args, void* stream);

/* Workspace bytes ft_forward_ex needs for args' problem and layout (pointers are not read) on
 * the runtime's planning device, into *bytes. Stable across calls of the same problem, so
 * allocate once (e.g. before capturing a CUDA graph). 0 means none is needed. */
int ft_workspace_size(ft_runtime* runtime, const ft_attention_args* args, int64_t* bytes);

/* What ft_forward would launch for `problem`, and why, into *out. */
int ft_plan(ft_runtime* runtime, const ft_problem* problem, ft_plan_info* out);

/* What ft_forward_ex would launch for these args, and why, into *out (pointers are not read,
 * as for ft_workspace_size; which are null is: a dense call with seqlens_k, or strides TMA
 * cannot describe, may fall back to another family, and the plan then names it and says why).
 * A paged call has buckets of its own (the bucket ends in "/paged"); a varlen call plans its
 * dense shape's. A mixed call (varlen or paged, decode_seqs > 0
 * and more than 16 queries) launches two plans: FT_INVALID_ARGUMENT; ask for each part (its
 * decode part is a call of decode_seqs sequences of decode_max_seqlen_q queries). */
int ft_plan_ex(ft_runtime* runtime, const ft_attention_args* args, ft_plan_info* out);

/* Checks args (as ft_forward_ex does) and then host copies of the device tables it reads, which
 * ft_forward_ex cannot see: page indexes in [0, num_blocks), lengths in [0, seqlen_k], offsets
 * starting at 0, non-decreasing, within the longest sequences and ending at the totals, a mixed
 * batch's decode sequences within decode_max_seqlen_q queries. Host pointers: block_table
 * (batch * block_table_stride entries) and seqlens_k (batch) for a paged call, seqlens_k for a
 * dense call with lengths, cu_seqlens_q and cu_seqlens_k (batch + 1 each) for varlen; NULL for
 * those the layout does not read. FT_INVALID_ARGUMENT names the first bad entry. Launches
 * nothing and needs no runtime: a debugging aid, or a check for tables already on the host. */
int ft_check_tables(const ft_attention_args* args, const int32_t* block_table, const int32_t* seqlens_k,
                    const int32_t* cu_seqlens_q, const int32_t* cu_seqlens_k);

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
