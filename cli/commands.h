// The subcommands of the `prepack` CLI. Each Add* registers one with its
// flags; when it runs, it stores its exit code in *exit_code.
#pragma once

#include <CLI/CLI.hpp>

namespace prepack::cli {

void AddGenerate(CLI::App& app, int* exit_code);
void AddChat(CLI::App& app, int* exit_code);
void AddChatTemplate(CLI::App& app, int* exit_code);
// `grammar gbnf|check|sample` (cmd_grammar.cpp).
void AddGrammar(CLI::App& app, int* exit_code);
void AddInspect(CLI::App& app, int* exit_code);
void AddTokenize(CLI::App& app, int* exit_code);
void AddBatch(CLI::App& app, int* exit_code);
// `batch plan` and `batch merge`, under `batch` (cmd_batch_plan.cpp).
void AddBatchPlan(CLI::App& batch, int* exit_code);
void AddBatchMerge(CLI::App& batch, int* exit_code);
void AddBenchForward(CLI::App& bench, int* exit_code);
void AddBenchPrefill(CLI::App& bench, int* exit_code);
void AddBenchBatch(CLI::App& bench, int* exit_code);
void AddBenchLazy(CLI::App& bench, int* exit_code);
void AddBenchKernels(CLI::App& bench, int* exit_code);
void AddBenchGrammar(CLI::App& bench, int* exit_code);
void AddEvalLazy(CLI::App& eval, int* exit_code);

}  // namespace prepack::cli
