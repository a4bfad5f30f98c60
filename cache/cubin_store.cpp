#include "flashtune/cubin_store.h"

#include "flashtune/source.h"

namespace flashtune {

Result<CubinRecord> LoadOrCompileCubin(Database& db, const Compiler& compiler, const Variant& variant,
                                       const std::string& arch) {
  auto source = GenerateSource(variant);
  if (!source.ok()) return source.status();
  const std::string nvrtc = Compiler::NvrtcVersion();
  const std::string options;  // flashtune compiles its kernels with no extra NVRTC options
  auto stored = db.GetCubin(source->sha256, arch, options, nvrtc);
  if (stored.ok()) return stored;
  if (stored.status().code() != Code::kNotFound) return stored.status();
  auto cubin = compiler.Compile(GeneratedSourceRequest(source->uri, source->text, arch));
  if (!cubin.ok()) return cubin.status();
  CubinRecord record;
  record.source_hash = source->sha256;
  record.arch = arch;
  record.options = options;
  record.nvrtc_version = nvrtc;
  record.image = cubin->image;
  record.registers = cubin->resources.registers;
  record.smem_bytes = static_cast<int>(cubin->resources.static_smem_bytes);
  record.spill_bytes = cubin->resources.spill_store_bytes + cubin->resources.spill_load_bytes;
  record.log = cubin->log;
  FT_RETURN_IF_ERROR(db.PutCubin(record));
  return record;
}

Cubin CubinFromRecord(const CubinRecord& record, const std::string& name) {
  Cubin cubin;
  cubin.name = name;
  cubin.arch = record.arch;
  cubin.options = record.options;
  cubin.image = record.image;
  cubin.resources.registers = record.registers;
  cubin.log = record.log;
  cubin.from_cache = true;
  return cubin;
}

}  // namespace flashtune
