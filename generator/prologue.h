// generator/prologue.h — the constexpr prologue a family prepends to its template: a comment
// naming the variant, FT_CONFIG_PROVIDED, FT_KERNEL_NAME (the variant URI, the extern "C"
// entry), `namespace ft_config { constexpr ... }` and `#line 1 "<template>"` so compile errors
// point into the template. Every family writes its prologue through this one builder.
//
// Thread safety: a value type used by one thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace flashtune::detail {

class PrologueBuilder {
 public:
  explicit PrologueBuilder(const std::string& uri) {
    text_ = "// flashtune generated prologue for " + uri + "\n#define FT_CONFIG_PROVIDED 1\n#define FT_KERNEL_NAME " +
            uri + "\nnamespace ft_config {\n";
  }
  PrologueBuilder& Bool(std::string_view name, bool value, std::string_view comment = {}) {
    text_ += "constexpr bool " + std::string(name) + " = " + (value ? "true" : "false") + ";" +
             (comment.empty() ? "" : "  // " + std::string(comment)) + "\n";
    return *this;
  }
  PrologueBuilder& Int(std::string_view name, int64_t value) {
    text_ += "constexpr int " + std::string(name) + " = " + std::to_string(value) + ";\n";
    return *this;
  }
  // Closes the namespace and sets the line counter to the template's first line.
  std::string Finish(std::string_view template_name) {
    return text_ + "}  // namespace ft_config\n#line 1 \"" + std::string(template_name) + "\"\n";
  }

 private:
  std::string text_;
};

}  // namespace flashtune::detail
