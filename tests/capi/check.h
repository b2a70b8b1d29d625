/* A minimal test harness for the C tests of libprepack: CHECK records a
** failure and carries on; finish() prints "N passed, M failed" and returns the
** process exit code (77 = skipped, which ctest is told about). */
#ifndef PREPACK_TESTS_CHECK_H
#define PREPACK_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prepack/prepack.h"

static int g_passed = 0;
static int g_failed = 0;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (cond) {                                                              \
            ++g_passed;                                                          \
        } else {                                                                 \
            ++g_failed;                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                        \
    } while (0)

/* CHECK that a call returned `want`, printing the library's message if not. */
#define CHECK_STATUS(call, want)                                                 \
    do {                                                                         \
        prepack_status st_ = (call);                                             \
        if (st_ == (want)) {                                                     \
            ++g_passed;                                                          \
        } else {                                                                 \
            ++g_failed;                                                          \
            fprintf(stderr, "%s:%d: %s returned %s (%s), wanted %s\n", __FILE__, __LINE__, #call, \
                    prepack_status_str(st_), prepack_last_error(), prepack_status_str(want)); \
        }                                                                        \
    } while (0)

static inline int finish(void) {
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}

static inline int skip(const char *why) {
    printf("skipped: %s\n", why);
    return 77;
}

/* Reads a whole file into a NUL-terminated malloc'd buffer, or NULL. */
static inline char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = (char *)malloc((size_t)n + 1);
    if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf != NULL) buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Streams a request to its end through the pull API; stores up to `cap` ids
** in `ids` and returns how many were generated (-1 on error). */
static inline int pull_all(prepack_engine *engine, const prepack_request *rq, int32_t *ids, int cap,
                    prepack_event *end) {
    prepack_stream *s = NULL;
    if (prepack_generate_start(engine, rq, &s) != PREPACK_OK) return -1;
    prepack_event ev;
    prepack_event_init(&ev);
    int n = 0;
    while (prepack_stream_next(s, -1, &ev) == PREPACK_OK) {
        if (ev.kind == PREPACK_EVENT_END) {
            if (end != NULL) *end = ev;
            break;
        }
        if (n < cap) ids[n] = ev.token;
        ++n;
    }
    prepack_stream_destroy(s);
    return n;
}

#endif
