// cli/options.h — how every `flashtune` subcommand reads its command line, so that they agree.
//
// Contract of ParseCommandLine:
//   * A word that belongs to no option is refused ("flashtune plan … extra"), unless the
//     subcommand takes that many positional words (`max_words`). Boost would silently drop it,
//     and a dropped word is a setting the user believes they made.
//   * An option declared with a value must get one ("--head-dim" alone is an error).
//   * An option declared with an implicit value (--causal) may be given bare, meaning its
//     implicit value; a word right after it is always taken as its value, so "--causal 0" is
//     "--causal=0", never "--causal" plus a stray "0". The value is then parsed strictly by the
//     subcommand (ParseCausal).
//   * po::notify runs (required options, typed values) unless --help was given.
// Errors are kInvalidArgument with a message that names the option or the word.
//
// Thread safety: free functions without shared state; safe from any thread.
#pragma once

#include <boost/program_options.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "flashtune/status.h"

namespace flashtune::cli {

// Parses `args` against `desc` into `*vm`. Positional words go to `*words` (at most
// `max_words` of them; `words` may be null when the subcommand takes none).
Status ParseCommandLine(const std::vector<std::string>& args, const boost::program_options::options_description& desc,
                        boost::program_options::variables_map* vm, std::vector<std::string>* words = nullptr,
                        size_t max_words = 0);

// One vocabulary for shapes (singular for one shape, plural for lists, the same names in
// plan, bench, db show, tune and problem-set files): an old spelling of an option is rewritten
// to its new name ("--nq 512" and "--nq=512" → "--seqlen-q …") with one line on stderr,
// "flashtune db show: --nq is deprecated; use --seqlen-q", once per old name.
std::vector<std::string> RenameDeprecated(const std::vector<std::string>& args,
                                          const std::vector<std::pair<std::string, std::string>>& old_to_new,
                                          const std::string& command);

// The mask of one shape: "1"/"true" causal, "0"/"false" not; anything else is
// kInvalidArgument "<option> 'x' is not allowed; allowed: 0, 1, true, false".
Result<bool> ParseCausal(std::string_view text, std::string_view option = "--causal");

// A shape error of the library (ValidateProblem: "batch (100000) must be in [1, 65535] …")
// with its fields named as the options of plan, bench and db show ("--batch (100000) …").
std::string WithOptionNames(std::string message);

// The help text of --causal, shared so every subcommand documents it alike.
inline constexpr const char* kCausalHelp = "causal mask (bottom-right aligned): 0, 1, true or false; bare --causal means 1 "
                                           "(default 0)";

}  // namespace flashtune::cli
