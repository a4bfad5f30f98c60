// Command-line parsing shared by the subcommands; see cli/options.h.
#include "cli/options.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <utility>

namespace flashtune::cli {

namespace po = boost::program_options;

namespace {

bool LooksLikeOption(const std::string& word) {
  // "-1" and "-.5" are (bad) values, not options.
  return word.size() > 1 && word[0] == '-' && !std::isdigit(static_cast<unsigned char>(word[1])) && word[1] != '.';
}

// "--causal 0" → "--causal=0" for options with an implicit value: boost would otherwise take
// "--causal" alone and leave "0" as a positional word.
std::vector<std::string> JoinImplicitValues(const std::vector<std::string>& args, const po::options_description& desc) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {  // everything after is positional
      out.insert(out.end(), args.begin() + i, args.end());
      break;
    }
    if (a.rfind("--", 0) == 0 && a.find('=') == std::string::npos && i + 1 < args.size() &&
        !LooksLikeOption(args[i + 1])) {
      const po::option_description* d = desc.find_nothrow(a.substr(2), false);
      if (d != nullptr && d->semantic()->min_tokens() == 0 && d->semantic()->max_tokens() == 1) {
        out.push_back(a + "=" + args[++i]);
        continue;
      }
    }
    out.push_back(a);
  }
  return out;
}

}  // namespace

Status ParseCommandLine(const std::vector<std::string>& args, const po::options_description& desc,
                        po::variables_map* vm, std::vector<std::string>* words, size_t max_words) {
  try {
    // No guessing: "--seqlen" must not silently become "--seqlens" (or another option).
    const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::parsed_options parsed =
        po::command_line_parser(JoinImplicitValues(args, desc)).options(desc).style(style).run();
    std::vector<std::string> positional;
    for (const po::option& o : parsed.options)
      if (o.string_key.empty())
        for (const std::string& w : o.original_tokens) positional.push_back(w);
    if (positional.size() > max_words) {
      const std::string& stray = positional[max_words];
      return Status(Code::kInvalidArgument,
                    "unexpected argument '" + stray + "'" +
                        (max_words == 0 ? std::string(": this command takes only --options")
                                        : "; at most " + std::to_string(max_words) + " word(s) besides --options"));
    }
    po::store(parsed, *vm);
    if (!vm->count("help")) po::notify(*vm);
    if (words != nullptr) *words = std::move(positional);
  } catch (const po::error& e) {
    return Status(Code::kInvalidArgument, e.what());
  }
  return Status::Ok();
}

std::vector<std::string> RenameDeprecated(const std::vector<std::string>& args,
                                          const std::vector<std::pair<std::string, std::string>>& old_to_new,
                                          const std::string& command) {
  std::vector<std::string> out;
  std::vector<std::string> noticed;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--") {  // everything after is positional
      out.insert(out.end(), args.begin() + i, args.end());
      break;
    }
    for (const auto& [old_name, new_name] : old_to_new) {
      const std::string flag = "--" + old_name;
      if (a == flag || a.rfind(flag + "=", 0) == 0) {
        if (std::find(noticed.begin(), noticed.end(), old_name) == noticed.end()) {
          std::fprintf(stderr, "%s: %s is deprecated; use --%s\n", command.c_str(), flag.c_str(), new_name.c_str());
          noticed.push_back(old_name);
        }
        a = "--" + new_name + a.substr(flag.size());
        break;
      }
    }
    out.push_back(a);
  }
  return out;
}

std::string WithOptionNames(std::string message) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"head_dim", "--head-dim"}, {"seqlen_q", "--seqlen-q"}, {"seqlen_k", "--seqlen-k"},
      {"heads_q", "--heads-q"},   {"heads_kv", "--heads-kv"}, {"batch (", "--batch ("}};
  for (const auto& [field, option] : kNames)
    for (size_t at = message.find(field); at != std::string::npos; at = message.find(field, at + 1))
      if (at < 2 || message.compare(at - 2, 2, "--") != 0) message.replace(at, std::strlen(field), option);
  return message;
}

Result<bool> ParseCausal(std::string_view text, std::string_view option) {
  if (text == "1" || text == "true") return true;
  if (text == "0" || text == "false") return false;
  std::string message(option);
  message += " '";
  message += text;
  message += "' is not allowed; allowed: 0, 1, true, false";
  return Status(Code::kInvalidArgument, message);
}

}  // namespace flashtune::cli
