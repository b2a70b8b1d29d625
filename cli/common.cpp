#include "cli/common.h"

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "core/base/runtime.h"

namespace prepack::cli {

namespace {

// --kv-dtype as named; unset for "auto". CLI11 has checked the name.
std::optional<cpu::DType> ExplicitKvDType(const CommonOptions& o) {
    if (o.kv_dtype == "auto") return std::nullopt;
    return ParseDType(o.kv_dtype).value_or(cpu::DType::kF32);
}

// The option `name` ("--prompt") names in `app` or an app above it.
const CLI::Option* FindOption(const CLI::App* app, const std::string& name) {
    for (; app != nullptr; app = app->get_parent()) {
        if (const CLI::Option* opt = app->get_option_no_throw(name)) return opt;
    }
    return nullptr;
}

const CLI::App* FindSubcommand(const CLI::App* app, const std::string& name) {
    const std::vector<const CLI::App*> subs =
        app->get_subcommands([&](const CLI::App* s) { return s->check_name(name); });
    return subs.empty() ? nullptr : subs.front();
}

}  // namespace

void ParseCommandLine(CLI::App& app, int argc, const char* const* argv) {
    if (argc < 1) return app.parse(argc, argv);
    std::vector<std::string> args{argv[0]};
    const CLI::App*          at = &app;   // the subcommand the arguments so far select
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--") {   // the end of options: the rest as it is
            args.insert(args.end(), argv + i, argv + argc);
            break;
        }
        if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
            const size_t        eq = a.find('=');
            const CLI::Option* opt = FindOption(at, a.substr(0, eq));
            if (opt != nullptr && opt->get_items_expected_min() > 0) {   // takes a value
                if (eq == std::string::npos) {   // --name VALUE: the value is not a subcommand
                    args.push_back(a);
                    if (i + 1 < argc) args.push_back(argv[++i]);
                    continue;
                }
                if (eq + 1 == a.size()) {   // --name=
                    args.push_back(a.substr(0, eq));
                    args.emplace_back();
                    continue;
                }
            }
        } else if (const CLI::App* sub = FindSubcommand(at, a)) {
            at = sub;
        }
        args.push_back(a);
    }
    std::vector<const char*> pointers;
    pointers.reserve(args.size());
    for (const std::string& a : args) pointers.push_back(a.c_str());
    app.parse(static_cast<int>(pointers.size()), pointers.data());
}

void AddSamplingOptions(CLI::App* cmd, SamplingParams* s) {
    cmd->add_option("--temperature", s->temperature, "0 = greedy")->capture_default_str();
    cmd->add_option("--top-k", s->top_k, "keep the K most likely tokens (0 = off)")->capture_default_str();
    cmd->add_option("--top-p", s->top_p, "nucleus sampling mass (1 = off)")->capture_default_str();
    cmd->add_option("--min-p", s->min_p, "drop tokens below min-p x the top probability (0 = off)")
        ->capture_default_str();
    cmd->add_option("--repeat-penalty", s->repetition_penalty, "penalty for recently seen tokens (1 = off)")
        ->capture_default_str();
    cmd->add_option("--seed", s->seed, "sampling seed: same seed, same tokens")->capture_default_str();
}

cpu::DType KvDType(const CommonOptions& o, const Model& model) {
    return ExplicitKvDType(o).value_or(model.weights().dtype);
}

void AddCommonOptions(CLI::App* app, CommonOptions* o, bool with_kv) {
    app->add_option("--model", o->model, "GGUF file or synthetic:NAME (tiny, 110m, 1b, 7b)")->required();
    app->add_option("--device", o->device, "cpu, or cuda (an NVIDIA GPU: weights, KV cache and activations in device memory; "
                    "use with --dtype bf16)")
        ->check(CLI::IsMember({"cpu", "cuda"}));
    app->add_option("--dtype", o->dtype,
                    "weight matrices: f32, or bf16 (half the memory and of decode's bytes per token; "
                    "bf16 arithmetic where the CPU has native bf16 GEMM)")
        ->check(CLI::IsMember({"f32", "bf16"}));
    app->add_option("--threads", o->threads, "CPU threads (0 = all online CPUs)")->check(CLI::Range(0, 1024));
    if (with_kv) {
        app->add_option("--kv-budget", o->kv_budget, "KV cache budget in bytes (0 = sized for the context)");
        app->add_option("--kv-block", o->kv_block, "tokens per KV block")->check(CLI::Range(1, 4096));
        app->add_option("--kv-dtype", o->kv_dtype,
                        "KV cache elements: auto (as --dtype), f32, or bf16 (half the bytes that batched "
                        "decode reads per step)")
            ->check(CLI::IsMember({"auto", "f32", "bf16"}));
    }
    app->add_flag("--json", o->json, "machine-readable output");
}

absl::StatusOr<Loaded> Load(const CommonOptions& o, int64_t min_kv_tokens, bool with_kv) {
    Loaded l;
    PP_ASSIGN_OR_RETURN(l.device, ParseDevice(o.device));
    PP_RETURN_IF_ERROR(CheckDevice(l.device));   // before a model it could not run is loaded
    SetNumThreads(o.threads);
    PP_ASSIGN_OR_RETURN(const cpu::DType dtype, ParseDType(o.dtype));
    PP_ASSIGN_OR_RETURN(l.model, Model::Load(o.model, dtype));
    if (!with_kv) return l;
    const cpu::DType kv_dtype = KvDType(o, *l.model);
    PP_ASSIGN_OR_RETURN(Backend b,
                        CreateBackend(*l.model, l.device, o.kv_block, o.kv_budget, min_kv_tokens + o.kv_block, kv_dtype));
    l.pool = std::move(b.pool);
    l.runner = std::move(b.runner);
    return l;
}

EngineOptions EngineOptionsFrom(const CommonOptions& o, int32_t max_batch_tokens, int32_t max_running,
                                SchedulePolicy policy) {
    EngineOptions eo;
    eo.model = o.model;
    eo.device = ParseDevice(o.device).value_or(Device::kCpu);   // CLI11 has checked the name
    eo.dtype = ParseDType(o.dtype).value_or(cpu::DType::kF32);   // CLI11 has checked the name
    eo.kv_dtype = ExplicitKvDType(o);
    eo.threads = o.threads;
    eo.kv_budget_bytes = o.kv_budget;
    eo.kv_block_size = o.kv_block;
    eo.max_batch_tokens = max_batch_tokens;
    eo.max_running = max_running;
    eo.policy = policy;
    return eo;
}

int Fail(const absl::Status& s) {
    std::fprintf(stderr, "prepack: %s\n", std::string(s.message()).c_str());
    return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace prepack::cli
