#define _POSIX_C_SOURCE 200809L   /* nanosleep under strict C11 */
/* The C ABI on a synthetic model: batch results equal single runs, eight
** threads streaming at once get exactly their solo tokens, cancellation from
** another thread ends a stream promptly and frees its KV. */
#include <pthread.h>
#include <time.h>

#include "check.h"

#define N_REQ 8
#define MAX_IDS 64

static prepack_engine *g_engine;

static void make_request(prepack_request *rq, int i, char *prompt_buf) {
    prepack_request_init(rq);
    snprintf(prompt_buf, 64, "request %d says %.*s", i, i * 3, "xyzxyzxyzxyzxyzxyzxyzxyzxyz");
    rq->prompt = prompt_buf;
    rq->max_tokens = 10 + 4 * i;
    rq->temperature = (i % 2) ? 0.8f : 0.0f;
    rq->top_k = 30;
    rq->seed = (uint64_t)(1000 + i);
    rq->ignore_eos = 1;
}

struct job {
    int     index;
    int32_t ids[MAX_IDS];
    int     n;
};

static void *run_job(void *arg) {
    struct job *j = (struct job *)arg;
    char prompt[64];
    prepack_request rq;
    make_request(&rq, j->index, prompt);
    j->n = pull_all(g_engine, &rq, j->ids, MAX_IDS, NULL);
    return NULL;
}

static void *cancel_later(void *arg) {
    const struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    prepack_stream_cancel((prepack_stream *)arg);
    return NULL;
}

static size_t g_progress_calls, g_progress_last;
static void on_progress(size_t done, size_t total, void *user) {
    (void)user;
    ++g_progress_calls;
    g_progress_last = done;
    if (done > total) ++g_failed;
}

/* The stats once the engine thread is past its last step: a step's counts
** go in a moment after the END event it delivered, and the running count
** drops to 0 after them. */
static void idle_stats(prepack_stats *st) {
    for (int i = 0; i < 200; ++i) {
        CHECK_STATUS(prepack_engine_stats(g_engine, st), PREPACK_OK);
        if (st->requests_running == 0 && st->requests_waiting == 0) return;
        const struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    CHECK(!"the engine never went idle");
}

static uint64_t kv_used(void) {
    prepack_stats st;
    prepack_stats_init(&st);
    prepack_engine_stats(g_engine, &st);
    return st.kv_bytes_used;
}

int main(void) {
    prepack_engine_options eo;
    prepack_engine_options_init(&eo);
    eo.model = "synthetic:tiny";
    eo.threads = 2;
    eo.max_batch_tokens = 128;
    CHECK_STATUS(prepack_engine_create(&eo, &g_engine), PREPACK_OK);
    if (g_engine == NULL) return finish();
    CHECK(strcmp(prepack_version(), PREPACK_VERSION_STRING) == 0);
    CHECK(prepack_abi_version() == PREPACK_ABI_VERSION);

    /* Solo runs, one at a time: the expectation for everything below. */
    struct job solo[N_REQ];
    for (int i = 0; i < N_REQ; ++i) {
        solo[i].index = i;
        run_job(&solo[i]);
        CHECK(solo[i].n == 10 + 4 * i);
    }

    /* Eight threads at once. */
    pthread_t threads[N_REQ];
    struct job par[N_REQ];
    for (int i = 0; i < N_REQ; ++i) {
        par[i].index = i;
        pthread_create(&threads[i], NULL, run_job, &par[i]);
    }
    for (int i = 0; i < N_REQ; ++i) {
        pthread_join(threads[i], NULL);
        CHECK(par[i].n == solo[i].n && memcmp(par[i].ids, solo[i].ids, sizeof(int32_t) * (size_t)solo[i].n) == 0);
    }

    /* The same requests as one offline batch. */
    char prompts[N_REQ][64];
    prepack_request reqs[N_REQ];
    const prepack_request *ptrs[N_REQ];
    for (int i = 0; i < N_REQ; ++i) {
        make_request(&reqs[i], i, prompts[i]);
        ptrs[i] = &reqs[i];
    }
    prepack_batch_options bo;
    prepack_batch_options_init(&bo);
    bo.progress = on_progress;
    prepack_result *results = NULL;
    CHECK_STATUS(prepack_generate_batch(g_engine, ptrs, N_REQ, &bo, &results), PREPACK_OK);
    for (int i = 0; results != NULL && i < N_REQ; ++i) {
        CHECK(results[i].status == PREPACK_OK && results[i].finish_reason == PREPACK_FINISH_LENGTH);
        CHECK((int)results[i].n_tokens == solo[i].n &&
              memcmp(results[i].tokens, solo[i].ids, sizeof(int32_t) * (size_t)solo[i].n) == 0);
        CHECK(results[i].text != NULL && strlen(results[i].text) == results[i].text_len);
    }
    CHECK(g_progress_calls == N_REQ && g_progress_last == N_REQ);
    prepack_results_free(results, N_REQ);

    /* A bad request inside a batch fails alone. */
    reqs[3].top_p = 2.0f;
    CHECK_STATUS(prepack_generate_batch(g_engine, ptrs, N_REQ, NULL, &results), PREPACK_OK);
    CHECK(results[3].status == PREPACK_INVALID_ARGUMENT && strstr(results[3].message, "top_p") != NULL);
    CHECK(results[2].status == PREPACK_OK && (int)results[2].n_tokens == solo[2].n);
    prepack_results_free(results, N_REQ);

    /* The streaming batch: poll every stream without blocking; each ends
    ** with its solo tokens, and the bad request's stream holds only its error. */
    prepack_stream *bs[N_REQ];
    CHECK_STATUS(prepack_generate_batch_start(g_engine, ptrs, N_REQ, bs), PREPACK_OK);
    int32_t got[N_REQ][MAX_IDS];
    int n_got[N_REQ] = {0}, ended[N_REQ] = {0}, open_streams = N_REQ;
    prepack_event bev;
    prepack_event_init(&bev);
    while (open_streams > 0) {
        for (int i = 0; i < N_REQ; ++i) {
            if (ended[i]) continue;
            const prepack_status bst = prepack_stream_next(bs[i], 0, &bev);
            if (bst == PREPACK_DEADLINE_EXCEEDED) continue;
            CHECK_STATUS(bst, PREPACK_OK);
            if (bst == PREPACK_OK && bev.kind == PREPACK_EVENT_TOKEN && n_got[i] < MAX_IDS) {
                got[i][n_got[i]++] = bev.token;
                continue;
            }
            ended[i] = 1;
            --open_streams;
            if (i == 3) {
                CHECK(bev.status == PREPACK_INVALID_ARGUMENT && bev.finish_reason == PREPACK_FINISH_ERROR);
                CHECK(strstr(bev.message, "top_p") != NULL);
                CHECK(n_got[i] == 0);
            } else {
                CHECK(bev.status == PREPACK_OK && bev.finish_reason == PREPACK_FINISH_LENGTH);
                CHECK(n_got[i] == solo[i].n && memcmp(got[i], solo[i].ids, sizeof(int32_t) * (size_t)solo[i].n) == 0);
            }
            CHECK_STATUS(prepack_stream_next(bs[i], 0, &bev), PREPACK_OUT_OF_RANGE);
        }
    }
    for (int i = 0; i < N_REQ; ++i) prepack_stream_destroy(bs[i]);
    CHECK_STATUS(prepack_generate_batch_start(g_engine, ptrs, 0, bs), PREPACK_INVALID_ARGUMENT);

    /* LazyLLM through the ABI: keep ratio 1.0 scores but keeps every token,
    ** so the tokens are those of an unpruned run; the default schedule
    ** prunes a long prompt and says how much. */
    {
        int32_t long_prompt[300];
        for (int t = 0; t < 300; ++t) long_prompt[t] = 1 + (t * 37) % 500;
        prepack_request lq;
        prepack_request_init(&lq);
        lq.prompt_tokens = long_prompt;
        lq.n_prompt_tokens = 300;
        lq.max_tokens = 6;
        lq.temperature = 0.0f;
        lq.ignore_eos = 1;
        int32_t plain[MAX_IDS], kept[MAX_IDS], pruned[MAX_IDS];
        prepack_event e_kept, e_pruned;
        prepack_stats s0, s1, s2, s3;
        prepack_stats_init(&s0);
        prepack_stats_init(&s1);
        prepack_stats_init(&s2);
        prepack_stats_init(&s3);
        idle_stats(&s0);
        const int n_plain = pull_all(g_engine, &lq, plain, MAX_IDS, NULL);
        idle_stats(&s1);
        /* ABI 8's counts: 300 prompt tokens in chunks of the 128-token step
        ** budget (3 prefill steps, each with the whole budget), every one
        ** through every layer, looked up in shared KV (none under FCFS). */
        CHECK(s1.prefill_steps - s0.prefill_steps == 3);
        CHECK(s1.prefill_step_tokens - s0.prefill_step_tokens == 300);
        CHECK(s1.prefill_step_capacity - s0.prefill_step_capacity == 3 * 128);
        CHECK(s1.steps - s0.steps == 3 + 5);   /* and a step per later token */
        const uint64_t layers = (s1.prompt_token_layers - s0.prompt_token_layers) / 300;
        CHECK(layers >= 1 && s1.prompt_token_layers - s0.prompt_token_layers == 300 * layers);
        CHECK(s1.prompt_token_layers_computed - s0.prompt_token_layers_computed == 300 * layers);
        CHECK(s1.prefix_query_requests - s0.prefix_query_requests == 1);
        CHECK(s1.prefix_query_tokens - s0.prefix_query_tokens == 300);
        CHECK(s1.prefix_hit_tokens == s0.prefix_hit_tokens && s1.prefix_hit_requests == s0.prefix_hit_requests);
        lq.lazy = 1;
        lq.lazy_keep_ratio = 1.0f;
        const int n_kept = pull_all(g_engine, &lq, kept, MAX_IDS, &e_kept);
        CHECK(n_plain == 6 && n_kept == 6 && memcmp(plain, kept, sizeof(int32_t) * 6) == 0);
        CHECK(e_kept.status == PREPACK_OK && e_kept.usage.pruned_fraction == 0.0);
        lq.lazy_keep_ratio = 0.0f;   /* the default schedule */
        idle_stats(&s2);
        const int n_pruned = pull_all(g_engine, &lq, pruned, MAX_IDS, &e_pruned);
        CHECK(n_pruned == 6);
        CHECK(e_pruned.status == PREPACK_OK);
        CHECK(e_pruned.usage.pruned_fraction > 0.3 && e_pruned.usage.pruned_fraction < 0.7);
        idle_stats(&s3);
        /* A pruned prompt goes in one piece, alone in a step past the
        ** budget: that step's capacity is its length. The token-layers it
        ** skipped are the fraction its usage reports. */
        CHECK(s3.prefill_steps - s2.prefill_steps == 1);
        CHECK(s3.prefill_step_tokens - s2.prefill_step_tokens == 300);
        CHECK(s3.prefill_step_capacity - s2.prefill_step_capacity == 300);
        const double skipped = (double)((s3.prompt_token_layers - s2.prompt_token_layers) -
                                        (s3.prompt_token_layers_computed - s2.prompt_token_layers_computed));
        CHECK(s3.prompt_token_layers - s2.prompt_token_layers == 300 * layers);
        const double off = skipped - 300.0 * (double)layers * e_pruned.usage.pruned_fraction;
        CHECK(off <= 1.0 && off >= -1.0);   /* rounded once per step */
        prepack_stats ls;
        prepack_stats_init(&ls);
        CHECK_STATUS(prepack_engine_stats(g_engine, &ls), PREPACK_OK);
        CHECK(ls.prompt_fraction_computed < 1.0);
    }

    /* Cancellation from another thread. */
    prepack_request rq;
    prepack_request_init(&rq);
    rq.prompt = "a very long story";
    rq.max_tokens = 1900;
    rq.ignore_eos = 1;
    prepack_stream *s = NULL;
    CHECK_STATUS(prepack_generate_start(g_engine, &rq, &s), PREPACK_OK);
    pthread_t canceller;
    pthread_create(&canceller, NULL, cancel_later, s);
    prepack_event ev;
    prepack_event_init(&ev);
    int tokens = 0;
    prepack_status st;
    while ((st = prepack_stream_next(s, 10000, &ev)) == PREPACK_OK && ev.kind == PREPACK_EVENT_TOKEN) ++tokens;
    pthread_join(canceller, NULL);
    CHECK(st == PREPACK_OK && ev.kind == PREPACK_EVENT_END);
    CHECK(ev.finish_reason == PREPACK_FINISH_CANCELLED && ev.status == PREPACK_CANCELLED);
    CHECK(tokens < 1900);
    CHECK_STATUS(prepack_stream_next(s, 0, &ev), PREPACK_OUT_OF_RANGE);
    prepack_stream_destroy(s);
    for (int i = 0; i < 200 && kv_used() != 0; ++i) {
        const struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    CHECK(kv_used() == 0);

    /* The push API stops when the callback asks. */
    prepack_stats stats;
    prepack_stats_init(&stats);
    CHECK_STATUS(prepack_engine_stats(g_engine, &stats), PREPACK_OK);
    CHECK(stats.requests_submitted == stats.requests_finished);
    CHECK(stats.generated_tokens > 0 && stats.kv_bytes_total > 0);

    prepack_engine_destroy(g_engine);
    return finish();
}
