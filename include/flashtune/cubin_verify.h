// flashtune/cubin_verify.h — checks that a cubin stored in a tuning database is what its
// recorded source compiles to.
//
// A tuning database carries cubins that the runtime loads and runs: it is code, like a shared
// library, and a database from an untrusted source is untrusted code. NVRTC output is
// byte-identical for the same source, arch and options, so a stored cubin is verified by
// regenerating the source with this build's generator (the variant whose source has the
// recorded sha256), compiling it again with no cache, and comparing the images byte for byte.
//
// The runtime looks cubins up by the sha256 of the source this build generates and by this
// build's NVRTC version, so only cubins with such a key can ever be loaded by this build; the
// others (another NVRTC, another template, extra options) cannot be verified here and are
// reported as such (kNotLoadable), not as verified.
//
// Thread safety: CubinVerifier is immutable after construction; Verify may be called from
// several threads (the Compiler is thread-safe).
#pragma once

#include <map>
#include <string>

#include "flashtune/compiler.h"
#include "flashtune/database.h"
#include "flashtune/variant.h"

namespace flashtune {

enum class CubinVerdict {
  kVerified,     // recompiling its source gives the same bytes
  kMismatch,     // it does not: tampered with, or corrupted
  kNotLoadable,  // no source of this build, or another NVRTC / options: this build never loads it
};

struct CubinCheck {
  CubinVerdict verdict = CubinVerdict::kNotLoadable;
  std::string what;  // "fa2_fwd_bf16_d64_br128_bc64_w4_s2_full sm_90a" or the source hash
  std::string why;   // for kMismatch and kNotLoadable
};

class CubinVerifier {
 public:
  // Maps every variant this build can generate (all classes, no shared-memory limit) to its
  // source hash. Compiles without the on-disk cache: a cached cubin is not evidence.
  CubinVerifier();

  // kVerified, kMismatch or kNotLoadable; an error Status only when the check itself could not
  // run (NVRTC failed to compile a source this build generates).
  Result<CubinCheck> Verify(const CubinRecord& cubin) const;

 private:
  std::map<std::string, Variant> by_source_hash_;
  Compiler compiler_;
};

}  // namespace flashtune
