// flashtune/hash.h — content hashes for cache keys and variant identity.
//
// SHA-256 from OpenSSL (a well-kept implementation, not a hand-written one).
// Thread safety: thread-safe; no shared state.
#pragma once

#include <string>
#include <string_view>

namespace flashtune {

// Returns the SHA-256 of `data` as 64 lower-case hex digits. Never fails: an OpenSSL
// failure (which only happens when the library is broken) yields an empty string.
std::string Sha256Hex(std::string_view data);

}  // namespace flashtune
