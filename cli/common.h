// Pieces every prepack subcommand shares: the common flags, loading the
// model and KV pool from them, and reporting errors.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "core/forward/backend.h"
#include "core/engine/engine.h"
#include "core/kv/kv_cache.h"
#include "core/model/model.h"

namespace prepack::cli {

struct CommonOptions {
    std::string model;
    std::string device = "cpu";
    std::string dtype = "f32";        // weight matrices: f32 or bf16
    std::string kv_dtype = "auto";    // KV cache: auto (as --dtype), f32 or bf16
    int         threads = 0;          // 0 = all online CPUs
    uint64_t    kv_budget = 0;        // bytes; 0 = sized for the model's context
    int         kv_block = 16;
    bool        json = false;
};

// Registers --model, --device, --dtype, --threads, --kv-budget, --kv-block, --kv-dtype, --json.
void AddCommonOptions(CLI::App* app, CommonOptions* o, bool with_kv = true);

struct Loaded {
    Device                       device = Device::kCpu;   // --device, parsed
    std::unique_ptr<Model>       model;
    std::unique_ptr<KvBlockPool> pool;     // with_kv: on --device
    std::unique_ptr<StepRunner>  runner;   // with_kv: the forward pass on it
};

// Applies --threads and loads the model, and when with_kv a KV pool sized
// for at least `min_kv_tokens` tokens plus the forward pass, on --device.
absl::StatusOr<Loaded> Load(const CommonOptions& o, int64_t min_kv_tokens, bool with_kv = true);

// --kv-dtype resolved for `model`: "auto" follows its weights' dtype.
cpu::DType KvDType(const CommonOptions& o, const Model& model);

// Registers --temperature, --top-k, --top-p, --min-p, --repeat-penalty and
// --seed, showing the library's defaults (SamplingParams) in --help.
void AddSamplingOptions(CLI::App* app, SamplingParams* s);

// Engine options from the common flags plus the scheduler's own.
EngineOptions EngineOptionsFrom(const CommonOptions& o, int32_t max_batch_tokens, int32_t max_running,
                                SchedulePolicy policy);

// Prints "prepack: <status message>" to stderr; returns the exit code for it.
int Fail(const absl::Status& s);

// app.parse(argc, argv), except that `--name=` with nothing after the '='
// gives an option that takes a value the empty value, as `--name ""` does:
// CLI11 2.1 reads it as a bare `--name` and takes the next argument as the
// value (`--prompt= --max-tokens=3` was the prompt "--max-tokens=3"), or
// fails with "1 required TEXT missing" when nothing follows. Flags keep
// CLI11's meaning of `--flag=`. Throws what app.parse throws.
void ParseCommandLine(CLI::App& app, int argc, const char* const* argv);

}  // namespace prepack::cli
