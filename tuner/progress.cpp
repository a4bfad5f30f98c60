// Console progress for tuning runs; see include/flashtune/tuner.h.
#include <chrono>
#include <cstdio>

#include "flashtune/tuner.h"

namespace flashtune {

namespace {

std::string Duration(double s) {
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", int(s) / 60, int(s) % 60);
  else std::snprintf(buf, sizeof buf, "%dh%02dm", int(s) / 3600, (int(s) % 3600) / 60);
  return buf;
}

class Console final : public ProgressSink {
 public:
  Console(std::FILE* out, bool tty) : out_(out), tty_(tty), start_(std::chrono::steady_clock::now()) {}

  void OnStart(size_t problems, size_t devices) override {
    total_ = problems;
    std::fprintf(out_, "tuning %zu problem(s) on %zu device(s)\n", problems, devices);
  }
  void OnProblemStart(size_t index, const Problem& p, const std::string& device, size_t candidates) override {
    (void)index;
    current_ = p.ToString();
    if (!tty_) std::fprintf(out_, "[%zu/%zu] %s on %s: %zu candidates\n", done_ + 1, total_, current_.c_str(),
                            device.c_str(), candidates);
  }
  void OnCandidate(size_t index, size_t done, size_t total, const CandidateResult& r, double best_us) override {
    (void)index;
    frac_ = total ? double(done) / double(total) : 1;
    if (tty_) {
      double elapsed = Elapsed();
      double progress = (double(done_) + frac_) / double(total_ ? total_ : 1);
      std::string eta = progress > 0 ? Duration(elapsed / progress - elapsed) : "?";
      const int width = 24;
      int filled = int(progress * width);
      std::fprintf(out_, "\r\033[K[%.*s%*s] problem %zu/%zu  candidate %zu/%zu  best %.1f us  ETA %s  %s",
                   filled, "########################", width - filled, "", done_ + 1, total_, done, total, best_us,
                   eta.c_str(), current_.c_str());
      std::fflush(out_);
    } else {
      std::fprintf(out_, "  %zu/%zu %s %s", done, total, r.variant.Uri().c_str(),
                   std::string(CodeName(r.measurement.status.code())).c_str());
      if (r.ok()) std::fprintf(out_, " %.2f us (best %.2f us)", r.measurement.median_us, best_us);
      std::fprintf(out_, "\n");
    }
  }
  void OnRetime(size_t index, int round, int rounds, const std::vector<CandidateResult>& timed) override {
    (void)index;
    if (tty_) return;  // the bar stays; the problem's line names the winner
    std::fprintf(out_, "  re-timed, round %d of at most %d:", round, rounds);
    for (size_t i = 0; i < timed.size(); ++i) {
      const CandidateResult& r = timed[i];
      std::fprintf(out_, "%s %s ", i ? "," : "", r.variant.Uri().c_str());
      if (r.ok()) std::fprintf(out_, "%.2f us", r.measurement.median_us);
      else std::fprintf(out_, "%s", std::string(CodeName(r.measurement.status.code())).c_str());
    }
    std::fprintf(out_, "\n");
  }
  void OnProblemEnd(size_t index, const ProblemSummary& s) override {
    (void)index;
    ++done_;
    frac_ = 0;
    if (tty_) std::fprintf(out_, "\r\033[K");
    std::fprintf(out_, "[%zu/%zu] %s: %s %s", done_, total_, s.problem.ToString().c_str(),
                 std::string(ProblemOutcomeName(s.outcome)).c_str(), s.winner_uri.c_str());
    if (s.median_us > 0) std::fprintf(out_, " %.2f us %.1f TFLOP/s", s.median_us, s.tflops);
    if (s.median_us > 0 && s.untuned_us > 0) {
      if (s.untuned_uri == s.winner_uri)
        std::fprintf(out_, " (the untuned plan)");
      else
        std::fprintf(out_, " (%.2fx the untuned plan %s, %.2f us)", s.untuned_us / s.median_us, s.untuned_uri.c_str(),
                     s.untuned_us);
    }
    if (!s.message.empty()) std::fprintf(out_, " (%s)", s.message.c_str());
    std::fprintf(out_, "\n");
    std::fflush(out_);
  }
  void OnFinish(const TuneSummary& s) override {
    std::fprintf(out_, "%s", FormatSummaryTable(s).c_str());
    std::fflush(out_);
  }

 private:
  double Elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  std::FILE* out_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
  size_t total_ = 0, done_ = 0;
  double frac_ = 0;
  std::string current_;
};

}  // namespace

std::unique_ptr<ProgressSink> MakeConsoleProgress(std::FILE* out, bool tty) {
  return std::make_unique<Console>(out, tty);
}

std::string FormatSummaryTable(const TuneSummary& s) {
  std::string out;
  char buf[512];
  // "x untuned": the untuned plan's time over the winner's (ProblemSummary::untuned_us), what
  // tuning bought; "-" where this run did not measure that plan.
  std::snprintf(buf, sizeof buf, "\n%-44s %-10s %-44s %10s %8s %6s %6s %8s %10s\n", "problem", "outcome", "winner",
                "median_us", "TFLOP/s", "meas", "fail", "time", "x untuned");
  out += buf;
  for (const auto& p : s.problems) {
    char gain[16] = "-";
    if (p.median_us > 0 && p.untuned_us > 0) std::snprintf(gain, sizeof gain, "%.2f", p.untuned_us / p.median_us);
    std::snprintf(buf, sizeof buf, "%-44s %-10s %-44s %10.2f %8.1f %6lld %6lld %8s %10s\n", p.problem.ToString().c_str(),
                  std::string(ProblemOutcomeName(p.outcome)).c_str(),
                  p.winner_uri.empty() ? "-" : p.winner_uri.c_str(), p.median_us, p.tflops, (long long)p.measured,
                  (long long)p.failed, Duration(p.seconds).c_str(), gain);
    out += buf;
  }
  std::snprintf(buf, sizeof buf,
                "%zu problem(s): %lld tuned, %lld skipped (winner present), %lld error(s); %lld measurements "
                "(%lld failed) in %s\n",
                s.problems.size(), (long long)s.winners, (long long)s.skipped, (long long)s.errors,
                (long long)s.measured, (long long)s.failed, Duration(s.seconds).c_str());
  out += buf;
  return out;
}

}  // namespace flashtune
