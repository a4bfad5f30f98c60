// Opens a flashtune runtime and prints what it would launch for one shape.
// usage: consumer [database]   (default $FLASHTUNE_DB or ./flashtune.db)
#include <cstdio>

#include <flashtune/runtime.h>

int main(int argc, char** argv) {
  flashtune::RuntimeOptions options;
  if (argc > 1) options.db_path = argv[1];
  auto runtime = flashtune::Runtime::Open(options);
  if (!runtime.ok()) {
    std::fprintf(stderr, "consumer: %s\n", runtime.status().ToString().c_str());
    return 1;
  }
  const flashtune::Problem problem{flashtune::DType::kBF16, 128, true, 4, 2048, 2048, 16, 16};
  auto plan = (*runtime)->plan(problem);
  if (!plan.ok()) {
    std::fprintf(stderr, "consumer: %s\n", plan.status().ToString().c_str());
    return 1;
  }
  std::printf("%s -> %s (%s): %s\n", problem.ToString().c_str(), plan->variant.Uri().c_str(),
              std::string(flashtune::PlanSourceName(plan->source)).c_str(), plan->why.c_str());
  return 0;
}
