/* Asks a chat model one question through its own chat template (the GGUF's
** tokenizer.chat_template) and streams the answer; a reasoning model's
** thinking goes to stderr.
**   cc chat.c $(pkg-config --cflags --libs prepack) -o chat
**   ./chat build/models/SmolLM2-135M-Instruct.Q4_1.gguf "What is the capital of France?" */
#include <stdio.h>

#include <prepack/prepack.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [QUESTION]\n", argv[0]);
        return 2;
    }
    prepack_engine_options options;
    prepack_engine_options_init(&options);
    options.model = argv[1];
    prepack_engine *engine;
    if (prepack_engine_create(&options, &engine) != PREPACK_OK) {
        fprintf(stderr, "cannot load %s: %s\n", options.model, prepack_last_error());
        return 1;
    }
    prepack_chat_message messages[2];
    prepack_chat_message_init(&messages[0]);
    messages[0].role = "system";
    messages[0].content = "You are a helpful assistant. Answer briefly.";
    prepack_chat_message_init(&messages[1]);
    messages[1].role = "user";
    messages[1].content = argc > 2 ? argv[2] : "What is the capital of France?";
    prepack_chat chat;
    prepack_chat_init(&chat);
    chat.messages = messages;
    chat.n_messages = 2;

    prepack_request request;
    prepack_request_init(&request);
    request.chat = &chat;
    request.max_tokens = 64;
    request.temperature = 0.0f;
    prepack_stream *stream;
    if (prepack_generate_start(engine, &request, &stream) != PREPACK_OK) {
        /* e.g. FAILED_PRECONDITION: the model has no chat template */
        fprintf(stderr, "request failed: %s\n", prepack_last_error());
        prepack_engine_destroy(engine);
        return 1;
    }
    prepack_event event;
    prepack_event_init(&event);
    int rc = 0;
    while (prepack_stream_next(stream, -1, &event) == PREPACK_OK) {
        if (event.kind == PREPACK_EVENT_TOKEN) {
            fwrite(event.reasoning, 1, event.reasoning_len, stderr);
            fwrite(event.text, 1, event.text_len, stdout);
            fflush(stdout);
        } else {
            printf("\n");
            rc = event.status == PREPACK_OK ? 0 : 1;
            if (rc) fprintf(stderr, "ended: %s\n", event.message);
        }
    }
    prepack_stream_destroy(stream);
    prepack_engine_destroy(engine);
    return rc;
}
