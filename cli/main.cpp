// prepack: command-line front end of the engine.
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "cli/common.h"

int main(int argc, char** argv) {
    CLI::App app{"prepack: LLM inference with prepacked prefill, LazyLLM pruning and BatchLLM scheduling"};
    app.require_subcommand(1);
    int exit_code = 0;
    prepack::cli::AddGenerate(app, &exit_code);
    prepack::cli::AddChat(app, &exit_code);
    prepack::cli::AddChatTemplate(app, &exit_code);
    prepack::cli::AddGrammar(app, &exit_code);
    prepack::cli::AddInspect(app, &exit_code);
    prepack::cli::AddTokenize(app, &exit_code);
    prepack::cli::AddBatch(app, &exit_code);
    CLI::App* bench = app.add_subcommand("bench", "Benchmarks that print figures (and JSON with --json)");
    bench->require_subcommand(1);
    prepack::cli::AddBenchForward(*bench, &exit_code);
    prepack::cli::AddBenchPrefill(*bench, &exit_code);
    prepack::cli::AddBenchBatch(*bench, &exit_code);
    prepack::cli::AddBenchLazy(*bench, &exit_code);
    prepack::cli::AddBenchKernels(*bench, &exit_code);
    prepack::cli::AddBenchGrammar(*bench, &exit_code);
    CLI::App* eval = app.add_subcommand("eval", "Accuracy evaluations that print figures (and JSON with --json)");
    eval->require_subcommand(1);
    prepack::cli::AddEvalLazy(*eval, &exit_code);
    try {
        prepack::cli::ParseCommandLine(app, argc, argv);   // app.parse, with `--prompt=` the empty text
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const std::exception& e) {
        // Out of memory and the like: report, never abort with a core dump.
        std::fprintf(stderr, "prepack: %s\n", e.what());
        return 1;
    }
    return exit_code;
}
