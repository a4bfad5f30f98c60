/* Compiled as C99 by tests/runtime/c_abi_test.cpp and linked against libflashtune.so: the C
 * header is plain C and the shared library exports the ABI. Prints the plan; exit 0 when the
 * error paths behave. usage: c_abi_check <missing-db-path> */
#include <stdio.h>
#include <string.h>

#include "flashtune/flashtune.h"

int main(int argc, char** argv) {
  ft_runtime* rt = NULL;
  ft_problem p;
  ft_plan_info info;
  ft_forward_args args;
  if (argc < 2) return 2;
  if (ft_runtime_open(argv[1], NULL) != FT_INVALID_ARGUMENT) return 10;
  if (strstr(ft_last_error(), "out") == NULL) return 11;
  if (ft_runtime_open(argv[1], &rt) != FT_OK || rt == NULL) return 12;
  if (ft_last_error()[0] != '\0') return 13;
  memset(&p, 0, sizeof p);
  if (ft_plan(rt, &p, &info) != FT_INVALID_ARGUMENT) return 14;
  if (strstr(ft_last_error(), "dtype") == NULL) return 15;
  p.dtype = FT_DTYPE_BF16;
  p.head_dim = 64;
  p.batch = 2;
  p.seqlen_q = p.seqlen_k = 256;
  p.heads_q = p.heads_kv = 4;
  if (ft_plan(rt, &p, &info) != FT_OK) return 16;
  memset(&args, 0, sizeof args);
  args.problem = p;
  if (ft_forward(rt, &args, NULL) != FT_INVALID_ARGUMENT) return 17; /* q is NULL */
  if (strstr(ft_last_error(), "q") == NULL) return 18;
  if (strcmp(ft_status_name(FT_COMPILE_ERROR), "compile_error") != 0) return 19;
  printf("%s %s %s\n", info.variant_uri, info.source_name, ft_version());
  ft_runtime_close(rt);
  ft_runtime_close(NULL);
  return 0;
}
