// Hopper (sm_90a) PTX wrappers shared by the wgmma templates (hopper_fwd.cuh, hopper_bwd.cuh):
// mbarriers, TMA loads and stores, named barriers, and the wgmma instructions with their
// shared-memory descriptors. Included inside namespace ft after the including template has
// defined kBf16 (the 16-bit input type: bf16, else fp16) and the u32 / u64 typedefs; no state.
// Wgmma<N>::ss and ::rs read K-major shared operands (rs: B MN-major); ::ss_mn reads both
// A and B MN-major ("transposed"), as a GEMM whose operands are stored [k][m] and [k][n] needs.
#ifndef FT_HOPPER_CUH_
#define FT_HOPPER_CUH_
// ---- mbarrier -------------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// `count` arrivals at once (on behalf of threads that will not arrive themselves).
__device__ __forceinline__ void mbar_arrive_count(u32 bar, u32 count) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Waits until the phase with parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
  u32 done;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (!done);
}

// ---- TMA ------------------------------------------------------------------------------------
__device__ __forceinline__ void tma_load_4d(u32 dst, const ft_abi::TensorMap* map, int c0, int c1, int c2, int c3, u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n"
      ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar) : "memory");
}
__device__ __forceinline__ void tma_store_4d(const ft_abi::TensorMap* map, u32 src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3, %4}], [%5];\n"
               ::"l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src) : "memory");
}
__device__ __forceinline__ void tma_store_commit_and_wait_read() {
  asm volatile("cp.async.bulk.commit_group;\n cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
// The two halves of tma_store_commit_and_wait_read, for a thread that has other work between
// issuing its stores and needing their source buffer back.
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
__device__ __forceinline__ void prefetch_tensormap(const ft_abi::TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void st_shared_f32(u32 addr, float v) {
  asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(addr), "f"(v) : "memory");
}
__device__ __forceinline__ float ld_shared_f32(u32 addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void st_shared_s32(u32 addr, int v) {
  asm volatile("st.shared.s32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ int ld_shared_s32(u32 addr) {
  int v;
  asm volatile("ld.shared.s32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// ---- wgmma ----------------------------------------------------------------------------------
// Shared-memory matrix descriptor, 128-byte swizzle: start address, leading and stride byte
// offsets (all in 16-byte units), layout type 1 in bits 62-63. Buffers are 1024-byte aligned,
// so the base-offset field stays 0.
__device__ __forceinline__ u64 make_desc(u32 addr, u32 leading_bytes, u32 stride_bytes) {
  return (u64)((addr & 0x3FFFF) >> 4) | ((u64)(leading_bytes >> 4) << 16) | ((u64)(stride_bytes >> 4) << 32) |
         (1ull << 62);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Ties accumulator registers to this point so the compiler neither reads them before a
// wgmma wait nor moves their updates across it.
template <int R>
__device__ __forceinline__ void fence_regs(float (&r)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// Wgmma<N>::ss: d[64 x N] (+)= A[64 x 16] * B[16 x N], A and B from shared memory (K-major).
// Wgmma<N>::rs: the same with A from registers and B MN-major (transposed) in shared memory.
// d is this thread's N/2 fp32 accumulators in the wgmma register layout.
template <int N>
struct Wgmma;

#define FT_OPS8(d, b) \
  "+f"(d[b + 0]), "+f"(d[b + 1]), "+f"(d[b + 2]), "+f"(d[b + 3]), "+f"(d[b + 4]), "+f"(d[b + 5]), "+f"(d[b + 6]), "+f"(d[b + 7])
#define FT_WGMMA_SS_ASM(N, REGS, OPS, I0, I1, I2, TY) FT_WGMMA_SS_ASM_T(N, REGS, OPS, I0, I1, I2, TY, "0, 0")
#define FT_WGMMA_SS_ASM_T(N, REGS, OPS, I0, I1, I2, TY, TRANS)                                               \
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %" I2 ", 0;\n wgmma.mma_async.sync.aligned.m64n" #N       \
               "k16.f32." TY "." TY " {" REGS "}, %" I0 ", %" I1 ", p, 1, 1, " TRANS ";\n}\n"               \
               : OPS(d) : "l"(desc_a), "l"(desc_b), "r"(scale_d))
#define FT_WGMMA_RS_ASM(N, REGS, OPS, I0, I1, I2, I3, I4, I5, TY)                                             \
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %" I5 ", 0;\n wgmma.mma_async.sync.aligned.m64n" #N       \
               "k16.f32." TY "." TY " {" REGS "}, {%" I0 ", %" I1 ", %" I2 ", %" I3 "}, %" I4 ", p, 1, 1, 1;\n}\n" \
               : OPS(d) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d))
#define FT_DEFINE_WGMMA(N, REGS, OPS, I0, I1, I2, I3, I4, I5)                                                \
  template <>                                                                                               \
  struct Wgmma<N> {                                                                                         \
    static __device__ __forceinline__ void ss(float (&d)[N / 2], u64 desc_a, u64 desc_b, int scale_d) {     \
      if constexpr (kBf16) FT_WGMMA_SS_ASM(N, REGS, OPS, I0, I1, I2, "bf16");                               \
      else FT_WGMMA_SS_ASM(N, REGS, OPS, I0, I1, I2, "f16");                                                \
    }                                                                                                       \
    static __device__ __forceinline__ void ss_mn(float (&d)[N / 2], u64 desc_a, u64 desc_b, int scale_d) {  \
      if constexpr (kBf16) FT_WGMMA_SS_ASM_T(N, REGS, OPS, I0, I1, I2, "bf16", "1, 1");                     \
      else FT_WGMMA_SS_ASM_T(N, REGS, OPS, I0, I1, I2, "f16", "1, 1");                                      \
    }                                                                                                       \
    static __device__ __forceinline__ void rs(float (&d)[N / 2], const u32 (&a)[4], u64 desc_b, int scale_d) { \
      if constexpr (kBf16) FT_WGMMA_RS_ASM(N, REGS, OPS, I0, I1, I2, I3, I4, I5, "bf16");                   \
      else FT_WGMMA_RS_ASM(N, REGS, OPS, I0, I1, I2, I3, I4, I5, "f16");                                    \
    }                                                                                                       \
  };
// Operand lists "%0,...,%(N/2-1)" and the matching "+f" accumulators, N = 16 ... 256.
#define FT_REGS_8 "%0,%1,%2,%3,%4,%5,%6,%7"
#define FT_REGS_16 FT_REGS_8 "," "%8,%9,%10,%11,%12,%13,%14,%15"
#define FT_REGS_24 FT_REGS_16 "," "%16,%17,%18,%19,%20,%21,%22,%23"
#define FT_REGS_32 FT_REGS_24 "," "%24,%25,%26,%27,%28,%29,%30,%31"
#define FT_REGS_40 FT_REGS_32 "," "%32,%33,%34,%35,%36,%37,%38,%39"
#define FT_REGS_48 FT_REGS_40 "," "%40,%41,%42,%43,%44,%45,%46,%47"
#define FT_REGS_56 FT_REGS_48 "," "%48,%49,%50,%51,%52,%53,%54,%55"
#define FT_REGS_64 FT_REGS_56 "," "%56,%57,%58,%59,%60,%61,%62,%63"
#define FT_REGS_72 FT_REGS_64 "," "%64,%65,%66,%67,%68,%69,%70,%71"
#define FT_REGS_80 FT_REGS_72 "," "%72,%73,%74,%75,%76,%77,%78,%79"
#define FT_REGS_88 FT_REGS_80 "," "%80,%81,%82,%83,%84,%85,%86,%87"
#define FT_REGS_96 FT_REGS_88 "," "%88,%89,%90,%91,%92,%93,%94,%95"
#define FT_REGS_104 FT_REGS_96 "," "%96,%97,%98,%99,%100,%101,%102,%103"
#define FT_REGS_112 FT_REGS_104 "," "%104,%105,%106,%107,%108,%109,%110,%111"
#define FT_REGS_120 FT_REGS_112 "," "%112,%113,%114,%115,%116,%117,%118,%119"
#define FT_REGS_128 FT_REGS_120 "," "%120,%121,%122,%123,%124,%125,%126,%127"
#define FT_OPS_8(d) FT_OPS8(d, 0)
#define FT_OPS_16(d) FT_OPS_8(d), FT_OPS8(d, 8)
#define FT_OPS_24(d) FT_OPS_16(d), FT_OPS8(d, 16)
#define FT_OPS_32(d) FT_OPS_24(d), FT_OPS8(d, 24)
#define FT_OPS_40(d) FT_OPS_32(d), FT_OPS8(d, 32)
#define FT_OPS_48(d) FT_OPS_40(d), FT_OPS8(d, 40)
#define FT_OPS_56(d) FT_OPS_48(d), FT_OPS8(d, 48)
#define FT_OPS_64(d) FT_OPS_56(d), FT_OPS8(d, 56)
#define FT_OPS_72(d) FT_OPS_64(d), FT_OPS8(d, 64)
#define FT_OPS_80(d) FT_OPS_72(d), FT_OPS8(d, 72)
#define FT_OPS_88(d) FT_OPS_80(d), FT_OPS8(d, 80)
#define FT_OPS_96(d) FT_OPS_88(d), FT_OPS8(d, 88)
#define FT_OPS_104(d) FT_OPS_96(d), FT_OPS8(d, 96)
#define FT_OPS_112(d) FT_OPS_104(d), FT_OPS8(d, 104)
#define FT_OPS_120(d) FT_OPS_112(d), FT_OPS8(d, 112)
#define FT_OPS_128(d) FT_OPS_120(d), FT_OPS8(d, 120)
FT_DEFINE_WGMMA(16, FT_REGS_8, FT_OPS_8, "8", "9", "10", "11", "12", "13")
FT_DEFINE_WGMMA(32, FT_REGS_16, FT_OPS_16, "16", "17", "18", "19", "20", "21")
FT_DEFINE_WGMMA(48, FT_REGS_24, FT_OPS_24, "24", "25", "26", "27", "28", "29")
FT_DEFINE_WGMMA(64, FT_REGS_32, FT_OPS_32, "32", "33", "34", "35", "36", "37")
FT_DEFINE_WGMMA(80, FT_REGS_40, FT_OPS_40, "40", "41", "42", "43", "44", "45")
FT_DEFINE_WGMMA(96, FT_REGS_48, FT_OPS_48, "48", "49", "50", "51", "52", "53")
FT_DEFINE_WGMMA(112, FT_REGS_56, FT_OPS_56, "56", "57", "58", "59", "60", "61")
FT_DEFINE_WGMMA(128, FT_REGS_64, FT_OPS_64, "64", "65", "66", "67", "68", "69")
FT_DEFINE_WGMMA(144, FT_REGS_72, FT_OPS_72, "72", "73", "74", "75", "76", "77")
FT_DEFINE_WGMMA(160, FT_REGS_80, FT_OPS_80, "80", "81", "82", "83", "84", "85")
FT_DEFINE_WGMMA(176, FT_REGS_88, FT_OPS_88, "88", "89", "90", "91", "92", "93")
FT_DEFINE_WGMMA(192, FT_REGS_96, FT_OPS_96, "96", "97", "98", "99", "100", "101")
FT_DEFINE_WGMMA(208, FT_REGS_104, FT_OPS_104, "104", "105", "106", "107", "108", "109")
FT_DEFINE_WGMMA(224, FT_REGS_112, FT_OPS_112, "112", "113", "114", "115", "116", "117")
FT_DEFINE_WGMMA(240, FT_REGS_120, FT_OPS_120, "120", "121", "122", "123", "124", "125")
FT_DEFINE_WGMMA(256, FT_REGS_128, FT_OPS_128, "128", "129", "130", "131", "132", "133")

#endif  // FT_HOPPER_CUH_
