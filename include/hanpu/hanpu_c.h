/* hanpu's C API: load a model, tokenize, generate with a callback per piece of text, free.
 * For C programs and for bindings from other languages (ctypes, cffi, Rust's bindgen).
 *
 * Every call returns HANPU_OK or an error code; the error's message is hanpu_last_error(),
 * kept per thread until that thread's next failing call. No call aborts or throws: a bad
 * argument (a null pointer, an unknown name) is an error code. Handles are opaque; each made
 * by hanpu_engine_load / hanpu_engine_synthetic is freed by hanpu_engine_free, and strings
 * the API allocates (hanpu_apply_chat_template) by hanpu_string_free.
 *
 * Threads: one engine serves one call at a time, except the read-only calls
 * (hanpu_tokenize, hanpu_apply_chat_template, hanpu_default_generate_params), which may run
 * from several threads at once. Different engines are independent. */
#ifndef HANPU_HANPU_C_H_
#define HANPU_HANPU_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hanpu_status {
  HANPU_OK = 0,
  HANPU_ERROR_ARGUMENT = 1,         /* a null pointer or a value out of range */
  HANPU_ERROR_BUFFER_TOO_SMALL = 2, /* the count needed was written; call again with room */
  HANPU_ERROR_FAILED = 3,           /* the engine refused: hanpu_last_error() says why */
} hanpu_status;

typedef struct hanpu_engine hanpu_engine;

/* The library's version ("0.1.0") and the commit it was built from. */
const char* hanpu_version(void);
const char* hanpu_commit(void);

/* The message of this thread's last failing call ("" if none). */
const char* hanpu_last_error(void);

/* A checkpoint: a folder with config.json, *.safetensors and tokenizer.json, or a .gguf
 * file. weights: "auto" (the checkpoint's dtype), "f32", "bf16" or "f16"; NULL is "auto". */
hanpu_status hanpu_engine_load(const char* path, const char* weights, hanpu_engine** out);
/* A random-weight model of a real architecture's shape (no tokenizer), for benchmarks. */
hanpu_status hanpu_engine_synthetic(const char* name, uint64_t seed, hanpu_engine** out);
void hanpu_engine_free(hanpu_engine* engine); /* NULL is fine */

/* The vocabulary size, and whether the engine has a tokenizer (1) or not (0). */
int32_t hanpu_vocab_size(const hanpu_engine* engine);
int hanpu_has_tokenizer(const hanpu_engine* engine);

/* Token ids of `len` bytes of UTF-8 text into ids[0..capacity). *count gets the number of
 * ids; where it exceeds capacity the call returns HANPU_ERROR_BUFFER_TOO_SMALL. */
hanpu_status hanpu_tokenize(const hanpu_engine* engine, const char* text, size_t len, int32_t* ids,
                            size_t capacity, size_t* count);

typedef struct hanpu_chat_message {
  const char* role; /* "system", "user" or "assistant" */
  const char* content;
} hanpu_chat_message;

/* The checkpoint's chat template applied to the messages, ending with the assistant's
 * opening; *text is NUL-terminated and freed with hanpu_string_free. */
hanpu_status hanpu_apply_chat_template(const hanpu_engine* engine,
                                       const hanpu_chat_message* messages, size_t count,
                                       char** text);
void hanpu_string_free(char* text);

typedef struct hanpu_generate_params {
  int32_t max_tokens;       /* tokens to generate */
  float temperature;        /* 0: greedy */
  int32_t top_k;            /* 0: off */
  float top_p;              /* 1: off */
  float min_p;              /* 0: off */
  float repetition_penalty; /* 1: off */
  uint64_t seed;
  int32_t threads;     /* 0: every core */
  int32_t stop_at_eos; /* 1: stop at the model's end-of-generation tokens */
} hanpu_generate_params;

/* The checkpoint's sampling defaults (its generation_config.json or GGUF keys; greedy when it
 * has none), 64 tokens, every core. */
hanpu_generate_params hanpu_default_generate_params(const hanpu_engine* engine);

/* Called with each piece of generated text as soon as it is whole UTF-8 (not NUL-terminated).
 * Returning nonzero ends the reply after the current token. */
typedef int (*hanpu_text_callback)(const char* text, size_t len, void* user);

typedef struct hanpu_generate_result {
  int64_t prompt_tokens, generated_tokens;
  double prefill_ms, decode_ms;
  const char* stop_reason; /* "eos", "max_tokens" or "stopped"; static storage */
} hanpu_generate_result;

/* Prefills prompt[0..count) and decodes a reply into on_text (NULL: no text). result may be
 * NULL. */
hanpu_status hanpu_generate(hanpu_engine* engine, const int32_t* prompt, size_t count,
                            const hanpu_generate_params* params, hanpu_text_callback on_text,
                            void* user, hanpu_generate_result* result);

#ifdef __cplusplus
}
#endif

#endif /* HANPU_HANPU_C_H_ */
