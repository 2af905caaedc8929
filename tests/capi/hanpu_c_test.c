/* The C API from C: load the fixture checkpoint (argv[1]), tokenize, render a chat, generate
 * greedily twice (the same text both times), stop early from the callback, and every error
 * path gives a code and a message instead of a crash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hanpu/hanpu_c.h"

static int failures = 0;
#define CHECK(cond)                                                                           \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond, \
              hanpu_last_error());                                                            \
      ++failures;                                                                             \
    }                                                                                         \
  } while (0)

typedef struct {
  char text[4096];
  size_t len;
  int pieces;
  int stop_after; /* 0: never */
} reply;

static int collect(const char* text, size_t len, void* user) {
  reply* r = (reply*)user;
  if (r->len + len < sizeof r->text) {
    memcpy(r->text + r->len, text, len);
    r->len += len;
    r->text[r->len] = '\0';
  }
  ++r->pieces;
  return r->stop_after > 0 && r->pieces >= r->stop_after;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CHECKPOINT_DIR\n", argv[0]);
    return 2;
  }
  CHECK(strlen(hanpu_version()) > 0);
  CHECK(strlen(hanpu_commit()) > 0);

  /* Errors: a missing folder, NULL arguments, an unknown synthetic model. */
  hanpu_engine* engine = (hanpu_engine*)0x1;
  CHECK(hanpu_engine_load("/nonexistent/hanpu-model", NULL, &engine) == HANPU_ERROR_FAILED);
  CHECK(engine == NULL);
  CHECK(strstr(hanpu_last_error(), "/nonexistent/hanpu-model") != NULL);
  CHECK(hanpu_engine_load(NULL, NULL, &engine) == HANPU_ERROR_ARGUMENT);
  CHECK(hanpu_engine_load(argv[1], NULL, NULL) == HANPU_ERROR_ARGUMENT);
  CHECK(hanpu_engine_synthetic("no-such-model", 1, &engine) == HANPU_ERROR_FAILED);
  CHECK(strlen(hanpu_last_error()) > 0);
  CHECK(hanpu_engine_load(argv[1], "f13", &engine) == HANPU_ERROR_FAILED);
  CHECK(strstr(hanpu_last_error(), "f13") != NULL);
  hanpu_engine_free(NULL);

  CHECK(hanpu_engine_load(argv[1], NULL, &engine) == HANPU_OK);
  if (!engine) return 1;
  CHECK(hanpu_has_tokenizer(engine) == 1);
  CHECK(hanpu_vocab_size(engine) > 0);

  /* Tokenize: the count comes back when the buffer is too small, then the ids fit. */
  const char* text = "Hello, world";
  size_t count = 0;
  CHECK(hanpu_tokenize(engine, text, strlen(text), NULL, 0, &count) ==
        HANPU_ERROR_BUFFER_TOO_SMALL);
  CHECK(count > 0 && count < 64);
  int32_t ids[64];
  for (int i = 0; i < 64; ++i) ids[i] = -7;
  size_t count2 = 0;
  CHECK(hanpu_tokenize(engine, text, strlen(text), ids, 64, &count2) == HANPU_OK);
  CHECK(count2 == count);
  for (size_t i = 0; i < count2; ++i) CHECK(ids[i] >= 0 && ids[i] < hanpu_vocab_size(engine));
  CHECK(ids[count2] == -7);
  CHECK(hanpu_tokenize(engine, NULL, 3, ids, 64, &count2) == HANPU_ERROR_ARGUMENT);

  /* A chat prompt through the template. */
  hanpu_chat_message messages[2] = {{"system", "Be brief."}, {"user", "Hi there"}};
  char* prompt_text = NULL;
  CHECK(hanpu_apply_chat_template(engine, messages, 2, &prompt_text) == HANPU_OK);
  CHECK(prompt_text && strstr(prompt_text, "Hi there") != NULL);
  hanpu_chat_message bad = {NULL, "x"};
  char* none = (char*)0x1;
  CHECK(hanpu_apply_chat_template(engine, &bad, 1, &none) == HANPU_ERROR_ARGUMENT);
  CHECK(none == NULL);

  int32_t prompt[512];
  size_t prompt_count = 0;
  CHECK(hanpu_tokenize(engine, prompt_text, strlen(prompt_text), prompt, 512, &prompt_count) ==
        HANPU_OK);
  hanpu_string_free(prompt_text);

  /* Greedy twice: the same reply; stop_at_eos off so exactly max_tokens come. */
  hanpu_generate_params params = hanpu_default_generate_params(engine);
  params.max_tokens = 12;
  params.temperature = 0.0f;
  params.stop_at_eos = 0;
  params.threads = 2;
  reply first = {{0}, 0, 0, 0}, second = {{0}, 0, 0, 0};
  hanpu_generate_result result;
  memset(&result, 0xff, sizeof result);
  CHECK(hanpu_generate(engine, prompt, prompt_count, &params, collect, &first, &result) ==
        HANPU_OK);
  CHECK(result.prompt_tokens == (int64_t)prompt_count);
  CHECK(result.generated_tokens == 12);
  CHECK(result.prefill_ms >= 0 && result.decode_ms >= 0);
  CHECK(strcmp(result.stop_reason, "max_tokens") == 0);
  CHECK(first.len > 0);
  CHECK(hanpu_generate(engine, prompt, prompt_count, &params, collect, &second, NULL) == HANPU_OK);
  CHECK(first.len == second.len && memcmp(first.text, second.text, first.len) == 0);

  /* The callback ends the reply early. */
  reply stopped = {{0}, 0, 0, 2};
  CHECK(hanpu_generate(engine, prompt, prompt_count, &params, collect, &stopped, &result) ==
        HANPU_OK);
  CHECK(strcmp(result.stop_reason, "stopped") == 0);
  CHECK(result.generated_tokens < 12);

  /* Bad generate arguments. */
  CHECK(hanpu_generate(engine, NULL, 3, &params, NULL, NULL, NULL) == HANPU_ERROR_ARGUMENT);
  CHECK(hanpu_generate(engine, prompt, prompt_count, NULL, NULL, NULL, NULL) ==
        HANPU_ERROR_ARGUMENT);
  params.max_tokens = -1;
  CHECK(hanpu_generate(engine, prompt, prompt_count, &params, NULL, NULL, NULL) ==
        HANPU_ERROR_ARGUMENT);
  params.max_tokens = 4;
  params.temperature = -1.0f;
  CHECK(hanpu_generate(engine, prompt, prompt_count, &params, NULL, NULL, NULL) ==
        HANPU_ERROR_FAILED);
  CHECK(strlen(hanpu_last_error()) > 0);
  int32_t out_of_range = hanpu_vocab_size(engine) + 5;
  params.temperature = 0.0f;
  CHECK(hanpu_generate(engine, &out_of_range, 1, &params, NULL, NULL, NULL) == HANPU_ERROR_FAILED);

  hanpu_engine_free(engine);
  if (failures)
    fprintf(stderr, "%d checks failed\n", failures);
  else
    printf("hanpu_c_test: all checks passed\n");
  return failures ? 1 : 0;
}
