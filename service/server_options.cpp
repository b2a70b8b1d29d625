#include "server_options.h"

#include <CLI/CLI.hpp>

#include <string_view>

#include "openai/request.h"

namespace prepackd {

int ParseServerOptions(int argc, char** argv, ServerOptions* o) {
    CLI::App app{"prepackd: the prepack inference engine as a gRPC service (prepack.v1.Prepack)"};
    app.add_option("--model", o->model, "GGUF file or synthetic:NAME (tiny, 110m, 1b, 7b)")->required();
    app.add_option("--listen", o->listen, "host:port to listen on; port 0 picks a free one")
        ->capture_default_str();
    app.add_option("--threads", o->threads, "engine CPU threads (0 = all CPUs)")
        ->check(CLI::NonNegativeNumber)->capture_default_str();
    app.add_option("--kv-memory", o->kv_memory, "KV cache budget in bytes (0 = engine default)")
        ->capture_default_str();
    app.add_option("--max-batch-tokens", o->max_batch_tokens, "tokens per forward step")
        ->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--max-running", o->max_running, "sequences decoding at once")
        ->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--max-queue", o->max_queue,
                   "requests in flight (running or waiting) before RESOURCE_EXHAUSTED")
        ->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--batch-share", o->batch_share,
                   "fraction of --max-queue one GenerateBatch call holds at once; its other requests "
                   "are submitted as earlier ones finish")
        ->check(CLI::Range(0.0, 1.0))->capture_default_str();
    app.add_option("--interactive-reserve", o->interactive_reserve,
                   "fraction of --max-queue that GenerateBatch requests never take, kept for Generate")
        ->check(CLI::Range(0.0, 1.0))->capture_default_str();
    app.add_option("--max-prompt-bytes", o->max_prompt_bytes,
                   "longest text prompt (bytes) tokenized; longer ones get OUT_OF_RANGE at once "
                   "(0 = context length x the longest token's bytes)")
        ->capture_default_str();
    app.add_option("--policy", o->policy, "scheduling policy")
        ->check(CLI::IsMember({"fcfs", "lru", "batchllm"}))->capture_default_str();
    app.add_option("--dtype", o->dtype, "weight matrices and KV cache: f32, or bf16 (half the memory, faster decode)")
        ->check(CLI::IsMember({"f32", "bf16"}))->capture_default_str();
    app.add_option("--device", o->device, "cpu, or cuda (an NVIDIA GPU; use with --dtype bf16)")
        ->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
    app.add_option("--chat-template-file", o->chat_template_file,
                   "Jinja chat template for Chat and RenderChat, instead of the model's tokenizer.chat_template "
                   "(needed for a model without one)")
        ->check(CLI::ExistingFile);
    app.add_option("--grace-seconds", o->grace_seconds, "on SIGTERM, time in-flight streams get to finish")
        ->check(CLI::NonNegativeNumber)->capture_default_str();
    auto* cert = app.add_option("--tls-cert", o->tls_cert, "PEM certificate chain: serve TLS")
        ->check(CLI::ExistingFile);
    auto* key = app.add_option("--tls-key", o->tls_key, "PEM private key of --tls-cert")->check(CLI::ExistingFile);
    cert->needs(key);
    key->needs(cert);
    app.add_option("--auth-token-file", o->auth_token_file,
                   "file holding a shared token; clients send 'authorization: Bearer <token>'")
        ->check(CLI::ExistingFile);
    app.add_option("--max-message-bytes", o->max_message_bytes, "largest gRPC message sent or received")
        ->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--stream-buffer", o->stream_buffer,
                   "responses buffered per stream before generation output waits for a slow reader")
        ->check(CLI::PositiveNumber)->capture_default_str();
    app.add_option("--http-listen", o->http_listen,
                   "host:port of the OpenAI-compatible HTTP API (/v1/chat/completions, ...); port 0 picks a "
                   "free one; \"\" or off: no HTTP")
        ->capture_default_str();
    app.add_option("--model-name", o->model_name,
                   "the model's id in the HTTP API (\"model\" of requests, /v1/models); default: the model "
                   "file's name without directory and .gguf");
    app.add_option("--http-threads", o->http_threads,
                   "HTTP connections served at once, each on its own thread (0 = --max-queue + 16); more wait")
        ->check(CLI::NonNegativeNumber)->capture_default_str();
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    return -1;
}

std::string ServedModelId(const ServerOptions& o) {
    return o.model_name.empty() ? prepack::openai::DefaultModelId(o.model) : o.model_name;
}

bool IsLoopback(const std::string& listen) {
    const auto starts = [&](const char* prefix) { return listen.rfind(prefix, 0) == 0; };
    return starts("127.") || starts("[::1]:") || starts("localhost:") || starts("ipv4:127.") ||
           starts("ipv6:[::1]:");
}

}  // namespace prepackd
