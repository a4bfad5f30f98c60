// flashtune/model_config.h — a model's attention shape, read from its Hugging Face config.json,
// and the problem set that tunes what that model runs.
//
// A ModelShape is what an attention kernel sees of a model: query heads, K/V heads, head dim,
// the longest context it was trained for, and the dtype its weights ship in. It is read from
// the config.json next to a Hugging Face checkpoint:
//   heads     num_attention_heads (or n_head, num_heads)
//   kv heads  num_key_value_heads (or num_kv_heads, n_head_kv); absent: = heads (MHA);
//             multi_query: true means 1
//   head dim  head_dim when present and not null, else hidden_size (or n_embd, d_model) / heads
//   context   max_position_embeddings (or n_positions, max_seq_len, seq_length); optional
//   dtype     torch_dtype (or dtype): "bfloat16" / "float16"; optional
// Multimodal configs keep the language model's fields under "text_config"; those are used when
// the top level has no head count. Errors name the file and the field.
//
// Thread safety: free functions on value types; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flashtune/problem_set.h"
#include "flashtune/status.h"
#include "flashtune/variant.h"

namespace flashtune {

struct ModelShape {
  int64_t heads_q = 0;
  int64_t heads_kv = 0;
  int head_dim = 0;
  int64_t max_positions = 0;   // 0 when the config does not say
  std::optional<DType> dtype;  // the weights' dtype, when the config names one we serve
};

// Parses a config.json's text; `source` names it in errors ("config.json: field
// 'num_attention_heads': ..."). kInvalidArgument for malformed JSON, a missing head count, a
// head dim no family supports, or heads not a multiple of kv heads.
Result<ModelShape> ParseModelConfig(std::string_view json, std::string_view source);
// Reads and parses `path`; kIoError when it cannot be read.
Result<ModelShape> LoadModelConfig(const std::string& path);

// The problems that tune `model`: its Hq, Hkv and D, crossed with options.dtypes (only the
// model's own dtype when `use_model_dtype` and the config names one), options.causal and the
// sequence lengths of options.seqlens that fit its context (none fits: its context alone);
// B = options.tokens / Nq as in MakeProblemSet. options.head_dims, hidden and heads_kv are not
// used: the model gives them.
Result<std::vector<Problem>> ModelProblemSet(const ModelShape& model, const ProblemSetOptions& options,
                                             bool use_model_dtype);

// The decode problems that tune `model` for inference: MakeDecodeSet with its Hq, Hkv and D for
// each of `dtypes` (only the model's own dtype when `use_model_dtype` and the config names one),
// key counts up to its context (options.max_keys is replaced by it when the config gives one).
Result<std::vector<Problem>> ModelDecodeSet(const ModelShape& model, const std::vector<DType>& dtypes,
                                            DecodeSetOptions options, bool use_model_dtype);

}  // namespace flashtune
