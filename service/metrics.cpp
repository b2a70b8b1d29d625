#include "metrics.h"

#include <prometheus/client_metric.h>
#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <vector>

namespace prepackd {
namespace {

using prometheus::MetricType;

// vLLM's buckets (vllm/v1/metrics/loggers.py), so that its dashboards'
// quantiles mean the same here.
const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
                                          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kTpotBuckets = {0.01, 0.025, 0.05, 0.075, 0.1,  0.15, 0.2,  0.3,  0.4, 0.5,
                                          0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kLatencyBuckets = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,    10.0,   15.0,  20.0,
                                             30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
const char* const kReasons[] = {"stop", "length", "abort", "error"};

// vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, ... up to `max`.
std::vector<double> Buckets125(int64_t max) {
    std::vector<double> out;
    for (int64_t scale = 1;; scale *= 10) {
        for (int64_t m : {1, 2, 5}) {
            if (m * scale > max) return out;
            out.push_back(static_cast<double>(m * scale));
        }
    }
}

double Ratio(uint64_t part, uint64_t whole) { return whole > 0 ? static_cast<double>(part) / whole : 0.0; }

// One series of the engine's snapshot.
struct EngineSeries {
    const char* name;
    const char* help;
    MetricType  type;
    double (*value)(const prepack_stats&);
};

const EngineSeries kEngineSeries[] = {
    // vLLM's.
    {"prepack_num_requests_running", "Requests in the engine's running batch (holding KV cache).", MetricType::Gauge,
     [](const prepack_stats& s) { return double(s.requests_running); }},
    {"prepack_num_requests_waiting", "Requests waiting in the engine's queue.", MetricType::Gauge,
     [](const prepack_stats& s) { return double(s.requests_waiting); }},
    {"prepack_kv_cache_usage_perc", "KV-cache usage: the fraction of the KV budget requests hold (1 = 100%).",
     MetricType::Gauge, [](const prepack_stats& s) { return Ratio(s.kv_bytes_used, s.kv_bytes_total); }},
    {"prepack_prompt_tokens_total", "Prompt tokens of the requests submitted to the engine.", MetricType::Counter,
     [](const prepack_stats& s) { return double(s.prompt_tokens); }},
    {"prepack_generation_tokens_total", "Tokens generated.", MetricType::Counter,
     [](const prepack_stats& s) { return double(s.generated_tokens); }},
    {"prepack_num_preemptions_total", "Requests preempted for KV memory (to be recomputed).", MetricType::Counter,
     [](const prepack_stats& s) { return double(s.preemptions); }},
    {"prepack_prefix_cache_queries_total",
     "Prompt tokens of finished requests looked up in shared KV (BatchLLM group prefixes and the prefix cache).",
     MetricType::Counter, [](const prepack_stats& s) { return double(s.prefix_query_tokens); }},
    {"prepack_prefix_cache_hits_total",
     "Of those prompt tokens, the ones read from shared KV instead of computed (prefix tokens shared).",
     MetricType::Counter, [](const prepack_stats& s) { return double(s.prefix_hit_tokens); }},
    // prepack's own.
    {"prepack_prefix_cache_hit_rate", "prefix_cache_hits / prefix_cache_queries since start (tokens).",
     MetricType::Gauge, [](const prepack_stats& s) { return Ratio(s.prefix_hit_tokens, s.prefix_query_tokens); }},
    {"prepack_prefix_cache_query_requests_total", "Finished requests looked up in shared KV.", MetricType::Counter,
     [](const prepack_stats& s) { return double(s.prefix_query_requests); }},
    {"prepack_prefix_cache_hit_requests_total", "Of those, the requests that read any prompt token from shared KV.",
     MetricType::Counter, [](const prepack_stats& s) { return double(s.prefix_hit_requests); }},
    {"prepack_prompt_tokens_computed_total", "Prompt tokens that went through the model (shared ones did not).",
     MetricType::Counter, [](const prepack_stats& s) { return double(s.prompt_tokens_computed); }},
    {"prepack_steps_total", "Forward steps run.", MetricType::Counter,
     [](const prepack_stats& s) { return double(s.steps); }},
    {"prepack_prefill_steps_total", "Forward steps that carried prompt tokens.", MetricType::Counter,
     [](const prepack_stats& s) { return double(s.prefill_steps); }},
    {"prepack_prefill_step_tokens_total", "Tokens those steps carried, prompt and decode.", MetricType::Counter,
     [](const prepack_stats& s) { return double(s.prefill_step_tokens); }},
    {"prepack_prefill_step_capacity_tokens_total",
     "Those steps' token budget (--max-batch-tokens each; a lone longer LazyLLM prompt: its length).",
     MetricType::Counter, [](const prepack_stats& s) { return double(s.prefill_step_capacity); }},
    {"prepack_prefill_packing_efficiency",
     "How full prefill steps were packed since start: prefill_step_tokens / prefill_step_capacity_tokens.",
     MetricType::Gauge, [](const prepack_stats& s) { return Ratio(s.prefill_step_tokens, s.prefill_step_capacity); }},
    {"prepack_prompt_token_layers_total", "Prompt tokens prefilled x layers.", MetricType::Counter,
     [](const prepack_stats& s) { return double(s.prompt_token_layers); }},
    {"prepack_lazyllm_pruned_token_layers_total",
     "Prompt token-layers LazyLLM pruned (skipped) in prefill: prompt_token_layers less those computed.",
     MetricType::Counter,
     [](const prepack_stats& s) { return double(s.prompt_token_layers - s.prompt_token_layers_computed); }},
    // Structured output (the engine's grammar cache).
    {"prepack_grammar_requests_total",
     "Constrained requests submitted (response_format, guided_*, structured_output) that reached the grammar "
     "compiler: grammar_compiles_total + grammar_cache_hits_total.",
     MetricType::Counter,
     [](const prepack_stats& s) { return double(s.grammar_cache_misses + s.grammar_cache_hits); }},
    {"prepack_grammar_compiles_total", "Grammars compiled (a spec not in the engine's cache).", MetricType::Counter,
     [](const prepack_stats& s) { return double(s.grammar_cache_misses); }},
    {"prepack_grammar_cache_hits_total", "Constrained requests that reused a compiled grammar.", MetricType::Counter,
     [](const prepack_stats& s) { return double(s.grammar_cache_hits); }},
    {"prepack_grammar_compile_seconds_total", "Seconds spent compiling grammars (on the submitting threads).",
     MetricType::Counter, [](const prepack_stats& s) { return s.grammar_compile_seconds; }},
};

}  // namespace

const char* FinishedReason(prepack_finish_reason reason) {
    switch (reason) {
        case PREPACK_FINISH_LENGTH: return "length";
        case PREPACK_FINISH_CANCELLED: return "abort";
        case PREPACK_FINISH_ERROR: return "error";
        default: return "stop";   // a stop string, the model's end of text
    }
}

Metrics::Metrics(const std::string& model_name, int32_t max_model_len)
    : model_name_(model_name), registry_(std::make_shared<prometheus::Registry>()) {
    const prometheus::Labels labels = {{"model_name", model_name}};
    auto& success = prometheus::BuildCounter()
                        .Name("prepack_request_success_total")
                        .Help("Requests the engine ended, by finished_reason (stop, length, abort, error).")
                        .Labels(labels)
                        .Register(*registry_);
    // Every reason up front, so each series exists (at 0) from the start.
    for (const char* reason : kReasons) success_[reason] = &success.Add({{"finished_reason", reason}});
    auto histogram = [&](const char* name, const char* help, const std::vector<double>& buckets) {
        return &prometheus::BuildHistogram().Name(name).Help(help).Labels(labels).Register(*registry_).Add({}, buckets);
    };
    ttft_ = histogram("prepack_time_to_first_token_seconds", "Time to first token, from submission.", kTtftBuckets);
    tpot_ = histogram("prepack_time_per_output_token_seconds",
                      "Time per output token after the first: (e2e - ttft) / (generation tokens - 1).", kTpotBuckets);
    e2e_ = histogram("prepack_e2e_request_latency_seconds", "Request latency in the engine, submission to end.",
                     kLatencyBuckets);
    queue_ = histogram("prepack_request_queue_time_seconds", "Time waiting in the engine's queue.", kLatencyBuckets);
    inference_ = histogram("prepack_request_inference_time_seconds", "Time running: first scheduled to end.",
                           kLatencyBuckets);
    prefill_ = histogram("prepack_request_prefill_time_seconds", "Time prefilling: first scheduled to first token.",
                         kLatencyBuckets);
    decode_ = histogram("prepack_request_decode_time_seconds", "Time decoding: first token to end.", kLatencyBuckets);
    const std::vector<double> tokens = Buckets125(max_model_len);
    prompt_tokens_ = histogram("prepack_request_prompt_tokens", "Prompt tokens per request.", tokens);
    generation_tokens_ = histogram("prepack_request_generation_tokens", "Generated tokens per request.", tokens);
}

Metrics::~Metrics() = default;

void Metrics::ObserveEnd(const prepack_event& end) {
    success_.at(FinishedReason(end.finish_reason))->Increment();
    // The distributions are of requests that completed; a cancelled or
    // failed one is counted above, its cut-short timings are left out.
    if (end.status != PREPACK_OK) return;
    const prepack_usage& u = end.usage;
    const double queue = u.queue_ms / 1000.0, total = u.total_ms / 1000.0;
    e2e_->Observe(total);
    queue_->Observe(queue);
    inference_->Observe(total - queue);
    prompt_tokens_->Observe(u.prompt_tokens);
    generation_tokens_->Observe(u.completion_tokens);
    if (u.completion_tokens < 1) return;
    const double ttft = u.ttft_ms / 1000.0;
    ttft_->Observe(ttft);
    prefill_->Observe(ttft - queue);
    decode_->Observe(total - ttft);
    if (u.completion_tokens >= 2) tpot_->Observe((total - ttft) / (u.completion_tokens - 1));
}

std::map<std::string, uint64_t> Metrics::FinishedByReason() const {
    std::map<std::string, uint64_t> out;
    for (const auto& [reason, counter] : success_) out[reason] = static_cast<uint64_t>(counter->Value());
    return out;
}

std::string Metrics::Render(const prepack_stats& engine) const {
    std::vector<prometheus::MetricFamily> families;
    for (const EngineSeries& e : kEngineSeries) {
        prometheus::MetricFamily f;
        f.name = e.name;
        f.help = e.help;
        f.type = e.type;
        prometheus::ClientMetric m;
        m.label.push_back({"model_name", model_name_});
        (e.type == MetricType::Counter ? m.counter.value : m.gauge.value) = e.value(engine);
        f.metric.push_back(std::move(m));
        families.push_back(std::move(f));
    }
    for (prometheus::MetricFamily& f : registry_->Collect()) families.push_back(std::move(f));
    return prometheus::TextSerializer().Serialize(families);
}

}  // namespace prepackd
