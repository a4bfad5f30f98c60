// `flashtune db`: inspect and maintain the tuning database.
#include <algorithm>

#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "cli/command.h"
#include "cli/json.h"
#include "cli/options.h"
#include "flashtune/cubin_verify.h"
#include "flashtune/database.h"
#include "flashtune/report.h"
#include "flashtune/space.h"
#include "flashtune/tuner.h"

namespace po = boost::program_options;

namespace flashtune::cli {
namespace {

// A stored winner as `db list --json` and `db show --json` give it.
std::string WinnerJson(const WinnerRow& w) {
  return "{\"variant\":" + JsonString(w.variant_uri) + ",\"median_us\":" + JsonNumber(w.median_us) +
         ",\"tflops\":" + JsonNumber(w.tflops) + ",\"device_id\":" + std::to_string(w.device_id) +
         ",\"toolchain_id\":" + std::to_string(w.toolchain_id) + "}";
}

constexpr const char* kUsage =
    "usage: flashtune db <list|show|export|merge|prune|check|report> [--db FILE] [options]\n"
    "  (flashtune db SUBCOMMAND --help for its options)\n"
    "  list [--json]                 problems with trial counts and winners\n"
    "  show ID | --head-dim D --seqlen-q N [--dtype --causal --batch --seqlen-k --heads-q --heads-kv]\n"
    "                                one problem's trials, ranked (--json: one object)\n"
    "  export --format csv|json [--table trials|winners] [--output FILE]\n"
    "                                every trial (default), or the winners the runtime launches\n"
    "  merge OTHER.db [--no-verify-cubins]\n"
    "                                bring another database's rows in (idempotent; its cubins verified)\n"
    "  prune                         drop trials/winners/cubins of other toolchains\n"
    "  check [--verify-cubins]       integrity check + staleness against this build's toolchain\n"
    "                                (+ every stored cubin recompiled and compared)\n"
    "  report --html FILE            one self-contained HTML page: winners, TFLOP/s heatmaps, failures,\n"
    "                                tuning time (FILE '-' = stdout)\n"
    "  prune/check take --nvrtc-version --generator-version --template-hash to override this build's\n";

// `flashtune db SUB --help`: what SUB does and the options it takes.
const char* SubcommandHelp(const std::string& sub) {
  if (sub == "list")
    return "usage: flashtune db list [--db FILE] [--json]\n"
           "Every problem of the database: its bucket, trial counts, the winner the runtime launches\n"
           "and, when re-timing or the noise rule chose another, the fastest trial.\n"
           "  --db FILE   database (default $FLASHTUNE_DB or ./flashtune.db)\n"
           "  --json      one JSON object: {\"database\", \"problems\": [...], \"winners\"}\n";
  if (sub == "show")
    return "usage: flashtune db show ID [--db FILE] [--json]\n"
           "       flashtune db show --head-dim D --seqlen-q N [--dtype bf16] [--causal 0|1] [--batch B]\n"
           "                         [--seqlen-k N] [--heads-q H] [--heads-kv H] [--db FILE] [--json]\n"
           "One problem's trials, ranked: ok trials by median, then failures, after the winner its tuning\n"
           "stored for each GPU model and toolchain (what the runtime launches: a re-timed finalist, timed\n"
           "at its median re-timing round, so not always rank 1), and the tile each GPU that measured it\n"
           "would launch untuned, whose trials are marked \"(untuned plan)\". The problem is its id (from\n"
           "`db list`) or its shape (defaults: bf16, not causal, B 1, Nk = Nq, Hq = 2048 / D, Hkv = Hq).\n"
           "  --json      one JSON object: {\"problem_id\", \"problem\", \"winners\": [...], \"trials\": [...]}\n"
           "              (a trial's \"untuned_plan\": whether it is its GPU's untuned tile)\n";
  if (sub == "export")
    return "usage: flashtune db export --format csv|json [--table trials|winners] [-o FILE] [--db FILE]\n"
           "Every trial (default; `tune --replay` reads it back) or the winners the runtime launches.\n"
           "  -o, --output FILE   write to FILE instead of stdout\n";
  if (sub == "merge")
    return "usage: flashtune db merge OTHER.db [--db FILE] [--no-verify-cubins]\n"
           "Brings OTHER.db's devices, toolchains, problems, trials, winners and cubins into FILE\n"
           "(idempotent). OTHER.db is only read. Its cubins are code: each is recompiled from its source\n"
           "and compared first; one that differs refuses the merge, one this build cannot check is left out.\n"
           "  --no-verify-cubins   bring the cubins in unverified (only from a database you trust)\n";
  if (sub == "prune")
    return "usage: flashtune db prune [--db FILE] [--nvrtc-version V] [--generator-version V] [--template-hash H]\n"
           "Drops trials, winners and cubins of toolchains other than this build's (or the one given).\n";
  if (sub == "check")
    return "usage: flashtune db check [--db FILE] [--verify-cubins] [--nvrtc-version V] [--generator-version V]\n"
           "                          [--template-hash H]\n"
           "SQLite's integrity check, then counts of trials and winners and those stale against this\n"
           "build's toolchain (or the one given). Exit 1 when the file is damaged.\n"
           "  --verify-cubins   recompile each stored cubin's source and compare the bytes (takes a\n"
           "                    while: one NVRTC compile per cubin); exit 1 on any mismatch\n";
  return "usage: flashtune db report --html FILE [--db FILE]\n"
         "One self-contained HTML page: winners, TFLOP/s heatmaps, failures, tuning time ('-' = stdout).\n";
}

// The runtime's untuned plan (DefaultVariantForGpu) on one GPU that measured a problem.
struct UntunedOn {
  std::string device_name;
  std::string uri;
};
// For each device that measured the problem, by device id; a device whose compute capability
// the arch table does not know has none.
std::map<int64_t, UntunedOn> UntunedPlans(Database& db, const Problem& problem, const std::vector<TrialRow>& rows) {
  std::map<int64_t, UntunedOn> plans;
  auto devices = db.ListDevices();
  if (!devices.ok()) return plans;
  for (const DeviceRow& d : *devices) {
    if (std::none_of(rows.begin(), rows.end(), [&](const TrialRow& r) { return r.device_id == d.id; })) continue;
    auto plan = DefaultVariantForGpu(problem, d.device.cc_major, d.device.cc_minor);
    if (plan.ok()) plans[d.id] = {d.device.name, plan->Uri()};
  }
  return plans;
}

int Fail(const std::string& sub, const Status& s) {
  std::fprintf(stderr, "flashtune db %s: %s\n", sub.c_str(), s.ToString().c_str());
  return s.code() == Code::kInvalidArgument ? kExitUsage : kExitFailure;
}

int RunDb(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fprintf(args.empty() ? stderr : stdout, "%s", kUsage);
    return args.empty() ? kExitUsage : kExitOk;
  }
  const std::string sub = args[0];
  static const char* kSubs[] = {"list", "show", "export", "merge", "prune", "check", "report"};
  bool known = false;
  for (const char* s : kSubs) known |= sub == s;
  if (!known) {
    std::fprintf(stderr, "flashtune db: unknown subcommand '%s'; allowed: list, show, export, merge, prune, check, report\n",
                 sub.c_str());
    return kExitUsage;
  }
  std::string db_path, format, output, html, dtype = "bf16", nvrtc, gen, tpl, table_name = "trials", causal_text = "0";
  int64_t head_dim = 0, batch = 0, seqlen_q = 0, seqlen_k = 0, heads_q = 0, heads_kv = 0;
  std::vector<std::string> positional;
  po::options_description desc("options");
  desc.add_options()
      ("help,h", "show this subcommand's help")
      ("json", "list, show: one JSON object instead of text")
      ("db", po::value(&db_path), "database file")
      ("format", po::value(&format), "csv | json")
      ("table", po::value(&table_name), "export: trials | winners")
      ("output,o", po::value(&output), "write to FILE instead of stdout")
      ("html", po::value(&html), "report: the HTML file to write ('-' = stdout)")
      ("dtype", po::value(&dtype), "") ("head-dim", po::value(&head_dim), "") ("causal", po::value(&causal_text)->implicit_value("1"), "")
      ("batch", po::value(&batch), "") ("seqlen-q", po::value(&seqlen_q), "") ("seqlen-k", po::value(&seqlen_k), "")
      ("heads-q", po::value(&heads_q), "") ("heads-kv", po::value(&heads_kv), "")
      ("nvrtc-version", po::value(&nvrtc), "") ("generator-version", po::value(&gen), "")
      ("template-hash", po::value(&tpl), "")
      ("verify-cubins", "check: recompile every stored cubin's source and compare the bytes")
      ("no-verify-cubins", "merge: bring OTHER.db's cubins in unverified (only from a database you trust)");
  po::variables_map vm;
  // show takes an ID, merge the OTHER.db; no other subcommand takes a word.
  const size_t max_words = sub == "show" || sub == "merge" ? 1 : 0;
  // Before one vocabulary, db show spelled the shape --nq, --nk, --hq, --hkv.
  const std::vector<std::string> renamed =
      RenameDeprecated(std::vector<std::string>(args.begin() + 1, args.end()),
                       {{"nq", "seqlen-q"}, {"nk", "seqlen-k"}, {"hq", "heads-q"}, {"hkv", "heads-kv"}},
                       "flashtune db " + sub);
  if (Status parsed = ParseCommandLine(renamed, desc, &vm, &positional, max_words);
      !parsed.ok()) {
    std::fprintf(stderr, "flashtune db %s: %s\n%s", sub.c_str(), parsed.message().c_str(), kUsage);
    return kExitUsage;
  }
  if (vm.count("help")) {
    std::fputs(SubcommandHelp(sub), stdout);
    return kExitOk;
  }
  const bool json = vm.count("json") > 0;
  if (json && sub != "list" && sub != "show") {
    std::fprintf(stderr, "flashtune db %s: --json is only for 'list' and 'show'%s\n", sub.c_str(),
                 sub == "export" ? " (export takes --format json)" : "");
    return kExitUsage;
  }
  if (vm.count("db") && db_path.empty()) {
    std::fprintf(stderr, "flashtune db %s: --db '': give a file (without --db: $FLASHTUNE_DB, else ./flashtune.db)\n",
                 sub.c_str());
    return kExitUsage;
  }
  if (db_path.empty()) db_path = DefaultDatabasePath();
  ToolchainInfo current = CurrentToolchain();
  if (!nvrtc.empty()) current.nvrtc_version = nvrtc;
  if (!gen.empty()) current.generator_version = gen;
  if (!tpl.empty()) current.template_hash = tpl;

  if (sub == "merge" && positional.size() != 1) {
    std::fprintf(stderr, "flashtune db merge: expected exactly one OTHER.db\n");
    return kExitUsage;
  }
  if (sub != "merge" && sub != "show" && !positional.empty()) {
    std::fprintf(stderr, "flashtune db %s: unexpected argument '%s'\n", sub.c_str(), positional[0].c_str());
    return kExitUsage;
  }
  // The mask is checked before the database is opened: a bad value is bad usage wherever it is.
  auto causal = ParseCausal(causal_text);
  if (!causal.ok()) return Fail(sub, causal.status());
  ExportFormat fmt = ExportFormat::kCsv;
  ExportTable table = ExportTable::kTrials;
  if (sub == "export") {
    auto f = ParseExportFormat(format);
    if (!f.ok()) return Fail(sub, f.status());
    fmt = *f;
    auto t = ParseExportTable(table_name);
    if (!t.ok()) return Fail(sub, t.status());
    table = *t;
  } else if (vm.count("table")) {
    std::fprintf(stderr, "flashtune db %s: --table is only for 'export'\n", sub.c_str());
    return kExitUsage;
  }
  if (sub == "report" && html.empty()) {
    std::fprintf(stderr, "flashtune db report: --html FILE is required (the page to write; '-' = stdout)\n");
    return kExitUsage;
  }
  if (sub != "report" && !html.empty()) {
    std::fprintf(stderr, "flashtune db %s: --html is only for 'report'\n", sub.c_str());
    return kExitUsage;
  }
  const bool writes = sub == "merge" || sub == "prune";
  std::error_code ec;
  const bool target_existed = std::filesystem::exists(db_path, ec);
  if (vm.count("verify-cubins") && sub != "check") {
    std::fprintf(stderr, "flashtune db %s: --verify-cubins is only for 'check' (merge verifies unless "
                         "--no-verify-cubins)\n", sub.c_str());
    return kExitUsage;
  }
  if (vm.count("no-verify-cubins") && sub != "merge") {
    std::fprintf(stderr, "flashtune db %s: --no-verify-cubins is only for 'merge'\n", sub.c_str());
    return kExitUsage;
  }
  // merge: OTHER.db's cubins are code this database's users will run. Each is recompiled from
  // its source and compared; one that does not match refuses the whole merge (the file is not
  // what it claims), one this build cannot check is left out. Done before the target is opened.
  std::vector<CubinRecord> admitted;
  int64_t cubins_unverifiable = 0;
  if (sub == "merge") {
    // The other file first: a merge refused for it must not leave a new, empty target behind.
    auto other = Database::Open(positional[0], Database::OpenOptions{true, 10000});
    if (!other.ok()) return Fail(sub, other.status());
    if (!vm.count("no-verify-cubins")) {
      auto cubins = (*other)->ListCubins();
      if (!cubins.ok()) return Fail(sub, cubins.status());
      const CubinVerifier verifier;
      for (CubinRecord& c : *cubins) {
        auto check = verifier.Verify(c);
        if (!check.ok()) return Fail(sub, check.status());
        if (check->verdict == CubinVerdict::kMismatch)
          return Fail(sub, Status(Code::kCorrupt, "'" + positional[0] + "' holds a cubin for " + check->what +
                                                      " that is not what its source compiles to (" + check->why +
                                                      "): refused, nothing was merged. A database from an untrusted "
                                                      "source is untrusted code."));
        if (check->verdict == CubinVerdict::kVerified)
          admitted.push_back(std::move(c));
        else
          ++cubins_unverifiable;
      }
    }
  }
  // check opens a damaged file to report on it; everything else refuses one (Database::Open).
  auto db = Database::Open(db_path, Database::OpenOptions{!writes, 10000, sub != "check"});
  if (!db.ok()) return Fail(sub, db.status());

  if (sub == "list") {
    auto rows = (*db)->ListProblems();
    if (!rows.ok()) return Fail(sub, rows.status());
    auto winners = (*db)->ListWinners();
    if (!winners.ok()) return Fail(sub, winners.status());
    // The winner is what the runtime launches: the search's fastest trial unless re-timing or
    // the noise rule (an incumbent within noise keeps its place) decided otherwise.
    std::map<int64_t, std::vector<const WinnerRow*>> by_problem;
    for (const WinnerRow& w : *winners) by_problem[w.problem_id].push_back(&w);
    if (json) {
      std::string o = "{\"database\":" + JsonString(db_path) + ",\"problems\":[";
      for (size_t i = 0; i < rows->size(); ++i) {
        const ProblemRow& r = (*rows)[i];
        o += std::string(i ? "," : "") + "{\"id\":" + std::to_string(r.id) + ",\"problem\":" + ProblemJson(r.problem) +
             ",\"bucket\":" + JsonString(r.bucket) + ",\"trials\":" + std::to_string(r.trials) +
             ",\"ok_trials\":" + std::to_string(r.ok_trials) + ",\"winners\":[";
        const auto found = by_problem.find(r.id);
        if (found != by_problem.end())
          for (size_t k = 0; k < found->second.size(); ++k)
            o += std::string(k ? "," : "") + WinnerJson(*found->second[k]);
        o += "],\"fastest\":" +
             (r.best_variant.empty() ? std::string("null")
                                     : "{\"variant\":" + JsonString(r.best_variant) +
                                           ",\"median_us\":" + JsonNumber(r.best_median_us) + "}") +
             "}";
      }
      o += "],\"winners\":" + std::to_string(winners->size()) + "}";
      std::printf("%s\n", o.c_str());
      return kExitOk;
    }
    std::printf("%5s  %-46s %-26s %7s %5s  %-44s %10s  %s\n", "id", "problem", "bucket", "trials", "ok", "winner",
                "median_us", "fastest trial, if another");
    for (const auto& r : *rows) {
      const auto found = by_problem.find(r.id);
      std::string winner = "-", note;
      double winner_us = 0;
      if (found != by_problem.end() && found->second.size() == 1) {
        winner = found->second[0]->variant_uri;
        winner_us = found->second[0]->median_us;
      } else if (found != by_problem.end()) {
        winner = std::to_string(found->second.size()) + " winners (devices/toolchains)";
      }
      if (!r.best_variant.empty() && r.best_variant != winner) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s %.2f", r.best_variant.c_str(), r.best_median_us);
        note = buf;
      }
      std::printf("%5lld  %-46s %-26s %7lld %5lld  %-44s %10.2f%s%s\n", (long long)r.id, r.problem.ToString().c_str(),
                  r.bucket.c_str(), (long long)r.trials, (long long)r.ok_trials, winner.c_str(), winner_us,
                  note.empty() ? "" : "  ", note.c_str());
    }
    std::printf("%zu problem(s), %zu winner(s)\n", rows->size(), winners->size());
    return kExitOk;
  }
  if (sub == "show") {
    int64_t id = 0;
    if (positional.size() == 1) {
      try {
        size_t used = 0;
        id = std::stoll(positional[0], &used);
        if (used != positional[0].size()) throw std::invalid_argument("trailing");
      } catch (...) {
        std::fprintf(stderr, "flashtune db show: '%s' is not a problem id\n", positional[0].c_str());
        return kExitUsage;
      }
    } else if (positional.empty() && vm.count("head-dim") && vm.count("seqlen-q")) {
      auto dt = ParseDType(dtype, "--dtype");
      if (!dt.ok()) return Fail(sub, dt.status());
      Problem p{*dt, int(head_dim), *causal, vm.count("batch") ? batch : 1, seqlen_q,
                vm.count("seqlen-k") ? seqlen_k : seqlen_q, vm.count("heads-q") ? heads_q : 2048 / std::max<int64_t>(head_dim, 1), 0};
      p.heads_kv = vm.count("heads-kv") ? heads_kv : p.heads_q;
      // The same rule as plan and the runtime: a shape that cannot be tuned is bad usage.
      if (Status valid = ValidateProblem(p); !valid.ok())
        return Fail(sub, Status(valid.code(), WithOptionNames(valid.message())));
      auto found = (*db)->FindProblem(p);
      if (!found.ok()) return Fail(sub, found.status());
      id = *found;
    } else {
      std::fprintf(stderr, "flashtune db show: give a problem id, or --head-dim and --seqlen-q (and --dtype, --causal, "
                           "--batch, --seqlen-k, --heads-q, --heads-kv)\n");
      return kExitUsage;
    }
    auto rows = (*db)->TrialsForProblem(id);
    if (!rows.ok()) return Fail(sub, rows.status());
    if (rows->empty()) return Fail(sub, Status(Code::kNotFound, "problem " + std::to_string(id) + " has no trials"));
    // The winners this problem's tuning stored (one per device model and toolchain): what the
    // runtime launches, which is not always rank 1 (the re-timing and the noise rule decide).
    auto all_winners = (*db)->ListWinners();
    if (!all_winners.ok()) return Fail(sub, all_winners.status());
    std::vector<const WinnerRow*> winners;
    for (const WinnerRow& w : *all_winners)
      if (w.problem_id == id) winners.push_back(&w);
    // What each measuring GPU would run untuned: the baseline a winner is worth its tuning against.
    const std::map<int64_t, UntunedOn> untuned = UntunedPlans(**db, (*rows)[0].trial.problem, *rows);
    auto is_untuned = [&](const TrialRow& r) {
      auto it = untuned.find(r.device_id);
      return it != untuned.end() && it->second.uri == r.variant_uri;
    };
    if (json) {
      std::string o = "{\"problem_id\":" + std::to_string(id) + ",\"problem\":" +
                      ProblemJson((*rows)[0].trial.problem) + ",\"winners\":[";
      for (size_t k = 0; k < winners.size(); ++k) o += std::string(k ? "," : "") + WinnerJson(*winners[k]);
      o += "],\"trials\":[";
      int rank = 0;
      for (const auto& r : *rows) {
        const TrialRecord& t = r.trial;
        o += std::string(rank ? "," : "") + "{\"rank\":" + std::to_string(rank + 1) +
             ",\"variant\":" + JsonString(r.variant_uri) + ",\"status\":" + JsonString(r.status_name) +
             ",\"median_us\":" + JsonNumber(t.median_us) + ",\"iqr_us\":" + JsonNumber(t.iqr_us) +
             ",\"tflops\":" + JsonNumber(t.tflops) + ",\"reps\":" + std::to_string(t.reps) +
             ",\"registers\":" + std::to_string(t.registers) + ",\"smem_bytes\":" + std::to_string(t.smem_bytes) +
             ",\"spill_bytes\":" + std::to_string(t.spill_bytes) + ",\"phase\":" + JsonString(t.phase) +
             ",\"device\":" + JsonString(r.device_name) + ",\"untuned_plan\":" + (is_untuned(r) ? "true" : "false") +
             ",\"message\":" + JsonString(t.message) +
             ",\"created_at\":" + JsonString(r.created_at) + "}";
        ++rank;
      }
      std::printf("%s]}\n", o.c_str());
      return kExitOk;
    }
    std::printf("problem %lld: %s\n", (long long)id, (*rows)[0].trial.problem.ToString().c_str());
    for (const WinnerRow* w : winners)
      std::printf("winner: %s %.2f us %.1f TFLOP/s (device %lld, toolchain %lld)\n",
                  w->variant_uri.c_str(), w->median_us, w->tflops, (long long)w->device_id,
                  (long long)w->toolchain_id);
    if (winners.empty()) std::printf("winner: none stored\n");
    for (const auto& [device_id, plan] : untuned)
      std::printf("untuned plan on %s (device %lld): %s\n", plan.device_name.c_str(), (long long)device_id,
                  plan.uri.c_str());
    std::printf("%4s  %-44s %-16s %10s %8s %8s %5s %5s %7s %6s  %s\n", "rank", "variant", "status", "median_us",
                "iqr_us", "TFLOP/s", "reps", "regs", "smem", "phase", "device / message");
    int rank = 0;
    for (const auto& r : *rows) {
      const TrialRecord& t = r.trial;
      std::printf("%4d  %-44s %-16s %10.2f %8.2f %8.1f %5d %5d %7d %6s  %s%s%s%s\n", ++rank, r.variant_uri.c_str(),
                  r.status_name.c_str(), t.median_us, t.iqr_us, t.tflops, t.reps, t.registers, t.smem_bytes,
                  t.phase.c_str(), r.device_name.c_str(), is_untuned(r) ? " (untuned plan)" : "",
                  t.message.empty() ? "" : ": ", t.message.c_str());
    }
    return kExitOk;
  }
  if (sub == "export") {
    auto text = (*db)->Export(fmt, table);
    if (!text.ok()) return Fail(sub, text.status());
    if (output.empty()) {
      std::fwrite(text->data(), 1, text->size(), stdout);
    } else {
      std::ofstream f(output, std::ios::binary);
      f << *text;
      if (!f) return Fail(sub, Status(Code::kIoError, "cannot write '" + output + "'"));
    }
    return kExitOk;
  }
  if (sub == "report") {
    HtmlReportOptions ro;
    ro.current_toolchain = current;
    auto page = RenderHtmlReport(**db, ro);
    if (!page.ok()) return Fail(sub, page.status());
    if (html == "-") {
      std::fwrite(page->data(), 1, page->size(), stdout);
      return kExitOk;
    }
    std::ofstream f(html, std::ios::binary | std::ios::trunc);
    f << *page;
    f.close();
    if (!f) return Fail(sub, Status(Code::kIoError, "cannot write '" + html + "'"));
    std::fprintf(stderr, "wrote %s (%zu bytes)\n", html.c_str(), page->size());
    return kExitOk;
  }
  if (sub == "merge") {
    MergeOptions merge_options;
    if (!vm.count("no-verify-cubins"))
      merge_options.admit_cubin = [&](const CubinRecord& c) {  // exactly the bytes verified above
        return std::any_of(admitted.begin(), admitted.end(), [&](const CubinRecord& a) {
          return a.source_hash == c.source_hash && a.arch == c.arch && a.options == c.options &&
                 a.nvrtc_version == c.nvrtc_version && a.image == c.image;
        });
      };
    auto stats = (*db)->Merge(positional[0], merge_options);
    if (!stats.ok()) {
      db->reset();
      if (!target_existed)  // this merge created it: a failed merge leaves nothing behind
        for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db_path + suffix, ec);
      return Fail(sub, stats.status());
    }
    std::printf("merged '%s': %lld trial(s), %lld winner(s), %lld cubin(s) added%s\n", positional[0].c_str(),
                (long long)stats->trials_added, (long long)stats->winners_added, (long long)stats->cubins_added,
                vm.count("no-verify-cubins") ? " (cubins not verified: --no-verify-cubins)" : ", every one verified");
    if (stats->cubins_left_out > 0)
      std::printf("left out %lld cubin(s) this build cannot verify (another NVRTC, template or options; this build "
                  "would not load them)\n", (long long)stats->cubins_left_out);
    return kExitOk;
  }
  if (sub == "prune") {
    auto stats = (*db)->Prune(current);
    if (!stats.ok()) return Fail(sub, stats.status());
    std::printf("pruned: %lld trial(s), %lld winner(s), %lld cubin(s), %lld toolchain(s) removed\n",
                (long long)stats->trials_removed, (long long)stats->winners_removed,
                (long long)stats->cubins_removed, (long long)stats->toolchains_removed);
    return kExitOk;
  }
  // check
  auto report = (*db)->Check(current);
  if (!report.ok()) return Fail(sub, report.status());
  if (!report->integrity_ok) {
    std::printf("integrity: DAMAGED: %s\n", report->integrity_message.c_str());
    std::fprintf(stderr, "flashtune db check: database '%s' is damaged; flashtune refuses to read or write it. "
                         "Restore a copy, or tune into a new file.\n", db_path.c_str());
    return kExitFailure;
  }
  std::printf("integrity: %s\nschema version: %d\ntrials: %lld (%lld stale)\nwinners: %lld (%lld stale)\n",
              report->integrity_message.c_str(), report->schema_version, (long long)report->trials,
              (long long)report->stale_trials, (long long)report->winners, (long long)report->stale_winners);
  for (const auto& t : report->stale_toolchains) std::printf("stale toolchain: %s\n", t.c_str());
  if (vm.count("verify-cubins")) {
    auto cubins = (*db)->ListCubins();
    if (!cubins.ok()) return Fail(sub, cubins.status());
    const CubinVerifier verifier;
    int64_t verified = 0, mismatched = 0, not_loadable = 0;
    for (const CubinRecord& c : *cubins) {
      auto check = verifier.Verify(c);
      if (!check.ok()) return Fail(sub, check.status());
      if (check->verdict == CubinVerdict::kVerified) {
        ++verified;
      } else if (check->verdict == CubinVerdict::kMismatch) {
        ++mismatched;
        std::printf("cubin MISMATCH: %s: %s\n", check->what.c_str(), check->why.c_str());
      } else {
        ++not_loadable;
      }
    }
    std::printf("cubins: %lld verified, %lld MISMATCH, %lld not loadable by this build (not checked)\n",
                (long long)verified, (long long)mismatched, (long long)not_loadable);
    if (mismatched > 0) {
      std::fprintf(stderr, "flashtune db check: %lld cubin(s) of '%s' are not what their source compiles to: do not "
                           "use this database (a database from an untrusted source is untrusted code)\n",
                   (long long)mismatched, db_path.c_str());
      return kExitFailure;
    }
  }
  return kExitOk;
}

}  // namespace

FT_CLI_COMMAND("db", "inspect and maintain the tuning database (list, show, export, merge, prune, check, report)",
               RunDb);

}  // namespace flashtune::cli
