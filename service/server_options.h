// prepackd's command line: what to serve, where, and with which limits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace prepackd {

struct ServerOptions {
    std::string model;                                  // GGUF path or synthetic:NAME
    std::string listen = "127.0.0.1:50051";             // loopback unless told otherwise
    int32_t     threads = 0;                            // engine CPU threads (0 = all)
    uint64_t    kv_memory = 0;                          // KV budget in bytes (0 = engine default)
    int32_t     max_batch_tokens = 1024;                // tokens per forward step
    int32_t     max_running = 64;                       // sequences decoding at once
    int32_t     max_queue = 256;                        // requests in flight before RESOURCE_EXHAUSTED
    double      batch_share = 0.5;                      // one GenerateBatch call's window: this fraction of max_queue
    double      interactive_reserve = 0.25;             // fraction of max_queue batch members never take
    uint64_t    max_prompt_bytes = 0;                   // longest text prompt tokenized (0 = from the model)
    std::string policy = "lru";                         // fcfs | lru | batchllm (lru: prefix caching, as vLLM)
    std::string dtype = "f32";                          // f32 | bf16
    std::string device = "cpu";                         // cpu | cuda
    std::string chat_template_file;                     // Jinja chat template instead of the model's ("" = the model's)
    double      grace_seconds = 10.0;                   // SIGTERM: time left to in-flight streams
    std::string tls_cert;                               // PEM files; both or neither
    std::string tls_key;
    std::string auth_token_file;                        // shared bearer token, one line
    int32_t     max_message_bytes = 16 << 20;           // gRPC send and receive limit
    int32_t     stream_buffer = 16;                     // responses queued per stream before the pump waits
    std::string http_listen = "127.0.0.1:8080";         // the OpenAI-compatible HTTP API ("" or "off": none)
    std::string model_name;                             // the model's id over HTTP ("" = the GGUF file's stem)
    int32_t     http_threads = 0;                       // HTTP connections served at once (0 = --max-queue + 16)
};

// The id HTTP clients name the model by: --model-name, or else the model
// file's name without its directory and ".gguf" ("synthetic:tiny" as given).
std::string ServedModelId(const ServerOptions& options);

// Parses argv into *options. Returns -1 to go on, or the exit code (0 after
// --help, 2 after a bad flag) once the message has been printed.
int ParseServerOptions(int argc, char** argv, ServerOptions* options);

// True when `listen` names a loopback address (127.x.y.z, [::1], localhost).
bool IsLoopback(const std::string& listen);

}  // namespace prepackd
