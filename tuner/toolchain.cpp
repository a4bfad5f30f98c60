// The toolchain identity of this build; see CurrentToolchain in include/flashtune/tuner.h.
#include <nvrtc.h>
#include <openssl/evp.h>

#include <map>
#include <string>

#include "flashtune/tuner.h"

namespace flashtune {
namespace detail {
const std::map<std::string, std::string_view>& EmbeddedTemplates();  // generated at build time
}  // namespace detail

ToolchainInfo CurrentToolchain() {
  ToolchainInfo t;
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) == NVRTC_SUCCESS) t.nvrtc_version = std::to_string(major) + "." + std::to_string(minor);
  t.generator_version = FLASHTUNE_VERSION;
  // sha256 over every embedded template, name and text, in name order.
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  for (const auto& [name, text] : detail::EmbeddedTemplates()) {
    EVP_DigestUpdate(ctx, name.data(), name.size() + 1);  // includes the NUL: a separator
    EVP_DigestUpdate(ctx, text.data(), text.size());
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, digest, &len);
  EVP_MD_CTX_free(ctx);
  static const char* kHex = "0123456789abcdef";
  for (unsigned i = 0; i < len; ++i) {
    t.template_hash += kHex[digest[i] >> 4];
    t.template_hash += kHex[digest[i] & 15];
  }
  return t;
}

}  // namespace flashtune
