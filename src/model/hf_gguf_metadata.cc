// A checkpoint folder's GGUF metadata as llama.cpp's converter writes it (hf_gguf_metadata.h):
// TextModel / Qwen3NextModel / _Qwen35MRopeMixin.set_gguf_parameters for the shape,
// get_vocab_base, _set_vocab_gpt2 and gguf.SpecialVocab for the tokenizer.
#include "model/hf_gguf_metadata.h"

#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/file_read.h"
#include "base/input_limits.h"
#include "base/json_limits.h"
#include "model/chat_template.h"
#include "model/tiktoken_vocab.h"
#include "model/tokenizer.h"

namespace hanpu::model {

namespace {

using json = nlohmann::json;

GgufValue u32(uint64_t v) { return {.v = v, .type = kGgufU32}; }
GgufValue f32(double v) {
  return {.v = static_cast<double>(static_cast<float>(v)), .type = kGgufF32};
}
GgufValue str(std::string s) { return {.v = std::move(s), .type = kGgufString}; }
GgufValue boolean(bool b) { return {.v = b, .type = kGgufBool}; }
GgufValue array(std::vector<GgufValue> items, GgufType elem) {
  for (GgufValue& i : items) i.type = elem;
  return {.v = std::move(items), .type = kGgufArray, .elem_type = elem};
}

Status read_json(const std::filesystem::path& path, const char* what, json* out) {
  std::string s;
  HANPU_RETURN_IF_ERROR(read_regular_file(path.string(), kMaxJsonFileBytes, what, &s));
  HANPU_RETURN_IF_ERROR(parse_json(s, path.string(), out));
  if (!out->is_object()) return Status::Error(fmt::format("{}: not a JSON object", path.string()));
  return Status::Ok();
}

// The keys every architecture's converter writes alike (TextModel.set_gguf_parameters).
void common_metadata(const std::string& a, const ModelConfig& c, GgufMetadata* meta) {
  GgufMetadata& m = *meta;
  m["general.architecture"] = str(a);
  m[a + ".block_count"] = u32(c.layers);
  if (c.max_positions > 0) m[a + ".context_length"] = u32(c.max_positions);
  m[a + ".embedding_length"] = u32(c.hidden);
  m[a + ".feed_forward_length"] = u32(c.intermediate);
  m[a + ".attention.head_count"] = u32(c.attn_heads);
}

// Kimi Linear's shape as conversion/kimi_linear.py writes it: head_count_kv per layer (0 for
// KDA, 1 for MLA run as MQA over the latent), key_length the latent row, the MLA head dims
// under *_mla. The router's groups, which that converter does not read from Kimi's config
// (Kimi-Linear-48B has one), are written where there are several, so the file runs the model
// config.json describes.
void kimi_linear_metadata(const ModelConfig& c, GgufMetadata* meta) {
  const std::string a = "kimi-linear";
  GgufMetadata& m = *meta;
  const MlaShape& mla = c.mla;
  common_metadata(a, c, meta);
  std::vector<GgufValue> kv;
  for (LayerKind k : c.layer_kinds)
    kv.push_back({.v = int64_t{k == LayerKind::kFullAttention ? 1 : 0}});
  m[a + ".attention.head_count_kv"] = array(std::move(kv), kGgufI32);
  m[a + ".attention.layer_norm_rms_epsilon"] = f32(c.rms_eps);
  m[a + ".vocab_size"] = u32(c.vocab);
  m[a + ".ssm.conv_kernel"] = u32(c.conv_kernel);
  m[a + ".kda.head_dim"] = u32(c.la_key_dim);
  if (mla.q_lora_rank > 0) m[a + ".attention.q_lora_rank"] = u32(mla.q_lora_rank);
  m[a + ".attention.kv_lora_rank"] = u32(mla.kv_lora_rank);
  m[a + ".rope.dimension_count"] = u32(mla.qk_rope_dim);
  m[a + ".attention.key_length"] = u32(int64_t{mla.kv_lora_rank} + mla.qk_rope_dim);
  m[a + ".attention.key_length_mla"] = u32(mla.qk_dim());
  m[a + ".attention.value_length_mla"] = u32(mla.v_dim);
  if (c.num_experts > 0) {
    m[a + ".expert_count"] = u32(c.num_experts);
    m[a + ".expert_used_count"] = u32(c.experts_per_token);
    if (c.router.groups > 1) {
      m[a + ".expert_group_count"] = u32(c.router.groups);
      m[a + ".expert_group_used_count"] = u32(c.router.topk_groups);
    }
    m[a + ".expert_gating_func"] = u32(2);  // sigmoid
    m[a + ".expert_feed_forward_length"] = u32(c.moe_intermediate);
    m[a + ".expert_shared_count"] = u32(c.router.shared_experts);
    int dense = 0;
    while (dense < c.layers && !c.layer_has_moe(dense)) ++dense;
    m[a + ".leading_dense_block_count"] = u32(dense);
    m[a + ".expert_weights_scale"] = f32(c.router.routed_scaling);
  }
}

// The model's shape, from config.json (the text_config of an image-text checkpoint).
void shape_metadata(const ModelConfig& c, const json& text, GgufMetadata* meta) {
  if (c.arch == Arch::kKimiLinear) return kimi_linear_metadata(c, meta);
  const std::string a = c.arch == Arch::kQwen35 ? "qwen35" : "qwen3next";
  GgufMetadata& m = *meta;
  common_metadata(a, c, meta);
  m[a + ".attention.head_count_kv"] = u32(c.kv_heads);
  m[a + ".attention.key_length"] = u32(c.head_dim);
  m[a + ".attention.value_length"] = u32(c.head_dim);
  m[a + ".attention.layer_norm_rms_epsilon"] = f32(c.rms_eps);
  m[a + ".rope.freq_base"] = f32(c.rope_theta);
  m[a + ".rope.dimension_count"] = u32(c.rotary_dims());
  if (c.arch == Arch::kQwen35) {
    // Interleaved multimodal RoPE: its sections, padded to four; llama.cpp requires the key.
    std::vector<GgufValue> sections;
    for (const char* key : {"rope_parameters", "rope_scaling"}) {
      const json* rp = text.contains(key) && text[key].is_object() ? &text[key] : nullptr;
      if (rp && rp->contains("mrope_section") && (*rp)["mrope_section"].is_array()) {
        for (const json& s : (*rp)["mrope_section"])
          if (s.is_number_integer() && sections.size() < 4)
            sections.push_back({.v = s.get<int64_t>()});
        break;
      }
    }
    if (sections.empty())
      for (int64_t s : {11, 11, 10}) sections.push_back({.v = s});
    while (sections.size() < 4) sections.push_back({.v = int64_t{0}});
    m[a + ".rope.dimension_sections"] = array(std::move(sections), kGgufI32);
  }
  m[a + ".ssm.conv_kernel"] = u32(c.conv_kernel);
  m[a + ".ssm.state_size"] = u32(c.la_key_dim);
  m[a + ".ssm.group_count"] = u32(c.la_key_heads);
  m[a + ".ssm.time_step_rank"] = u32(c.la_value_heads);
  m[a + ".ssm.inner_size"] = u32(int64_t{c.la_value_dim} * c.la_value_heads);
  if (text.contains("layer_types")) {
    std::vector<GgufValue> recurrent;
    for (LayerKind k : c.layer_kinds)
      recurrent.push_back(boolean(k == LayerKind::kLinearAttention));
    m[a + ".attention.recurrent_layers"] = array(std::move(recurrent), kGgufBool);
  }
  const json& interval =
      text.contains("full_attention_interval") ? text["full_attention_interval"] : json(4);
  m[a + ".full_attention_interval"] =
      u32(interval.is_number_unsigned() ? interval.get<uint64_t>() : 4);
  if (c.num_experts > 0) {
    m[a + ".expert_count"] = u32(c.num_experts);
    m[a + ".expert_used_count"] = u32(c.experts_per_token);
    m[a + ".expert_feed_forward_length"] = u32(c.moe_intermediate);
    if (c.shared_expert_intermediate > 0)
      m[a + ".expert_shared_feed_forward_length"] = u32(c.shared_expert_intermediate);
  }
}

// convert_hf_to_gguf's does_token_look_special.
bool looks_special(const std::string& t) {
  const auto wraps = [&](std::string_view open, std::string_view close) {
    return t.size() >= open.size() + close.size() && t.starts_with(open) && t.ends_with(close);
  };
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || wraps("<|", "|>") ||
         wraps("<\xef\xbd\x9c", "\xef\xbd\x9c>") || wraps("<unused", ">");
}

// A folder's tokenizer as the converter sees it: the parts, which ids are special (control)
// and the added tokens' ids by content (for the special-token lookup).
struct FolderVocab {
  Tokenizer::Parts parts;
  std::map<int64_t, bool> special;  // added ids: whether special
  std::map<std::string, int64_t> added_id;
  bool byte_level_post = false;  // a byte-level post-processor (adds neither BOS nor EOS)
  std::string source;            // the file, for errors
};

Status vocab_from_tokenizer_json(const std::filesystem::path& tok_path, FolderVocab* v) {
  v->source = tok_path.string();
  std::string tok_text;
  HANPU_RETURN_IF_ERROR(
      read_regular_file(tok_path.string(), kMaxJsonFileBytes, "tokenizer.json", &tok_text));
  json tok;
  HANPU_RETURN_IF_ERROR(parse_json(tok_text, tok_path.string(), &tok));
  HANPU_RETURN_IF_ERROR(Tokenizer::parts_from_json(tok, tok_path.string(), &v->parts));
  for (const json& a : tok.value("added_tokens", json::array())) {
    const int64_t id = a["id"].get<int64_t>();
    v->special[id] = a.value("special", false);
    v->added_id.emplace(a["content"].get<std::string>(), id);
  }
  if (const json pp = tok.value("post_processor", json()); pp.is_object()) {
    for (const json& p : pp.value("processors", json::array({pp})))
      v->byte_level_post =
          v->byte_level_post || (p.is_object() && p.value("type", "") == "ByteLevel");
  }
  return Status::Ok();
}

// Kimi's tiktoken.model (tiktoken_vocab.h). conversion/kimi_linear.py marks every special
// token control. Its merges are one split per token (the last merge BPE would make); every
// split into two tokens is written here, each at its token's rank, so llama.cpp's BPE merges
// as tiktoken does (a lower-ranked token's every split before a higher one's).
Status vocab_from_tiktoken(const std::filesystem::path& dir, FolderVocab* v) {
  v->source = (dir / "tiktoken.model").string();
  HANPU_RETURN_IF_ERROR(tiktoken_parts(dir.string(), &v->parts));
  for (size_t id = 0; id < v->parts.tokens.size(); ++id) {
    if (!v->parts.added[id]) continue;
    v->special[static_cast<int64_t>(id)] = true;
    v->added_id.emplace(v->parts.tokens[id], static_cast<int64_t>(id));
  }
  return Status::Ok();
}

Status tokenizer_metadata(const std::filesystem::path& dir, const ModelConfig& c, const json& root,
                          const json& text, GgufMetadata* meta) {
  FolderVocab vocab;
  if (std::filesystem::exists(dir / "tokenizer.json")) {
    HANPU_RETURN_IF_ERROR(vocab_from_tokenizer_json(dir / "tokenizer.json", &vocab));
  } else if (has_tiktoken_model(dir.string())) {  // Kimi's folders ship tiktoken.model instead
    HANPU_RETURN_IF_ERROR(vocab_from_tiktoken(dir, &vocab));
  } else {
    return Status::Error(fmt::format(
        "{}: no tokenizer.json or tiktoken.model, so no tokenizer to write into the GGUF",
        dir.string()));
  }
  const Tokenizer::Parts& parts = vocab.parts;
  // Named by the split regex alone, as the converter's hash of the tokenizer's output tells
  // them apart: transformers gives Qwen2/3's tokenizer and Qwen3.5's the NFC normaliser both.
  const std::string pre = Tokenizer::pre_for_pattern(parts.pattern);
  if (pre.empty())
    return Status::Error(fmt::format(
        "{}: its pre-tokenizer regex is none of those llama.cpp names here (qwen2, qwen35, "
        "kimi-k2)",
        vocab.source));
  if (parts.tokens.size() > static_cast<size_t>(c.vocab))
    return Status::Error(fmt::format("{}: {} token ids, more than config.json's vocab_size {}",
                                     vocab.source, parts.tokens.size(), c.vocab));
  const std::map<int64_t, bool>& special = vocab.special;
  const std::map<std::string, int64_t>& added_id = vocab.added_id;
  std::vector<GgufValue> tokens, types, merges;
  for (int64_t i = 0; i < c.vocab; ++i) {
    const std::string* t =
        static_cast<size_t>(i) < parts.tokens.size() ? &parts.tokens[i] : nullptr;
    if (t == nullptr || t->empty()) {
      tokens.push_back({.v = fmt::format("[PAD{}]", i)});
      types.push_back({.v = int64_t{5}});  // unused
    } else if (const auto it = special.find(i); it != special.end()) {
      tokens.push_back({.v = *t});
      types.push_back({.v = int64_t{it->second || looks_special(*t) ? 3 : 4}});  // control, user
    } else {
      tokens.push_back({.v = *t});
      types.push_back({.v = int64_t{1}});  // normal
    }
  }
  for (const auto& [a, b] : parts.merges) merges.push_back({.v = a + " " + b});
  GgufMetadata& m = *meta;
  m["tokenizer.ggml.model"] = str("gpt2");
  m["tokenizer.ggml.pre"] = str(pre);
  m["tokenizer.ggml.tokens"] = array(std::move(tokens), kGgufString);
  m["tokenizer.ggml.token_type"] = array(std::move(types), kGgufI32);
  m["tokenizer.ggml.merges"] = array(std::move(merges), kGgufString);

  // Special token ids: tokenizer_config.json's tokens first, config.json's ids for the rest.
  json tc;
  HANPU_RETURN_IF_ERROR(read_hf_tokenizer_config(dir.string(), &tc));
  const std::pair<const char*, const char*> kinds[] = {
      {"bos", "bos"},     {"eos", "eos"}, {"unk", "unknown"}, {"sep", "seperator"},
      {"pad", "padding"}, {"cls", "cls"}, {"mask", "mask"}};
  for (const auto& [hf, gguf] : kinds) {
    const std::string key = fmt::format("tokenizer.ggml.{}_token_id", gguf);
    const std::string content = hf_special_token(tc, (std::string(hf) + "_token").c_str());
    std::optional<int64_t> id;
    if (const auto it = added_id.find(content); !content.empty() && it != added_id.end())
      id = it->second;
    for (const json* j : {&root, &text}) {
      const std::string k = std::string(hf) + "_token_id";
      if (!id && j->contains(k) && (*j)[k].is_number_integer()) id = (*j)[k].get<int64_t>();
    }
    if (!id || *id < 0) continue;
    if (*id >= c.vocab)
      return Status::Error(fmt::format("{}: {} is {}, outside the vocabulary of {}", dir.string(),
                                       key, *id, c.vocab));
    m[key] = u32(static_cast<uint64_t>(*id));
  }
  // A byte-level post-processor adds neither BOS nor EOS; tokenizer_config.json may say more.
  const bool byte_level = vocab.byte_level_post;
  for (const char* kind : {"bos", "eos"}) {
    const std::string add = fmt::format("add_{}_token", kind);
    std::optional<bool> v;
    if (byte_level) v = false;
    if (!v && tc.contains(add) && tc[add].is_boolean()) v = tc[add].get<bool>();
    if (v) m[fmt::format("tokenizer.ggml.{}", add)] = boolean(*v);
  }
  std::string source, origin;
  HANPU_RETURN_IF_ERROR(read_hf_chat_template(dir.string(), &source, &origin));
  if (!source.empty()) m["tokenizer.chat_template"] = str(source);
  return Status::Ok();
}

}  // namespace

Status hf_gguf_metadata(const std::string& folder, const ModelConfig& config, GgufMetadata* meta) {
  const std::filesystem::path dir(folder);
  json root;
  HANPU_RETURN_IF_ERROR(read_json(dir / "config.json", "config.json", &root));
  const json& text =
      root.contains("text_config") && root["text_config"].is_object() ? root["text_config"] : root;
  meta->clear();
  try {  // a field of the wrong JSON type throws from deep inside nlohmann's accessors
    shape_metadata(config, text, meta);
    (*meta)["general.name"] =
        GgufValue{.v = dir.filename().empty() ? dir.parent_path().filename().string()
                                              : dir.filename().string(),
                  .type = kGgufString};
    return tokenizer_metadata(dir, config, root, text, meta);
  } catch (const json::exception& e) {
    return Status::Error(fmt::format("{}: a field has the wrong type: {}", folder, e.what()));
  }
}

}  // namespace hanpu::model
