// ChatTemplate over llama.cpp's Jinja engine (the only file that includes its headers).
#include "model/chat_template.h"

#include <pthread.h>

#include <exception>
#include <functional>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/file_read.h"
#include "base/input_limits.h"
#include "base/json_limits.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"
#include "jinja/runtime.h"
#include "jinja/value.h"
#include "json.h"

namespace hanpu::model {

namespace {

// ChatML exactly as Qwen's templates write a conversation without tools or images.
constexpr const char* kChatMl =
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

// The engine reports errors by exception; this turns any of them into a Status that names
// the template.
template <class F>
Status guarded(const std::string& what, const std::string& origin, F&& f) {
  try {
    f();
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Error(fmt::format("{} {}: {}", what, origin, e.what()));
  }
}

// Runs `f` on a thread of its own with a `stack_bytes` stack (reserved, touched only as used).
// A template can nest values as deep as its step budget allows (limits.h), and the engine
// destroys and prints them recursively: on a default 8 MB stack a list nested a few hundred
// thousand times in a loop overflows it. The step budget bounds the depth, this stack holds it.
Status run_on_big_stack(size_t stack_bytes, const std::function<Status()>& f) {
  struct Call {
    const std::function<Status()>* f;
    Status result;
  } call{&f, Status::Ok()};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, stack_bytes);
  pthread_t thread;
  const int rc = pthread_create(
      &thread, &attr,
      [](void* p) -> void* {
        auto* c = static_cast<Call*>(p);
        c->result = (*c->f)();
        return nullptr;
      },
      &call);
  pthread_attr_destroy(&attr);
  if (rc != 0) return f();  // no thread to be had: the calling one's stack, as before
  pthread_join(thread, nullptr);
  return call.result;
}

// The render thread's stack: the deepest value a template's step budget can build, destroyed
// recursively, with room to spare under the sanitizers' larger frames.
constexpr size_t kRenderStackBytes = size_t{1} << 30;

}  // namespace

struct ChatTemplate::Program {
  std::string source;
  jinja::program program;
};

ChatTemplate::ChatTemplate() = default;
ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

Status ChatTemplate::parse(const std::string& source, const std::string& origin,
                           ChatTemplate* out) {
  auto program = std::make_shared<Program>();
  program->source = source;
  HANPU_RETURN_IF_ERROR(guarded("chat template", origin, [&] {
    jinja::lexer lexer;
    program->program = jinja::parse_from_tokens(lexer.tokenize(program->source));
  }));
  out->program_ = std::move(program);
  out->origin_ = origin;
  return Status::Ok();
}

ChatTemplate ChatTemplate::chatml() {
  ChatTemplate t;
  const Status st = parse(kChatMl, "built-in ChatML", &t);
  (void)st;  // a constant the tests render; it parses
  return t;
}

void ChatTemplate::set_special_tokens(std::string bos, std::string eos) {
  bos_ = std::move(bos);
  eos_ = std::move(eos);
}

Status ChatTemplate::render(const std::vector<ChatMessage>& messages, const ChatOptions& options,
                            std::string* out) const {
  if (!program_) return Status::Error("no chat template");
  if (messages.empty()) return Status::Error("chat: no messages to render");
  nlohmann::json inputs = nlohmann::json::object();
  nlohmann::json& msgs = inputs["messages"] = nlohmann::json::array();
  for (const ChatMessage& m : messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
  inputs["add_generation_prompt"] = options.add_generation_prompt;
  if (options.enable_thinking) inputs["enable_thinking"] = *options.enable_thinking;
  inputs["bos_token"] = bos_;
  inputs["eos_token"] = eos_;
  std::string text;
  HANPU_RETURN_IF_ERROR(run_on_big_stack(kRenderStackBytes, [&] {
    return guarded("rendering chat template", origin_, [&] {
      jinja::context ctx(program_->source);
      // Whatever the render leaves, cycles and deep nests included, is taken apart without
      // recursion when it ends, by error or not (jinja/runtime.h).
      struct Teardown {
        jinja::context& c;
        ~Teardown() { c.teardown(); }
      } teardown{ctx};
      // The engine takes its inputs as common_json; the text round trip keeps key order.
      jinja::global_from_json(ctx, common_json::parse(inputs.dump()), /*mark_input=*/false);
      jinja::runtime runtime(ctx);
      const jinja::value result = runtime.execute(program_->program);
      text = jinja::runtime::gather_string_parts(result)->as_string().str();
    });
  }));
  *out = std::move(text);
  return Status::Ok();
}

Status read_hf_tokenizer_config(const std::string& dir, nlohmann::json* config) {
  *config = nlohmann::json::object();
  const std::filesystem::path folder(dir);
  const std::filesystem::path config_path = folder / "tokenizer_config.json";
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(config_path, ec)))
    return Status::Ok();
  std::string text;
  HANPU_RETURN_IF_ERROR(
      read_regular_file(config_path.string(), kMaxJsonFileBytes, "tokenizer_config.json", &text));
  HANPU_RETURN_IF_ERROR(parse_json(text, config_path.string(), config));
  if (!config->is_object()) {
    return Status::Error(fmt::format("{}: not a JSON object", config_path.string()));
  }
  return Status::Ok();
}

std::string hf_special_token(const nlohmann::json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  return "";
}

Status load_hf_eos_token(const std::string& dir, std::string* eos) {
  nlohmann::json config;
  HANPU_RETURN_IF_ERROR(read_hf_tokenizer_config(dir, &config));
  *eos = hf_special_token(config, "eos_token");
  return Status::Ok();
}

Status read_hf_chat_template(const std::string& dir, std::string* source, std::string* origin) {
  source->clear();
  origin->clear();
  const std::filesystem::path folder(dir);
  nlohmann::json config;
  HANPU_RETURN_IF_ERROR(read_hf_tokenizer_config(dir, &config));
  const std::filesystem::path config_path = folder / "tokenizer_config.json";
  const std::filesystem::path jinja_path = folder / "chat_template.jinja";
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::symlink_status(jinja_path, ec))) {
    HANPU_RETURN_IF_ERROR(read_regular_file(jinja_path.string(), kMaxChatTemplateBytes,
                                            "chat_template.jinja", source));
    *origin = jinja_path.string();
  } else if (config.contains("chat_template")) {
    const nlohmann::json& t = config["chat_template"];
    *origin = config_path.string() + " (chat_template)";
    if (t.is_string()) {
      *source = t.get<std::string>();
    } else if (t.is_array()) {  // named templates: [{"name": "default", "template": "..."}, ...]
      for (const nlohmann::json& named : t) {
        if (named.is_object() && named.contains("name") && named["name"] == "default" &&
            named.contains("template") && named["template"].is_string()) {
          *source = named["template"].get<std::string>();
        }
      }
      if (source->empty())
        return Status::Error(fmt::format("{}: no template named \"default\"", *origin));
    } else {
      return Status::Error(
          fmt::format("{}: chat_template is neither a string nor a list", *origin));
    }
  }
  return Status::Ok();
}

Status load_hf_chat_template(const std::string& dir, std::optional<ChatTemplate>* out) {
  out->reset();
  std::string source, origin;
  HANPU_RETURN_IF_ERROR(read_hf_chat_template(dir, &source, &origin));
  if (origin.empty()) return Status::Ok();
  nlohmann::json config;
  HANPU_RETURN_IF_ERROR(read_hf_tokenizer_config(dir, &config));
  ChatTemplate tmpl;
  HANPU_RETURN_IF_ERROR(ChatTemplate::parse(source, origin, &tmpl));
  tmpl.set_special_tokens(hf_special_token(config, "bos_token"),
                          hf_special_token(config, "eos_token"));
  *out = std::move(tmpl);
  return Status::Ok();
}

}  // namespace hanpu::model
