// jit/cubin_cache.h (private) — the on-disk cubin cache's entry format.
//
// One file per entry, <dir>/<key>.ftcubin:
//   "FTCUBIN\n" "<format version>\n" "<key>\n" "<payload bytes>\n" "<sha256 of payload>\n"
// then the payload: a line of six resource integers, then name, arch, options, log and
// image, each as "<length>\n<bytes>". The checksum makes truncation and bit rot visible.
// Thread safety: entries are written to a unique temp file and renamed into place, so
// concurrent writers and readers of one key see either no entry or a whole one.
#pragma once

#include <string>
#include <vector>

#include "flashtune/compiler.h"
#include "flashtune/status.h"

namespace flashtune::detail {

inline constexpr int kCubinCacheFormatVersion = 1;

// sha256 over length-prefixed fields, so ("ab","c") and ("a","bc") differ.
std::string CubinCacheKey(const std::string& name, const std::string& source,
                          const std::vector<std::string>& options, const std::string& nvrtc_version,
                          const std::string& arch);

std::string CubinCachePath(const std::string& dir, const std::string& key);

// Returns the entry's Cubin (from_cache = true). kNotFound when there is no entry, kCorrupt
// when the file is truncated, altered or belongs to another key/format version.
Result<Cubin> ReadCubinCacheEntry(const std::string& dir, const std::string& key);

// Writes `cubin` under cubin.key, creating `dir` when needed. kIoError on failure.
Status WriteCubinCacheEntry(const std::string& dir, const Cubin& cubin);

}  // namespace flashtune::detail
