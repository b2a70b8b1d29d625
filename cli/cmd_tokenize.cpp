// `prepack tokenize`: a text's token ids as the model's vocabulary gives
// them (llama.cpp's llama-tokenize): BOS/EOS as the vocabulary says unless
// --no-special, control-token text parsed only with --parse-special. Loads
// the vocabulary alone, never the weights.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/model/model.h"

namespace prepack::cli {
namespace {

struct TokenizeOptions {
    std::string model, prompt;
    bool        prompt_given = false;
    bool        no_special = false;
    bool        parse_special = false;
    bool        json = false;
};

// What a token spells: its bytes, or for a control token (which decodes to
// nothing) its name, as llama-tokenize shows it.
std::string PieceOf(const Tokenizer& tok, int32_t id) { return tok.IsControl(id) ? tok.Piece(id) : tok.TokenBytes(id); }

int Run(const TokenizeOptions& o) {
    std::string text = o.prompt;
    if (!o.prompt_given) text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    absl::StatusOr<Tokenizer> tok = LoadTokenizer(o.model);
    if (!tok.ok()) return Fail(tok.status());
    absl::StatusOr<std::vector<int32_t>> ids = tok->Encode(text, !o.no_special, o.parse_special);
    if (!ids.ok()) return Fail(ids.status());
    if (o.json) {
        nlohmann::json pieces = nlohmann::json::array();
        for (int32_t id : *ids) pieces.push_back(PieceOf(*tok, id));
        const nlohmann::json j = {{"ids", *ids}, {"pieces", pieces}};
        std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return 0;
    }
    for (int32_t id : *ids) {
        const std::string piece = nlohmann::json(PieceOf(*tok, id)).dump(-1, ' ', false,
                                                                           nlohmann::json::error_handler_t::replace);
        std::printf("%6d -> %s\n", id, piece.c_str());
    }
    return 0;
}

}  // namespace

void AddTokenize(CLI::App& app, int* exit_code) {
    auto* o = new TokenizeOptions();
    CLI::App* cmd = app.add_subcommand("tokenize", "Print a text's token ids (the text from --prompt or stdin)");
    cmd->add_option("--model", o->model, "GGUF file or synthetic:NAME (only its vocabulary is read)")->required();
    // Given at all, even as the empty text (--prompt="" or --prompt ''), it is
    // the text: stdin is read only without it.
    CLI::Option* prompt = cmd->add_option("--prompt", o->prompt, "the text (default: all of stdin)");
    cmd->add_flag("--no-special", o->no_special, "add no BOS/EOS (llama.cpp's add_special = false)");
    cmd->add_flag("--parse-special", o->parse_special,
                  "read control-token text such as <|eot_id|> as that token (off: it is plain text)");
    cmd->add_flag("--json", o->json, "print {\"ids\": [...], \"pieces\": [...]}");
    cmd->callback([o, prompt, exit_code]() {
        o->prompt_given = prompt->count() > 0;
        *exit_code = Run(*o);
    });
}

}  // namespace prepack::cli
