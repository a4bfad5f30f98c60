#include "jit/cubin_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "flashtune/hash.h"

namespace flashtune::detail {
namespace {

constexpr std::string_view kMagic = "FTCUBIN";

void AppendField(std::string& out, std::string_view field) {
  out += std::to_string(field.size());
  out += '\n';
  out.append(field.data(), field.size());
}

// Reads "<digits>\n" at `pos`; false on anything else.
bool ReadNumberLine(const std::string& in, size_t& pos, unsigned long long& value) {
  size_t end = in.find('\n', pos);
  if (end == std::string::npos || end == pos || end - pos > 20) return false;
  value = 0;
  for (size_t i = pos; i < end; ++i) {
    if (in[i] < '0' || in[i] > '9') return false;
    value = value * 10 + static_cast<unsigned>(in[i] - '0');
  }
  pos = end + 1;
  return true;
}

bool ReadLine(const std::string& in, size_t& pos, std::string& line) {
  size_t end = in.find('\n', pos);
  if (end == std::string::npos) return false;
  line = in.substr(pos, end - pos);
  pos = end + 1;
  return true;
}

bool ReadField(const std::string& in, size_t& pos, std::string& field) {
  unsigned long long length = 0;
  if (!ReadNumberLine(in, pos, length) || length > in.size() - pos) return false;
  field = in.substr(pos, length);
  pos += length;
  return true;
}

std::string ErrnoText() { return std::strerror(errno); }

}  // namespace

std::string CubinCacheKey(const std::string& name, const std::string& source,
                          const std::vector<std::string>& options, const std::string& nvrtc_version,
                          const std::string& arch) {
  std::string material = "flashtune-cubin-key-v" + std::to_string(kCubinCacheFormatVersion) + "\n";
  AppendField(material, nvrtc_version);
  AppendField(material, arch);
  AppendField(material, name);
  AppendField(material, std::to_string(options.size()));
  for (const std::string& o : options) AppendField(material, o);
  AppendField(material, source);
  return Sha256Hex(material);
}

std::string CubinCachePath(const std::string& dir, const std::string& key) {
  return (std::filesystem::path(dir) / (key + ".ftcubin")).string();
}

Result<Cubin> ReadCubinCacheEntry(const std::string& dir, const std::string& key) {
  const std::string path = CubinCachePath(dir, key);
  std::ifstream file(path, std::ios::binary);
  if (!file) return Status(Code::kNotFound, "no cache entry " + path);
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string data = buffer.str();
  auto corrupt = [&](const std::string& why) {
    return Status(Code::kCorrupt, "cubin cache entry " + path + " is corrupt: " + why);
  };

  size_t pos = 0;
  std::string line;
  if (!ReadLine(data, pos, line) || line != kMagic) return corrupt("bad magic");
  unsigned long long version = 0, length = 0;
  if (!ReadNumberLine(data, pos, version) || version != kCubinCacheFormatVersion)
    return corrupt("unknown format version");
  if (!ReadLine(data, pos, line) || line != key) return corrupt("key mismatch");
  if (!ReadNumberLine(data, pos, length)) return corrupt("bad payload length");
  std::string checksum;
  if (!ReadLine(data, pos, checksum)) return corrupt("missing checksum");
  if (data.size() - pos != length) return corrupt("payload length mismatch (truncated?)");
  const std::string payload = data.substr(pos);
  if (Sha256Hex(payload) != checksum) return corrupt("checksum mismatch");

  Cubin cubin;
  size_t p = 0;
  std::string resources, image;
  if (!ReadLine(payload, p, resources)) return corrupt("missing resources");
  std::istringstream r(resources);
  ResourceUsage& u = cubin.resources;
  if (!(r >> u.registers >> u.static_smem_bytes >> u.spill_store_bytes >> u.spill_load_bytes >>
        u.stack_frame_bytes >> u.const_bytes))
    return corrupt("bad resources line");
  if (!ReadField(payload, p, cubin.name) || !ReadField(payload, p, cubin.arch) ||
      !ReadField(payload, p, cubin.options) || !ReadField(payload, p, cubin.log) ||
      !ReadField(payload, p, image) || p != payload.size())
    return corrupt("bad payload fields");
  cubin.image.assign(image.begin(), image.end());
  cubin.key = key;
  cubin.from_cache = true;
  return cubin;
}

Status WriteCubinCacheEntry(const std::string& dir, const Cubin& cubin) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status(Code::kIoError, "cannot create cache folder " + dir + ": " + ec.message());

  const ResourceUsage& u = cubin.resources;
  std::string payload = std::to_string(u.registers) + " " + std::to_string(u.static_smem_bytes) + " " +
                        std::to_string(u.spill_store_bytes) + " " + std::to_string(u.spill_load_bytes) +
                        " " + std::to_string(u.stack_frame_bytes) + " " + std::to_string(u.const_bytes) +
                        "\n";
  AppendField(payload, cubin.name);
  AppendField(payload, cubin.arch);
  AppendField(payload, cubin.options);
  AppendField(payload, cubin.log);
  AppendField(payload, std::string_view(cubin.image.data(), cubin.image.size()));

  std::string data(kMagic);
  for (const std::string& line : {std::to_string(kCubinCacheFormatVersion), cubin.key,
                                  std::to_string(payload.size()), Sha256Hex(payload)}) {
    data += '\n';
    data += line;
  }
  data += '\n';
  data += payload;

  // A unique temp name per writer; rename() makes the entry appear whole or not at all.
  static std::atomic<unsigned long> counter{0};
  const std::string final_path = CubinCachePath(dir, cubin.key);
  const std::string temp_path = final_path + ".tmp." + std::to_string(::getpid()) + "." +
                                std::to_string(counter.fetch_add(1));
  int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status(Code::kIoError, "cannot create " + temp_path + ": " + ErrnoText());
  size_t written = 0;
  while (written < data.size()) {
    ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status s(Code::kIoError, "cannot write " + temp_path + ": " + ErrnoText());
      ::close(fd);
      ::unlink(temp_path.c_str());
      return s;
    }
    written += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const bool closed = ::close(fd) == 0;
  if (!synced || !closed) {
    Status s(Code::kIoError, "cannot flush " + temp_path + ": " + ErrnoText());
    ::unlink(temp_path.c_str());
    return s;
  }
  if (::rename(temp_path.c_str(), final_path.c_str()) != 0) {
    Status s(Code::kIoError, "cannot rename " + temp_path + " to " + final_path + ": " + ErrnoText());
    ::unlink(temp_path.c_str());
    return s;
  }
  return Status::Ok();
}

}  // namespace flashtune::detail
