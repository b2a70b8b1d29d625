/* Runs a small offline batch through libprepack and prints each result.
**   cc batch.c $(pkg-config --cflags --libs prepack) -o batch
**   ./batch [MODEL] */
#include <stdio.h>

#include <prepack/prepack.h>

static void progress(size_t done, size_t total, void *user) {
    (void)user;
    fprintf(stderr, "\r%zu/%zu done", done, total);
    if (done == total) fputc('\n', stderr);
}

int main(int argc, char **argv) {
    static const char *const prompts[] = {
        "Once upon a time",
        "Tom and his dog Max went to the beach. They",
        "The little girl was sad because",
        "One day, a cat",
    };
    enum { N = sizeof prompts / sizeof prompts[0] };

    prepack_engine_options options;
    prepack_engine_options_init(&options);
    options.model = argc > 1 ? argv[1] : "synthetic:tiny";
    prepack_engine *engine;
    if (prepack_engine_create(&options, &engine) != PREPACK_OK) {
        fprintf(stderr, "cannot load %s: %s\n", options.model, prepack_last_error());
        return 1;
    }
    prepack_request requests[N];
    const prepack_request *pointers[N];
    for (int i = 0; i < N; ++i) {
        prepack_request_init(&requests[i]);
        requests[i].prompt = prompts[i];
        requests[i].max_tokens = 24;
        requests[i].temperature = 0.0f;
        pointers[i] = &requests[i];
    }
    prepack_batch_options batch;
    prepack_batch_options_init(&batch);
    batch.progress = progress;
    prepack_result *results;
    if (prepack_generate_batch(engine, pointers, N, &batch, &results) != PREPACK_OK) {
        fprintf(stderr, "batch failed: %s\n", prepack_last_error());
        prepack_engine_destroy(engine);
        return 1;
    }
    int failed = 0;
    for (int i = 0; i < N; ++i) {
        if (results[i].status != PREPACK_OK) {
            printf("[%d] error: %s\n", i, results[i].message);
            ++failed;
        } else {
            printf("[%d] %s%s\n", i, prompts[i], results[i].text);
        }
    }
    prepack_results_free(results, N);
    prepack_engine_destroy(engine);
    return failed ? 1 : 0;
}
