/* Streams one completion to stdout through libprepack's pull API.
**   cc stream.c $(pkg-config --cflags --libs prepack) -o stream
**   ./stream [MODEL] [PROMPT]      (MODEL defaults to synthetic:tiny) */
#include <stdio.h>

#include <prepack/prepack.h>

int main(int argc, char **argv) {
    prepack_engine_options options;
    prepack_engine_options_init(&options);
    options.model = argc > 1 ? argv[1] : "synthetic:tiny";

    prepack_engine *engine;
    if (prepack_engine_create(&options, &engine) != PREPACK_OK) {
        fprintf(stderr, "cannot load %s: %s\n", options.model, prepack_last_error());
        return 1;
    }
    prepack_request request;
    prepack_request_init(&request);
    request.prompt = argc > 2 ? argv[2] : "Once upon a time";
    request.max_tokens = 48;
    request.temperature = 0.0f;

    prepack_stream *stream;
    if (prepack_generate_start(engine, &request, &stream) != PREPACK_OK) {
        fprintf(stderr, "request failed: %s\n", prepack_last_error());
        prepack_engine_destroy(engine);
        return 1;
    }
    prepack_event event;
    prepack_event_init(&event);
    int rc = 0;
    while (prepack_stream_next(stream, -1, &event) == PREPACK_OK) {
        if (event.kind == PREPACK_EVENT_TOKEN) {
            fwrite(event.text, 1, event.text_len, stdout);
            fflush(stdout);
        } else {
            printf("\n[%d prompt + %d generated tokens, first token after %.1f ms]\n", event.usage.prompt_tokens,
                   event.usage.completion_tokens, event.usage.ttft_ms);
            rc = event.status == PREPACK_OK ? 0 : 1;
            break;
        }
    }
    prepack_stream_destroy(stream);
    prepack_engine_destroy(engine);
    return rc;
}
