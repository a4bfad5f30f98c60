#include "flashtune/model_config.h"

#include <gtest/gtest.h>

namespace flashtune {
namespace {

const std::string kModels = std::string(FLASHTUNE_SOURCE_DIR) + "/examples/models/";

TEST(ModelConfig, ReadsTheSampleConfigs) {
  auto llama = LoadModelConfig(kModels + "llama-3.1-8b.config.json");
  ASSERT_TRUE(llama.ok()) << llama.status().ToString();
  EXPECT_EQ(llama->heads_q, 32);
  EXPECT_EQ(llama->heads_kv, 8);
  EXPECT_EQ(llama->head_dim, 128);  // hidden_size / heads
  EXPECT_EQ(llama->max_positions, 131072);
  ASSERT_TRUE(llama->dtype.has_value());
  EXPECT_EQ(*llama->dtype, DType::kBF16);
  auto phi = LoadModelConfig(kModels + "phi-3-mini-4k.config.json");
  ASSERT_TRUE(phi.ok()) << phi.status().ToString();
  EXPECT_EQ(phi->head_dim, 96);
  EXPECT_EQ(phi->heads_kv, 32);
  EXPECT_EQ(phi->max_positions, 4096);
}

TEST(ModelConfig, HeadDimFieldTextConfigAndMultiQuery) {
  // head_dim wins over hidden_size / heads (3072 / 16 would be 192).
  auto gemma = ParseModelConfig(R"({"hidden_size": 3072, "num_attention_heads": 16, "head_dim": 256,
                                    "num_key_value_heads": 16, "torch_dtype": "float16",
                                    "rope_scaling": {"type": "linear", "factor": [1, 2]}})", "g.json");
  ASSERT_TRUE(gemma.ok()) << gemma.status().ToString();
  EXPECT_EQ(gemma->head_dim, 256);
  EXPECT_EQ(*gemma->dtype, DType::kF16);
  EXPECT_EQ(gemma->max_positions, 0);
  // A multimodal checkpoint: the language model's fields under text_config; head_dim null.
  auto vlm = ParseModelConfig(R"({"model_type": "vlm", "vision_config": {"num_attention_heads": 12},
                                  "text_config": {"hidden_size": 4096, "num_attention_heads": 32, "head_dim": null,
                                                  "num_key_value_heads": 8, "max_position_embeddings": 8192}})",
                              "v.json");
  ASSERT_TRUE(vlm.ok()) << vlm.status().ToString();
  EXPECT_EQ(vlm->heads_q, 32);
  EXPECT_EQ(vlm->heads_kv, 8);
  EXPECT_EQ(vlm->head_dim, 128);
  EXPECT_EQ(vlm->max_positions, 8192);
  auto falcon = ParseModelConfig(R"({"n_embd": 4544, "n_head": 71, "multi_query": true})", "f.json");
  ASSERT_TRUE(falcon.ok()) << falcon.status().ToString();
  EXPECT_EQ(falcon->heads_kv, 1);
  EXPECT_EQ(falcon->head_dim, 64);
}

TEST(ModelConfig, ErrorsNameTheFileAndField) {
  struct Case {
    const char* json;
    const char* says;
  } cases[] = {
      {R"({"hidden_size": 4096})", "c.json: field 'num_attention_heads' is missing"},
      {R"({"num_attention_heads": 32})", "c.json: field 'head_dim' is missing, and so is 'hidden_size'"},
      {R"({"num_attention_heads": "32", "head_dim": 128})", "c.json: field 'num_attention_heads': '32' is not a positive integer"},
      {R"({"num_attention_heads": 32, "hidden_size": 4100})", "field 'hidden_size' (4100) is not a multiple of num_attention_heads (32)"},
      {R"({"num_attention_heads": 32, "head_dim": 80})", "head_dim 80 is not supported"},
      {R"({"num_attention_heads": 32, "num_key_value_heads": 5, "head_dim": 128})", "heads_q (32) must be a multiple of heads_kv (5)"},
      {R"({"num_attention_heads": 32, "head_dim": 128)", "c.json: not valid JSON"},
      {R"([1, 2])", "c.json: not valid JSON at byte 0: expected a JSON object"},
  };
  for (const Case& c : cases) {
    auto r = ParseModelConfig(c.json, "c.json");
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(LoadModelConfig("/nonexistent/config.json").status().code(), Code::kIoError);
}

TEST(ModelConfig, ProblemSetUsesTheModelsShapeDtypeAndContext) {
  auto phi = LoadModelConfig(kModels + "phi-3-mini-4k.config.json");
  ASSERT_TRUE(phi.ok());
  auto set = ModelProblemSet(*phi, ProblemSetOptions{}, /*use_model_dtype=*/true);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  // bf16 only (its torch_dtype) × causal or not × 512 … 4096 (its context).
  ASSERT_EQ(set->size(), 2u * 4);
  for (const Problem& p : *set) {
    EXPECT_EQ(p.dtype, DType::kBF16);
    EXPECT_EQ(p.head_dim, 96);
    EXPECT_EQ(p.heads_q, 32);
    EXPECT_EQ(p.heads_kv, 32);
    EXPECT_LE(p.seqlen_q, 4096);
    EXPECT_EQ(p.batch * p.seqlen_q, 16384);
  }
  auto both = ModelProblemSet(*phi, ProblemSetOptions{}, /*use_model_dtype=*/false);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->size(), 2u * 2 * 4);
  ModelShape tiny = *phi;
  tiny.max_positions = 300;  // shorter than every default length: its context alone
  auto short_set = ModelProblemSet(tiny, ProblemSetOptions{}, true);
  ASSERT_TRUE(short_set.ok());
  ASSERT_EQ(short_set->size(), 2u);
  EXPECT_EQ((*short_set)[0].seqlen_q, 300);
}

}  // namespace
}  // namespace flashtune

namespace flashtune {
namespace {

// A model's decode steps: its heads and head dim, key counts up to its context, its dtype.
TEST(ModelConfig, DecodeSetUsesTheModelsShapeDtypeAndContext) {
  ModelShape llama;
  llama.heads_q = 64;
  llama.heads_kv = 8;
  llama.head_dim = 128;
  llama.max_positions = 8192;
  llama.dtype = DType::kBF16;
  auto set = ModelDecodeSet(llama, {DType::kBF16, DType::kF16}, DecodeSetOptions{}, /*use_model_dtype=*/true);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  ASSERT_EQ(set->size(), 12u);  // B 1, 8, 64 x keys 2k, 8k x dense, paged
  for (const Problem& p : *set) {
    EXPECT_EQ(p.dtype, DType::kBF16);
    EXPECT_EQ(p.heads_q, 64);
    EXPECT_EQ(p.heads_kv, 8);
    EXPECT_EQ(p.seqlen_q, 1);
    EXPECT_LE(p.seqlen_k, 8192);
  }
  auto both = ModelDecodeSet(llama, {DType::kBF16, DType::kF16}, DecodeSetOptions{}, /*use_model_dtype=*/false);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->size(), 24u);
  // A context shorter than every default key count: the context itself.
  llama.max_positions = 1024;
  auto short_context = ModelDecodeSet(llama, {}, DecodeSetOptions{}, true);
  ASSERT_TRUE(short_context.ok());
  ASSERT_EQ(short_context->size(), 6u);
  EXPECT_EQ((*short_context)[0].seqlen_k, 1024);
}

}  // namespace
}  // namespace flashtune
