// Messages between the GpuMeasurer (parent) and its GPU worker process (child).
#pragma once

#include <string>
#include <vector>

#include "flashtune/driver.h"
#include "flashtune/gpu_measurer.h"
#include "flashtune/status.h"
#include "flashtune/variant.h"
#include "tuner/worker_process.h"

namespace flashtune::detail {

enum MessageKind : int64_t { kHelloMessage = 1, kMeasureMessage = 2, kRetimeMessage = 3 };

// Bumped whenever a message's layout changes. The hello carries it both ways, so a tuner and a
// worker from different builds (a library user's FLASHTUNE_WORKER pointing at an older CLI)
// stop with a message instead of misreading each other's frames.
// 3: variants travel as URIs; 4: problems carry their operation; 5: and their layout (paged);
// 6: the interleaved re-timing of several finalists (kRetimeMessage)
inline constexpr int64_t kProtocolVersion = 6;

struct HelloReply {
  int64_t protocol_version = 0;  // the worker's; 0 from a worker older than versioning
  Status status;
  int device_count = 0;
  DeviceInfo device;
  std::string driver_version;  // "13.0"
};

struct MeasureRequest {
  Problem problem;
  Variant candidate;
  std::string candidate_cubin;
  Variant trusted;  // the class's DefaultVariant, whose output the candidate must match
  std::string trusted_cubin;
  bool verify = true;  // false when re-timing already verified finalists
  GpuMeasurerOptions options;
};

struct MeasureReply {
  Status status;
  double median_us = 0;
  double iqr_us = 0;
  int reps = 0;
  int registers = 0;
  int local_bytes = 0;
};

// Finalists, verified already, timed against each other in interleaved groups; options.warmup_ms
// is the warm-up of all of them together.
struct RetimeRequest {
  Problem problem;
  std::vector<Variant> candidates;
  std::vector<std::string> cubins;  // one per candidate
  GpuMeasurerOptions options;
};

struct RetimeReply {
  Status status;  // not OK: nothing was timed (a launch failed, or a fault: the worker exits)
  std::vector<MeasureReply> results;  // one per candidate: a cubin that did not load says so
};

std::string EncodeHelloRequest();
// The protocol version a hello request carries (0 from a tuner older than versioning); the
// reader is positioned after the message kind.
int64_t DecodeHelloRequestVersion(FrameReader& reader);
std::string EncodeHelloReply(const HelloReply& reply);
Result<HelloReply> DecodeHelloReply(const std::string& frame);
std::string EncodeMeasureRequest(const MeasureRequest& request);
Result<MeasureRequest> DecodeMeasureRequest(FrameReader& reader);
std::string EncodeMeasureReply(const MeasureReply& reply);
Result<MeasureReply> DecodeMeasureReply(const std::string& frame);
std::string EncodeRetimeRequest(const RetimeRequest& request);
Result<RetimeRequest> DecodeRetimeRequest(FrameReader& reader);  // positioned after the kind
std::string EncodeRetimeReply(const RetimeReply& reply);
Result<RetimeReply> DecodeRetimeReply(const std::string& frame);

// The worker's main loop for GPU `ordinal`; returns its exit code. Exits after replying to a
// request whose kernel faulted, because the CUDA context is then unusable.
int GpuWorkerMain(int request_fd, int reply_fd, int ordinal);

}  // namespace flashtune::detail
