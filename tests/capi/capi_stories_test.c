/* Greedy generation on stories260K through the C ABI gives the reference ids
** of llama2.c, through both the pull and the push API. */
#include "check.h"

/* The n-th JSON array of integers following `"key":` in `json`; returns its
** length (at most cap), or -1. Enough for reference.json's flat arrays. */
static int int_array_after(const char *json, const char *key, int nth, int32_t *out, int cap) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\"", key);
    const char *p = json;
    for (int i = 0; i <= nth; ++i) {
        p = strstr(p, pattern);
        if (p == NULL) return -1;
        p += strlen(pattern);
    }
    p = strchr(p, '[');
    if (p == NULL) return -1;
    int n = 0;
    ++p;
    while (*p != ']' && n < cap) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) {
            ++p;
            continue;
        }
        out[n++] = (int32_t)v;
        p = end;
    }
    return n;
}

/* The n-th JSON string value following `"key":`, copied into out. */
static int string_after(const char *json, const char *key, int nth, char *out, size_t cap) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\"", key);
    const char *p = json;
    for (int i = 0; i <= nth; ++i) {
        p = strstr(p, pattern);
        if (p == NULL) return -1;
        p += strlen(pattern);
    }
    p = strchr(p, ':');
    if (p == NULL || (p = strchr(p, '"')) == NULL) return -1;
    ++p;
    size_t n = 0;
    while (*p != '"' && n + 1 < cap) out[n++] = *p++;
    out[n] = '\0';
    return (int)n;
}

struct collect {
    int32_t ids[64];
    int     n;
    int     ended;
    prepack_finish_reason reason;
};

static int on_event(const prepack_event *ev, void *user) {
    struct collect *c = (struct collect *)user;
    if (ev->kind == PREPACK_EVENT_END) {
        c->ended = 1;
        c->reason = ev->finish_reason;
    } else if (c->n < 64) {
        c->ids[c->n++] = ev->token;
    }
    return 0;
}

int main(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/stories260K/reference.json", PREPACK_MODELS_DIR);
    char *json = read_file(path);
    if (json == NULL) return skip("stories260K not found in " PREPACK_MODELS_DIR " (shared/models is absent)");
    snprintf(path, sizeof path, "%s/stories260K/stories260K.gguf", PREPACK_MODELS_DIR);

    prepack_engine_options eo;
    prepack_engine_options_init(&eo);
    eo.model = path;
    eo.threads = 2;
    prepack_engine *engine = NULL;
    CHECK_STATUS(prepack_engine_create(&eo, &engine), PREPACK_OK);
    if (engine == NULL) return finish();

    prepack_model_desc desc;
    prepack_model_desc_init(&desc);
    CHECK_STATUS(prepack_model_info(engine, &desc), PREPACK_OK);
    CHECK(desc.vocab_size == 512 && desc.n_layers == 5 && desc.context_length == 512);
    CHECK(strcmp(desc.architecture, "llama") == 0);

    for (int c = 0; c < 2; ++c) {
        char prompt[256];
        int32_t want_prompt[64], want[64], ids[64];
        CHECK(string_after(json, "prompt", c, prompt, sizeof prompt) > 0);
        const int n_prompt = int_array_after(json, "prompt_ids", c, want_prompt, 64);
        const int n_want = int_array_after(json, "greedy_ids", c, want, 64);
        CHECK(n_want == 48);

        size_t n_tok = 0;
        int32_t got_prompt[64];
        CHECK_STATUS(prepack_tokenize(engine, prompt, strlen(prompt), 1, got_prompt, 64, &n_tok), PREPACK_OK);
        CHECK((int)n_tok == n_prompt && memcmp(got_prompt, want_prompt, n_tok * sizeof(int32_t)) == 0);
        /* ABI 5: the same ids through prepack_tokenize_special, and without BOS. */
        CHECK_STATUS(prepack_tokenize_special(engine, prompt, strlen(prompt), 1, 0, got_prompt, 64, &n_tok), PREPACK_OK);
        CHECK((int)n_tok == n_prompt && memcmp(got_prompt, want_prompt, n_tok * sizeof(int32_t)) == 0);
        CHECK_STATUS(prepack_tokenize_special(engine, prompt, strlen(prompt), 0, 0, got_prompt, 64, &n_tok), PREPACK_OK);
        CHECK((int)n_tok == n_prompt - 1 && memcmp(got_prompt, want_prompt + 1, n_tok * sizeof(int32_t)) == 0);

        prepack_request rq;
        prepack_request_init(&rq);
        rq.prompt = prompt;
        rq.max_tokens = 48;
        rq.temperature = 0.0f;
        prepack_event end;
        const int n = pull_all(engine, &rq, ids, 64, &end);
        CHECK(n == 48 && memcmp(ids, want, sizeof(int32_t) * 48) == 0);
        CHECK(end.finish_reason == PREPACK_FINISH_LENGTH && end.status == PREPACK_OK);
        CHECK(end.usage.prompt_tokens == n_prompt && end.usage.completion_tokens == 48);

        struct collect got = {{0}, 0, 0, PREPACK_FINISH_NONE};
        CHECK_STATUS(prepack_generate(engine, &rq, on_event, &got), PREPACK_OK);
        CHECK(got.n == 48 && memcmp(got.ids, want, sizeof(int32_t) * 48) == 0);
        CHECK(got.ended && got.reason == PREPACK_FINISH_LENGTH);

        /* Same continuation from the prompt's token ids. */
        prepack_request_init(&rq);
        rq.prompt_tokens = want_prompt;
        rq.n_prompt_tokens = (size_t)n_prompt;
        rq.max_tokens = 48;
        rq.temperature = 0.0f;
        CHECK(pull_all(engine, &rq, ids, 64, NULL) == 48 && memcmp(ids, want, sizeof(int32_t) * 48) == 0);

        /* ABI 8, prompt log-probs: the prompt and the first 8 greedy tokens
        ** as one prompt; each greedy token, scored from the tokens before
        ** it, is the best alternative (greedy is the argmax). */
        {
            int32_t forced[72];
            memcpy(forced, want_prompt, sizeof(int32_t) * (size_t)n_prompt);
            memcpy(forced + n_prompt, want, sizeof(int32_t) * 8);
            prepack_request_init(&rq);
            CHECK(rq.prompt_logprobs == -1);
            rq.prompt_tokens = forced;
            rq.n_prompt_tokens = (size_t)n_prompt + 8;
            rq.max_tokens = 2;
            rq.temperature = 0.0f;
            rq.prompt_logprobs = 1;
            prepack_stream *st = NULL;
            CHECK_STATUS(prepack_generate_start(engine, &rq, &st), PREPACK_OK);
            prepack_event ev;
            prepack_event_init(&ev);
            int tokens = 0;
            while (st != NULL && prepack_stream_next(st, -1, &ev) == PREPACK_OK && ev.kind == PREPACK_EVENT_TOKEN) {
                if (tokens++ == 0) {
                    CHECK(ev.n_prompt_logprobs == (size_t)n_prompt + 7 && ev.prompt_n_top == 1);
                    for (size_t i = 0; i < ev.n_prompt_logprobs && ev.n_prompt_logprobs == (size_t)n_prompt + 7; ++i) {
                        CHECK(ev.prompt_token_ids[i] == forced[i + 1]);
                        CHECK(ev.prompt_logprobs[i] <= 0.0f && ev.prompt_top_logprobs[i] >= ev.prompt_logprobs[i] - 1e-5f);
                        if (i + 1 >= (size_t)n_prompt) CHECK(ev.prompt_top_ids[i] == forced[i + 1]);
                    }
                    CHECK(ev.token == want[8]);
                } else {
                    CHECK(ev.n_prompt_logprobs == 0);
                }
            }
            CHECK(tokens == 2 && ev.kind == PREPACK_EVENT_END && ev.status == PREPACK_OK);
            prepack_stream_destroy(st);
        }

        /* Detokenizing prompt + continuation gives the texts back. */
        char text[1024], want_text[512];
        size_t len = 0;
        int32_t all[128];
        memcpy(all, want_prompt, sizeof(int32_t) * (size_t)n_prompt);
        memcpy(all + n_prompt, want, sizeof(int32_t) * 48);
        CHECK_STATUS(prepack_detokenize(engine, all, (size_t)n_prompt + 48, text, sizeof text, &len), PREPACK_OK);
        CHECK(string_after(json, "greedy_text", c, want_text, sizeof want_text) > 0);
        CHECK(strncmp(text, prompt, strlen(prompt)) == 0);
        /* reference.json escapes newlines; compare the text before the first one. */
        const char *esc = strstr(want_text, "\\n");
        const size_t cmp = esc ? (size_t)(esc - want_text) : strlen(want_text);
        CHECK(strncmp(text + strlen(prompt), want_text, cmp) == 0);
    }
    prepack_engine_destroy(engine);
    free(json);
    return finish();
}
