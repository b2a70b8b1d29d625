/* Every function of the C ABI given NULL or invalid arguments returns
** INVALID_ARGUMENT (or the documented status) with a message, and never
** crashes; callers built against an older, shorter struct still work. */
#include <stddef.h>

#include "check.h"

/* INVALID_ARGUMENT and a non-empty message naming the problem. */
#define CHECK_INVALID(call)                                  \
    do {                                                     \
        CHECK_STATUS(call, PREPACK_INVALID_ARGUMENT);        \
        CHECK(prepack_last_error()[0] != '\0');              \
    } while (0)

int main(void) {
    prepack_engine_options eo;
    prepack_engine *engine = NULL;

    /* Engine creation. */
    CHECK_INVALID(prepack_engine_create(NULL, &engine));
    prepack_engine_options_init(&eo);
    CHECK_INVALID(prepack_engine_create(&eo, NULL));
    CHECK_INVALID(prepack_engine_create(&eo, &engine));   /* no model */
    CHECK(strstr(prepack_last_error(), "model") != NULL);
    eo.model = "synthetic:tiny";
    eo.max_batch_tokens = 0;
    CHECK_INVALID(prepack_engine_create(&eo, &engine));
    eo.max_batch_tokens = 64;
    eo.struct_size = 0;
    CHECK_INVALID(prepack_engine_create(&eo, &engine));
    CHECK(strstr(prepack_last_error(), "struct_size") != NULL);
    prepack_engine_options_init(&eo);
    eo.model = "/no/such/file.gguf";
    CHECK_STATUS(prepack_engine_create(&eo, &engine), PREPACK_NOT_FOUND);
    CHECK(strstr(prepack_last_error(), "/no/such/file.gguf") != NULL);
    eo.model = "synthetic:tiny";
    eo.device = (prepack_device)5;
    CHECK_INVALID(prepack_engine_create(&eo, &engine));
    CHECK(strstr(prepack_last_error(), "device") != NULL);
    /* CUDA: an engine where a GPU is usable, else a clear refusal naming it. */
    eo.device = PREPACK_DEVICE_CUDA;
    {
        const prepack_status s = prepack_engine_create(&eo, &engine);
        CHECK(s == PREPACK_OK || s == PREPACK_UNAVAILABLE || s == PREPACK_UNIMPLEMENTED);
        if (s == PREPACK_OK) {
            prepack_engine_destroy(engine);
            engine = NULL;
        } else {
            CHECK(strstr(prepack_last_error(), "CUDA") != NULL);
        }
    }
    eo.device = PREPACK_DEVICE_CPU;
    eo.policy = (prepack_policy)77;
    CHECK_INVALID(prepack_engine_create(&eo, &engine));
    CHECK(strstr(prepack_last_error(), "policy") != NULL);
    eo.policy = PREPACK_POLICY_FCFS;
    eo.dtype = (prepack_dtype)9;
    CHECK_INVALID(prepack_engine_create(&eo, &engine));
    CHECK(strstr(prepack_last_error(), "dtype") != NULL);
    CHECK(engine == NULL);
    /* bf16 weights load and serve (their numbers are checked in bf16_test). */
    eo.dtype = PREPACK_DTYPE_BF16;
    CHECK_STATUS(prepack_engine_create(&eo, &engine), PREPACK_OK);
    prepack_engine_destroy(engine);
    engine = NULL;

    /* An older caller: options end before max_batch_tokens; the rest (garbage
    ** here) must be ignored and take defaults. */
    memset(&eo, 0xAB, sizeof eo);
    eo.struct_size = offsetof(prepack_engine_options, max_batch_tokens);
    eo.model = "synthetic:tiny";
    eo.device = PREPACK_DEVICE_CPU;
    eo.threads = 2;
    eo.kv_budget_bytes = 0;
    eo.kv_block_size = 16;
    CHECK_STATUS(prepack_engine_create(&eo, &engine), PREPACK_OK);
    if (engine == NULL) return finish();

    /* Model info, stats. */
    prepack_model_desc desc;
    prepack_stats stats;
    prepack_model_desc_init(&desc);
    prepack_stats_init(&stats);
    CHECK_INVALID(prepack_model_info(NULL, &desc));
    CHECK_INVALID(prepack_model_info(engine, NULL));
    CHECK_INVALID(prepack_engine_stats(NULL, &stats));
    CHECK_INVALID(prepack_engine_stats(engine, NULL));
    /* An older, shorter stats struct gets only its own fields written. */
    unsigned char small[sizeof(size_t) + 2 * sizeof(uint64_t) + 8];
    memset(small, 0xCD, sizeof small);
    const size_t small_size = sizeof(size_t) + 2 * sizeof(uint64_t);
    memcpy(small, &small_size, sizeof small_size);
    CHECK_STATUS(prepack_engine_stats(engine, (prepack_stats *)(void *)small), PREPACK_OK);
    CHECK(small[sizeof small - 1] == 0xCD);

    /* Text. */
    int32_t ids[8];
    size_t n = 0;
    char text[8];
    CHECK_INVALID(prepack_tokenize(NULL, "hi", 2, 1, ids, 8, &n));
    CHECK_INVALID(prepack_tokenize(engine, NULL, 2, 1, ids, 8, &n));
    CHECK_INVALID(prepack_tokenize(engine, "hi", 2, 1, NULL, 8, &n));
    CHECK_INVALID(prepack_tokenize(engine, "hi", 2, 1, ids, 8, NULL));
    CHECK_INVALID(prepack_tokenize(engine, "\xff\xfe", 2, 1, ids, 8, &n));   /* not UTF-8 */
    CHECK_STATUS(prepack_tokenize(engine, "hello world, a longer text", 26, 1, ids, 2, &n), PREPACK_OUT_OF_RANGE);
    CHECK(n > 2);
    CHECK_STATUS(prepack_tokenize(engine, "hello", 5, 1, NULL, 0, &n), PREPACK_OUT_OF_RANGE);
    CHECK(n > 0);
    CHECK_INVALID(prepack_detokenize(NULL, ids, 1, text, 8, &n));
    CHECK_INVALID(prepack_detokenize(engine, NULL, 1, text, 8, &n));
    CHECK_INVALID(prepack_detokenize(engine, ids, 1, text, 8, NULL));
    ids[0] = -5;
    CHECK_INVALID(prepack_detokenize(engine, ids, 1, text, 8, &n));
    ids[0] = 100000;
    CHECK_INVALID(prepack_detokenize(engine, ids, 1, text, 8, &n));
    CHECK_STATUS(prepack_tokenize(engine, "hello there", 11, 0, ids, 8, &n), PREPACK_OK);
    size_t len = 0;
    CHECK_STATUS(prepack_detokenize(engine, ids, n, text, 4, &len), PREPACK_OUT_OF_RANGE);
    CHECK(len == 12);   /* " hello there": without a BOS the dummy-prefix space is kept */
    /* parse_special: the control token's text is that token (EOS of the
    ** synthetic vocabulary, "</s>" = 2), else ordinary text of other ids. */
    CHECK_STATUS(prepack_tokenize_special(engine, "</s>", 4, 0, 1, ids, 8, &n), PREPACK_OK);
    CHECK(n == 1 && ids[0] == 2);
    CHECK_STATUS(prepack_tokenize_special(engine, "</s>", 4, 0, 0, ids, 8, &n), PREPACK_OK);
    CHECK(n >= 2 && ids[0] != 2);
    CHECK_INVALID(prepack_tokenize_special(NULL, "hi", 2, 1, 0, ids, 8, &n));

    /* Requests and streams. */
    prepack_request rq;
    prepack_stream *s = NULL;
    prepack_event ev;
    prepack_request_init(&rq);
    prepack_event_init(&ev);
    CHECK_INVALID(prepack_generate_start(NULL, &rq, &s));
    CHECK_INVALID(prepack_generate_start(engine, NULL, &s));
    CHECK_INVALID(prepack_generate_start(engine, &rq, NULL));
    CHECK_INVALID(prepack_generate_start(engine, &rq, &s));   /* no prompt */
    rq.prompt = "";
    rq.add_bos = 0;   /* empty and no BOS: nothing to start from */
    CHECK_INVALID(prepack_generate_start(engine, &rq, &s));
    CHECK(strstr(prepack_last_error(), "empty") != NULL);
    rq.add_bos = 1;
    rq.prompt = "fine";
    rq.temperature = -1.0f;
    CHECK_INVALID(prepack_generate_start(engine, &rq, &s));
    CHECK(strstr(prepack_last_error(), "temperature") != NULL);
    rq.temperature = 1.0f;
    rq.max_tokens = 0;
    CHECK_INVALID(prepack_generate_start(engine, &rq, &s));
    rq.max_tokens = 4;
    rq.n_stop = 2;   /* stop == NULL */
    CHECK_INVALID(prepack_generate_start(engine, &rq, &s));
    rq.n_stop = 0;
    rq.logprobs = 1000;
    CHECK_INVALID(prepack_generate_start(engine, &rq, &s));
    rq.logprobs = 0;
    rq.lazy = 1;
    rq.lazy_schedule = "1:0.5,0:0.3";   /* layers out of order */
    CHECK_INVALID(prepack_generate_start(engine, &rq, &s));
    CHECK(strstr(prepack_last_error(), "0:0.3") != NULL);
    rq.lazy_schedule = NULL;
    rq.lazy_keep_ratio = 1.5f;
    CHECK_INVALID(prepack_generate_start(engine, &rq, &s));
    CHECK(strstr(prepack_last_error(), "keep ratio") != NULL);
    rq.lazy_keep_ratio = 0.0f;
    rq.lazy_revive_limit = -2;   /* -1 is "no bound"; below that means nothing */
    CHECK_INVALID(prepack_generate_start(engine, &rq, &s));
    CHECK(strstr(prepack_last_error(), "revive limit") != NULL);
    rq.lazy_revive_limit = 0;
    rq.lazy = 0;
    rq.lazy_schedule = "1:0.5";   /* a schedule without lazy on */
    CHECK_INVALID(prepack_generate_start(engine, &rq, &s));
    rq.lazy_schedule = NULL;
    const int32_t bad_ids[2] = {1, 999999};
    rq.prompt_tokens = bad_ids;
    rq.n_prompt_tokens = 2;
    CHECK_INVALID(prepack_generate_start(engine, &rq, &s));
    CHECK(s == NULL);
    CHECK_INVALID(prepack_stream_next(NULL, 0, &ev));
    CHECK_INVALID(prepack_stream_cancel(NULL));
    CHECK_INVALID(prepack_generate(engine, &rq, NULL, NULL));
    prepack_stream_destroy(NULL);
    prepack_engine_destroy(NULL);
    prepack_results_free(NULL, 3);

    /* An older request struct without logprobs and later fields: the garbage
    ** after its end must be ignored. */
    prepack_request old;
    memset(&old, 0x7F, sizeof old);
    old.struct_size = offsetof(prepack_request, logprobs);
    old.prompt = "an old caller";
    old.prompt_tokens = NULL;
    old.n_prompt_tokens = 0;
    old.add_bos = 1;
    old.max_tokens = 5;
    old.temperature = 0.0f;
    old.top_k = 0;
    old.top_p = 1.0f;
    old.min_p = 0.0f;
    old.repetition_penalty = 1.0f;
    old.seed = 1;
    old.stop = NULL;
    old.n_stop = 0;
    int32_t got[8];
    prepack_event end;
    prepack_event_init(&end);
    CHECK(pull_all(engine, &old, got, 8, &end) == 5);
    CHECK(end.status == PREPACK_OK);
    /* An older event struct: the library writes no further than its size. */
    CHECK_STATUS(prepack_generate_start(engine, &old, &s), PREPACK_OK);
    unsigned char small_ev[offsetof(prepack_event, text) + 16];
    memset(small_ev, 0xEE, sizeof small_ev);
    const size_t small_ev_size = offsetof(prepack_event, text);
    memcpy(small_ev, &small_ev_size, sizeof small_ev_size);
    CHECK_STATUS(prepack_stream_next(s, -1, (prepack_event *)(void *)small_ev), PREPACK_OK);
    CHECK(small_ev[sizeof small_ev - 1] == 0xEE);
    prepack_stream_destroy(s);

    /* An older stats struct, before ABI 8's counts: nothing written past it. */
    prepack_stats old_stats;
    memset(&old_stats, 0x5A, sizeof old_stats);
    old_stats.struct_size = offsetof(prepack_stats, steps);
    CHECK_STATUS(prepack_engine_stats(engine, &old_stats), PREPACK_OK);
    CHECK(old_stats.struct_size == offsetof(prepack_stats, steps));
    CHECK(old_stats.requests_finished >= 1 && old_stats.generated_tokens >= 5);   /* the old caller's 5 */
    const unsigned char *tail = (const unsigned char *)&old_stats + offsetof(prepack_stats, steps);
    for (size_t i = 0; i < sizeof old_stats - offsetof(prepack_stats, steps); ++i) CHECK(tail[i] == 0x5A);

    /* Batch. */
    prepack_result *results = NULL;
    const prepack_request *one[1] = {&rq};
    CHECK_INVALID(prepack_generate_batch(NULL, one, 1, NULL, &results));
    CHECK_INVALID(prepack_generate_batch(engine, NULL, 1, NULL, &results));
    CHECK_INVALID(prepack_generate_batch(engine, one, 0, NULL, &results));
    CHECK_INVALID(prepack_generate_batch(engine, one, 1, NULL, NULL));
    prepack_stream *streams[1] = {NULL};
    CHECK_INVALID(prepack_generate_batch_start(NULL, one, 1, streams));
    CHECK_INVALID(prepack_generate_batch_start(engine, NULL, 1, streams));
    CHECK_INVALID(prepack_generate_batch_start(engine, one, 0, streams));
    CHECK_INVALID(prepack_generate_batch_start(engine, one, 1, NULL));
    CHECK(streams[0] == NULL);

    CHECK(strcmp(prepack_status_str(PREPACK_RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED") == 0);
    CHECK(strcmp(prepack_status_str((prepack_status)99), "UNKNOWN_STATUS_CODE") == 0);
    prepack_engine_destroy(engine);
    return finish();
}
