/* A C program may free its engine from an atexit handler, with a stream
** still generating: exit() has destroyed the thread's C++ thread_local
** objects by then (the last-error message among them), so the ABI must not
** touch them. The handler's calls are checked here; the AddressSanitizer
** suite (scripts/sanitize.sh asan) is what catches a use after free. */
#include <stdlib.h>

#include "check.h"

static prepack_engine *g_engine = NULL;
static prepack_stream *g_stream = NULL;

static void destroy_at_exit(void) {
    prepack_engine_destroy(g_engine);
    /* The stream it cancelled stays readable to its END event. */
    prepack_event ev;
    prepack_event_init(&ev);
    prepack_status s;
    while ((s = prepack_stream_next(g_stream, 10000, &ev)) == PREPACK_OK && ev.kind == PREPACK_EVENT_TOKEN) {
    }
    if (s != PREPACK_OK || ev.finish_reason != PREPACK_FINISH_CANCELLED) {
        fprintf(stderr, "capi_atexit_test: the stream did not end CANCELLED: %s\n", prepack_status_str(s));
        _Exit(1);
    }
    prepack_stream_destroy(g_stream);
    /* A failing call still records its message. */
    s = prepack_engine_stats(NULL, NULL);
    if (s != PREPACK_INVALID_ARGUMENT || prepack_last_error()[0] == '\0') {
        fprintf(stderr, "capi_atexit_test: a call from the atexit handler failed: %s\n", prepack_status_str(s));
        _Exit(1);
    }
    printf("atexit handler: engine destroyed, last error \"%s\"\n", prepack_last_error());
}

int main(void) {
    prepack_engine_options eo;
    prepack_engine_options_init(&eo);
    eo.model = "synthetic:tiny";
    eo.threads = 1;
    CHECK_STATUS(prepack_engine_create(&eo, &g_engine), PREPACK_OK);
    if (g_engine == NULL) return finish();

    /* A long generation left running: the handler's destroy cancels it. */
    const int32_t prompt[] = {1, 17, 42, 99};
    prepack_request rq;
    prepack_request_init(&rq);
    rq.prompt_tokens = prompt;
    rq.n_prompt_tokens = 4;
    rq.max_tokens = 1900;
    rq.ignore_eos = 1;
    CHECK_STATUS(prepack_generate_start(g_engine, &rq, &g_stream), PREPACK_OK);
    if (g_stream == NULL) return finish();
    prepack_event ev;
    prepack_event_init(&ev);
    CHECK_STATUS(prepack_stream_next(g_stream, 10000, &ev), PREPACK_OK);
    CHECK(ev.kind == PREPACK_EVENT_TOKEN);
    /* Left generating: the handler's destroy of the engine ends it. */
    CHECK(prepack_last_error()[0] == '\0');
    /* A message longer than a short string's inline buffer, so that exit()
    ** frees heap memory the ABI would then write to. */
    CHECK_STATUS(prepack_engine_stats(NULL, NULL), PREPACK_INVALID_ARGUMENT);
    CHECK(strlen(prepack_last_error()) > 16);
    atexit(destroy_at_exit);
    const int rc = finish();
    exit(rc);
}
