// The kernel templates embedded at build time by cmake/embed_templates.cmake (the definition
// is generated into the build tree). Private to the library.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace flashtune::detail {

// File name ("fa2_fwd.cuh") -> byte-exact text of every templates/*.cuh.
const std::map<std::string, std::string_view>& EmbeddedTemplates();

}  // namespace flashtune::detail
