// `prepack bench grammar`: the structured-output engine (core/grammar)
// measured the way issue 47 states its targets, and dumped so that
// scripts/bench_grammar.py can run XGrammar and llguidance on exactly the
// same vocabulary, grammars and token sequences:
//   - vocabulary: building the model's token trie, once per model;
//   - compile: front end + GBNF parse + binding to the vocabulary, cold (a
//     fresh compile each repeat, no cache), p50/p99;
//   - masks: one greedy constrained generation per grammar records its token
//     ids (or, with --texts, a given text's tokenization: a vocabulary-only
//     GGUF has no weights), then the ids are replayed through fresh matchers
//     timing every FillNextTokenMask: cold (a fresh compile, so the lazily
//     built DFAs and mask caches are paid for here) and warm (a new matcher
//     on a grammar already replayed once);
//   - throughput: the engine's decode with and without the grammar at
//     batch 1 and 16, interleaved and repeated. The unconstrained run gets
//     exactly the constrained run's output lengths (ignore_eos, max_tokens
//     per request), so both do the same forward work and tokens per second
//     compare the grammar's cost alone.
// Percentiles are nearest-rank over all samples (the peers' script uses the
// same definition).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/batch_runner.h"
#include "cli/bench_util.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "core/base/runtime.h"
#include "core/chat/chat_template.h"
#include "core/engine/generate.h"
#include "core/grammar/grammar_spec.h"
#include "core/grammar/matcher.h"
#include "core/model/model.h"
#include "core/request/vocabulary.h"
#include "kernels/cpu/cpu_level.h"

namespace prepack::cli {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// Bounds, so a wrong directory or a typo cannot run for hours.
constexpr size_t  kMaxGrammars = 256;
constexpr int64_t kMaxGrammarFileBytes = int64_t{1} << 20;   // the front ends refuse more anyway
constexpr size_t  kSchemaInPromptBytes = 1500;                // the schema the model is shown

struct BenchGrammarOptions {
    CommonOptions            common;
    std::string              schemas_dir;
    std::vector<std::string> json_schema_files;
    std::vector<std::string> gbnf_files;
    bool                     json_object = false;
    std::string              texts_file;   // {name: text}: replay these texts' tokens instead of generating
    std::string              prompt;       // overrides the per-grammar prompt
    const CLI::Option*       prompt_option = nullptr;
    int32_t                  max_tokens = 128;
    int32_t                  compile_repeats = 20;
    int32_t                  cold_replays = 3;
    int32_t                  warm_replays = 5;
    std::string              dump_dir;
    // Throughput: empty batch sizes = skipped.
    std::string              batch_sizes;
    int32_t                  throughput_repeats = 3;
    int32_t                  throughput_max_tokens = 64;
    std::string              throughput_grammar;   // a grammar's name; "" = the first
};

struct BenchGrammar {
    std::string          name;
    grammar::GrammarSpec spec;
};

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

// Nearest rank: the smallest sample with at least p% of them at or below it.
double Percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const double rank = std::ceil(p / 100.0 * static_cast<double>(v.size()));
    const size_t i = static_cast<size_t>(std::max(1.0, rank)) - 1;
    return v[std::min(i, v.size() - 1)];
}

Json Distribution(const std::vector<double>& v) {
    double sum = 0.0;
    for (double x : v) sum += x;
    return Json{{"n", v.size()},
                {"p50", Percentile(v, 50)},
                {"p99", Percentile(v, 99)},
                {"max", v.empty() ? 0.0 : *std::max_element(v.begin(), v.end())},
                {"mean", v.empty() ? 0.0 : sum / static_cast<double>(v.size())}};
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
    if (static_cast<int64_t>(fs::file_size(path, ec)) > kMaxGrammarFileBytes) {
        return absl::ResourceExhaustedError(absl::StrCat("'", path, "' is over 1 MiB"));
    }
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

absl::StatusOr<BenchGrammar> GrammarFromFile(const std::string& path, grammar::GrammarSpec::Kind kind) {
    BenchGrammar g;
    g.name = fs::path(path).stem().string();
    g.spec.kind = kind;
    PP_ASSIGN_OR_RETURN(g.spec.text, ReadSmallFile(path));
    return g;
}

// --schemas DIR (its *.json schemas and *.gbnf grammars, by file name),
// then --json-schema and --gbnf files, then --json-object. Names must be
// unique: they key the dump and --texts.
absl::StatusOr<std::vector<BenchGrammar>> CollectGrammars(const BenchGrammarOptions& o) {
    std::vector<BenchGrammar> out;
    if (!o.schemas_dir.empty()) {
        std::error_code ec;
        if (!fs::is_directory(o.schemas_dir, ec)) {
            return absl::NotFoundError(absl::StrCat("--schemas '", o.schemas_dir, "' is not a directory"));
        }
        std::vector<fs::path> files;
        for (const auto& e : fs::directory_iterator(o.schemas_dir, ec)) {
            const std::string ext = e.path().extension().string();
            if (e.is_regular_file() && (ext == ".json" || ext == ".gbnf")) files.push_back(e.path());
        }
        std::sort(files.begin(), files.end());
        for (const fs::path& f : files) {
            const auto kind = f.extension() == ".json" ? grammar::GrammarSpec::Kind::kJsonSchema
                                                       : grammar::GrammarSpec::Kind::kGbnf;
            PP_ASSIGN_OR_RETURN(BenchGrammar g, GrammarFromFile(f.string(), kind));
            out.push_back(std::move(g));
        }
    }
    for (const std::string& f : o.json_schema_files) {
        PP_ASSIGN_OR_RETURN(BenchGrammar g, GrammarFromFile(f, grammar::GrammarSpec::Kind::kJsonSchema));
        out.push_back(std::move(g));
    }
    for (const std::string& f : o.gbnf_files) {
        PP_ASSIGN_OR_RETURN(BenchGrammar g, GrammarFromFile(f, grammar::GrammarSpec::Kind::kGbnf));
        out.push_back(std::move(g));
    }
    if (o.json_object) out.push_back({"json_object", {grammar::GrammarSpec::Kind::kJsonObject, ""}});
    if (out.empty()) {
        return absl::InvalidArgumentError("no grammars: give --schemas DIR, --json-schema FILE, --gbnf FILE or --json-object");
    }
    if (out.size() > kMaxGrammars) {
        return absl::ResourceExhaustedError(absl::StrCat(out.size(), " grammars given; at most ", kMaxGrammars));
    }
    std::map<std::string, int> seen;
    for (const BenchGrammar& g : out) {
        if (seen[g.name]++ > 0) return absl::InvalidArgumentError(absl::StrCat("two grammars are named '", g.name, "'"));
    }
    return out;
}

// What the model is asked to write: the schema or grammar itself, so that
// its constrained output has realistic values, not whatever the mask
// leaves of an unrelated answer.
std::string PromptFor(const BenchGrammar& g, const BenchGrammarOptions& o) {
    if (o.prompt_option != nullptr && o.prompt_option->count() > 0) return o.prompt;
    const std::string shown = g.spec.text.substr(0, kSchemaInPromptBytes);
    switch (g.spec.kind) {
        case grammar::GrammarSpec::Kind::kJsonSchema:
            return absl::StrCat("Write one JSON object, with realistic values, that follows this JSON Schema:\n", shown);
        case grammar::GrammarSpec::Kind::kGbnf:
            return absl::StrCat("Write one text in the language of this GBNF grammar:\n", shown);
        default:
            return "Describe a fictional person (name, age, city, hobbies) as a JSON object.";
    }
}

// The prompt's ids: through the model's chat template when it has one (an
// instruct model answers a chat turn), else the plain text with BOS.
absl::StatusOr<std::vector<int32_t>> PromptIds(const Tokenizer& tok, const std::string& text) {
    const ChatTemplates templates = ChatTemplates::Load(tok);
    if (!templates.empty()) {
        Conversation c;
        c.messages.push_back({{"role", "user"}, {"content", text}});
        absl::StatusOr<ChatPrompt> p = templates.Apply(tok, c);
        if (p.ok()) return p->ids;
    }
    return tok.Encode(text, /*add_special=*/true);
}

struct CompileTimes {
    std::vector<double> front_end_ms;   // spec -> Grammar (front end, GBNF parse)
    std::vector<double> bind_ms;        // Compile(grammar, vocabulary)
    std::vector<double> total_ms;
};

absl::StatusOr<std::shared_ptr<const grammar::CompiledGrammar>> CompileTimed(
    const grammar::GrammarSpec& spec, const std::shared_ptr<const grammar::TokenVocabulary>& vocab,
    CompileTimes* times) {
    const auto t0 = std::chrono::steady_clock::now();
    PP_ASSIGN_OR_RETURN(grammar::Grammar g, grammar::BuildGrammar(spec));
    const auto t1 = std::chrono::steady_clock::now();
    PP_ASSIGN_OR_RETURN(std::shared_ptr<const grammar::CompiledGrammar> compiled, grammar::Compile(std::move(g), vocab));
    const auto t2 = std::chrono::steady_clock::now();
    if (times != nullptr) {
        times->front_end_ms.push_back(Seconds(t0, t1) * 1e3);
        times->bind_ms.push_back(Seconds(t1, t2) * 1e3);
        times->total_ms.push_back(Seconds(t0, t2) * 1e3);
    }
    return compiled;
}

// One replay of `ids` through a fresh matcher: the mask before each
// content token and after the last one (where end tokens come in), each
// timed. `ids` may end with an end token; it is not replayed (no mask
// follows it).
struct Replay {
    std::vector<double>   mask_us;
    std::vector<int32_t>  allowed;
    std::vector<grammar::TokenMask> masks;   // kept when asked (the dump)
    bool                  can_end = false;
};

absl::StatusOr<Replay> ReplayTokens(const std::shared_ptr<const grammar::CompiledGrammar>& compiled,
                                    const std::vector<int32_t>& content, bool keep_masks) {
    grammar::Matcher m(compiled);
    grammar::TokenMask mask;
    Replay r;
    for (size_t step = 0; step <= content.size(); ++step) {
        const auto t0 = std::chrono::steady_clock::now();
        m.FillNextTokenMask(&mask);
        const auto t1 = std::chrono::steady_clock::now();
        PP_RETURN_IF_ERROR(m.status());
        r.mask_us.push_back(Seconds(t0, t1) * 1e6);
        r.allowed.push_back(mask.Count());
        if (keep_masks) r.masks.push_back(mask);
        if (step == content.size()) break;
        const int32_t id = content[step];
        if (!mask.Test(id) || !m.AcceptToken(id)) {
            return absl::InvalidArgumentError(absl::StrCat("replay: token ", id, " at step ", step,
                                                           " is not allowed by the grammar (the sequence is not a "
                                                           "prefix of a sentence)"));
        }
    }
    r.can_end = m.CanEnd();
    return r;
}

// --texts: {name: text or [ids]}. A text is tokenized (the vocabulary's
// own tokenization); ids are replayed as given (another run's generation).
struct GivenSequence {
    std::string          text;
    std::vector<int32_t> ids;
    bool                 is_ids = false;
};

// The token ids a grammar's replay uses, and where they came from.
struct Sequence {
    std::vector<int32_t> ids;   // may end with an end token
    std::string          text;
    std::string          finish_reason;
};

absl::StatusOr<Sequence> GenerateSequence(StepRunner& forward, GrammarCompiler& compiler, const BenchGrammar& g,
                                          const BenchGrammarOptions& o) {
    const Tokenizer& tok = forward.model().tokenizer();
    GenerateRequest req;
    PP_ASSIGN_OR_RETURN(req.prompt_tokens, PromptIds(tok, PromptFor(g, o)));
    req.max_tokens = o.max_tokens;
    req.sampling.temperature = 0.0f;   // greedy: the same sequence every run
    req.grammar = g.spec;
    req.grammars = &compiler;
    PP_ASSIGN_OR_RETURN(GenerateResult r, Generate(forward, req));
    return Sequence{std::move(r.tokens), std::move(r.text), FinishReasonName(r.finish_reason)};
}

// The text as the longest token at each position (the lowest id among
// tokens spelling the same bytes). NOT_FOUND names a byte no token spells.
absl::StatusOr<std::vector<int32_t>> GreedyTokens(const Tokenizer& tok, std::string_view text) {
    std::unordered_map<std::string, int32_t> by_bytes;
    size_t longest = 0;
    for (int32_t id = 0; id < tok.vocab_size(); ++id) {
        if (tok.IsControl(id) || tok.IsEndOfGeneration(id)) continue;
        std::string b = tok.TokenBytes(id);
        if (b.empty()) continue;
        longest = std::max(longest, b.size());
        by_bytes.emplace(std::move(b), id);
    }
    std::vector<int32_t> ids;
    for (size_t at = 0; at < text.size();) {
        size_t len = std::min(longest, text.size() - at);
        for (; len > 0; --len) {
            auto it = by_bytes.find(std::string(text.substr(at, len)));
            if (it != by_bytes.end()) {
                ids.push_back(it->second);
                break;
            }
        }
        if (len == 0) {
            return absl::NotFoundError(absl::StrCat("no token of the vocabulary spells byte ", at, " of the text"));
        }
        at += len;
    }
    return ids;
}

absl::StatusOr<Sequence> GivenToSequence(const Tokenizer& tok, const GivenSequence& given) {
    if (given.is_ids) {
        for (int32_t id : given.ids) {
            if (id < 0 || id >= tok.vocab_size()) {
                return absl::InvalidArgumentError(absl::StrCat("--texts: token id ", id, " is outside the vocabulary"));
            }
        }
        return Sequence{given.ids, tok.Decode(given.ids), "ids"};
    }
    // No BOS: the text is output, which follows a prompt.
    PP_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok.Encode(given.text, /*add_special=*/false));
    std::string spelled;
    for (int32_t id : ids) spelled += tok.TokenBytes(id);
    if (spelled == given.text) return Sequence{std::move(ids), given.text, "text"};
    // SentencePiece puts a dummy-prefix space in front of a text it encodes
    // alone, which output in the middle of a generation never has: spell
    // the text with the longest tokens instead (valid, if not canonical).
    PP_ASSIGN_OR_RETURN(ids, GreedyTokens(tok, given.text));
    return Sequence{std::move(ids), given.text, "text (longest-match)"};
}

// ---- the dump for scripts/bench_grammar.py ---------------------------------

std::string Hex(std::string_view bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char c : bytes) {
        out.push_back(kDigits[c >> 4]);
        out.push_back(kDigits[c & 15]);
    }
    return out;
}

absl::Status WriteFile(const fs::path& path, std::string_view data) {
    std::ofstream out(path, std::ios::binary);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) return absl::InternalError(absl::StrCat("cannot write '", path.string(), "'"));
    return absl::OkStatus();
}

absl::Status DumpVocabulary(const fs::path& dir, const Tokenizer& tok, const grammar::VocabularyInfo& info) {
    Json hex = Json::array();
    for (const std::string& b : info.token_bytes) hex.push_back(Hex(b));
    const Json j = {{"vocab_type", std::string(tok.vocab_type())},
                    {"vocab_size", info.token_bytes.size()},
                    {"end_tokens", info.end_tokens},
                    {"token_bytes_hex", hex}};
    return WriteFile(dir / "vocab.json", j.dump());
}

// All of a replay's masks, one after another, each as the vocabulary's bits
// in little-endian 64-bit words (bit i of the file's byte i / 8 is token i's).
absl::Status DumpMasks(const fs::path& path, const std::vector<grammar::TokenMask>& masks) {
    std::string bytes;
    for (const grammar::TokenMask& m : masks) {
        for (uint64_t w : m.words()) {
            for (int b = 0; b < 8; ++b) bytes.push_back(static_cast<char>((w >> (8 * b)) & 0xff));
        }
    }
    return WriteFile(path, bytes);
}

absl::StatusOr<std::map<std::string, GivenSequence>> ReadTexts(const std::string& path) {
    PP_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path));
    const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat("--texts '", path, "' is not a JSON object"));
    std::map<std::string, GivenSequence> out;
    for (const auto& [name, value] : j.items()) {
        GivenSequence g;
        if (value.is_string()) {
            g.text = value.get<std::string>();
        } else if (value.is_array() && std::all_of(value.begin(), value.end(),
                                                   [](const Json& x) { return x.is_number_integer(); })) {
            g.ids = value.get<std::vector<int32_t>>();
            g.is_ids = true;
        } else {
            return absl::InvalidArgumentError(
                absl::StrCat("--texts '", path, "': \"", name, "\" is neither a string nor an array of token ids"));
        }
        out[name] = std::move(g);
    }
    return out;
}

// ---- one grammar ------------------------------------------------------------

absl::StatusOr<Json> BenchOne(const BenchGrammar& g, const std::shared_ptr<const grammar::TokenVocabulary>& vocab,
                              const Tokenizer& tok, const Sequence& seq, const BenchGrammarOptions& o,
                              const fs::path* dump, std::vector<double>* pooled_compile, std::vector<double>* pooled_cold,
                              std::vector<double>* pooled_warm) {
    CompileTimes compile;
    for (int32_t i = 0; i < o.compile_repeats; ++i) {
        PP_ASSIGN_OR_RETURN(auto compiled, CompileTimed(g.spec, vocab, &compile));
        (void)compiled;
    }
    std::vector<int32_t> content = seq.ids;
    const bool ended_with_end_token = !content.empty() && tok.IsEndOfGeneration(content.back());
    if (ended_with_end_token) content.pop_back();

    // Cold: each replay on a fresh compile, the lazy DFAs and caches built
    // as the masks need them. Warm: the same compiled grammar again.
    std::vector<double> cold_us, warm_us, first_mask_us;
    Replay kept;
    std::shared_ptr<const grammar::CompiledGrammar> last;
    for (int32_t i = 0; i < o.cold_replays; ++i) {
        PP_ASSIGN_OR_RETURN(last, CompileTimed(g.spec, vocab, nullptr));
        PP_ASSIGN_OR_RETURN(Replay r, ReplayTokens(last, content, /*keep_masks=*/i == 0 && dump != nullptr));
        cold_us.insert(cold_us.end(), r.mask_us.begin(), r.mask_us.end());
        first_mask_us.push_back(r.mask_us.front());
        if (i == 0) kept = std::move(r);
    }
    for (int32_t i = 0; i < o.warm_replays && last != nullptr; ++i) {
        PP_ASSIGN_OR_RETURN(Replay r, ReplayTokens(last, content, false));
        warm_us.insert(warm_us.end(), r.mask_us.begin(), r.mask_us.end());
        if (kept.allowed.empty()) kept = std::move(r);
    }
    pooled_compile->insert(pooled_compile->end(), compile.total_ms.begin(), compile.total_ms.end());
    pooled_cold->insert(pooled_cold->end(), cold_us.begin(), cold_us.end());
    pooled_warm->insert(pooled_warm->end(), warm_us.begin(), warm_us.end());
    std::vector<double> allowed(kept.allowed.begin(), kept.allowed.end());
    std::vector<double> compile_plus_first;
    for (size_t i = 0; i < first_mask_us.size() && i < compile.total_ms.size(); ++i) {
        compile_plus_first.push_back(compile.total_ms[i] + first_mask_us[i] / 1e3);
    }
    absl::StatusOr<std::string> gbnf = grammar::SpecToGbnf(g.spec);
    Json j = {
        {"name", g.name},
        {"kind", g.spec.kind == grammar::GrammarSpec::Kind::kJsonSchema ? "json_schema"
                 : g.spec.kind == grammar::GrammarSpec::Kind::kGbnf     ? "gbnf"
                                                                         : "json_object"},
        {"gbnf_bytes", gbnf.ok() ? gbnf->size() : 0},
        {"compile_ms", Distribution(compile.total_ms)},
        {"front_end_ms", Distribution(compile.front_end_ms)},
        {"bind_ms", Distribution(compile.bind_ms)},
        // Our compile is lazy (DFAs and mask caches grow as masks need
        // them); the first mask after a fresh compile carries that start-up.
        {"compile_plus_first_mask_ms", Distribution(compile_plus_first)},
        {"tokens", seq.ids.size()},
        {"ended_with_end_token", ended_with_end_token},
        {"finish_reason", seq.finish_reason},
        {"complete", kept.can_end},
        {"steps", kept.allowed.size()},
        {"mask_us", {{"cold", Distribution(cold_us)}, {"warm", Distribution(warm_us)}}},
        {"allowed_tokens", Distribution(allowed)},
    };
    if (dump != nullptr) {
        const fs::path gdir = *dump / "grammars";
        PP_RETURN_IF_ERROR(WriteFile(gdir / (g.name + ".gbnf"), gbnf.ok() ? *gbnf : ""));
        if (g.spec.kind == grammar::GrammarSpec::Kind::kJsonSchema) {
            PP_RETURN_IF_ERROR(WriteFile(gdir / (g.name + ".schema.json"), g.spec.text));
        }
        PP_RETURN_IF_ERROR(DumpMasks(*dump / "masks" / (g.name + ".bin"), kept.masks));
        j["dump"] = {{"ids", seq.ids}, {"text", seq.text}, {"allowed_per_step", kept.allowed}};
    }
    return j;
}

// ---- throughput -------------------------------------------------------------

struct ThroughputRun {
    double  seconds = 0.0;
    int64_t tokens = 0;
    int64_t failed = 0;
    std::vector<int32_t> lengths;   // generated tokens per request
};

ThroughputRun RunRequests(Engine& engine, std::vector<Request> reqs) {
    ThroughputRun run;
    run.lengths.assign(reqs.size(), 0);
    const BatchRunStats st = RunBatch(engine, std::move(reqs), [&](size_t i, BatchResult r) {
        run.lengths[i] = static_cast<int32_t>(r.tokens.size());
        run.tokens += static_cast<int64_t>(r.tokens.size());
        if (!r.status.ok()) ++run.failed;
    }, /*show_progress=*/false);
    run.seconds = st.seconds;
    return run;
}

absl::StatusOr<Json> BenchThroughput(const BenchGrammarOptions& o, const std::vector<BenchGrammar>& grammars) {
    PP_ASSIGN_OR_RETURN(std::vector<int32_t> batches, ParseIntList("--batch-sizes", o.batch_sizes, 1));
    const BenchGrammar* g = &grammars.front();
    if (!o.throughput_grammar.empty()) {
        auto it = std::find_if(grammars.begin(), grammars.end(),
                               [&](const BenchGrammar& x) { return x.name == o.throughput_grammar; });
        if (it == grammars.end()) {
            return absl::InvalidArgumentError(absl::StrCat("--throughput-grammar '", o.throughput_grammar,
                                                           "' is none of the grammars given"));
        }
        g = &*it;
    }
    Json out = Json::array();
    for (int32_t batch : batches) {
        // FCFS: no prefix cache, so no run reads KV an earlier one left.
        PP_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine,
                            Engine::Create(EngineOptionsFrom(o.common, 1024, batch, SchedulePolicy::kFcfs)));
        const int32_t n = std::max(batch, 4);
        std::vector<Request> constrained(n);
        for (int32_t i = 0; i < n; ++i) {
            Request& r = constrained[i];
            // Short prompts: the runs measure decode, not prefill (which
            // both sides would pay alike, diluting the ratio).
            PP_ASSIGN_OR_RETURN(r.prompt_tokens,
                                PromptIds(engine->model().tokenizer(),
                                          absl::StrCat("Reply in JSON only. Example ", i + 1, ": a realistic ",
                                                       g->name, " record.")));
            r.max_tokens = o.throughput_max_tokens;
            r.sampling.temperature = 0.0f;
            r.grammar = g->spec;
        }
        // Warm-up: the token trie and the compiled grammar, then the
        // unconstrained path; neither is timed.
        RunRequests(*engine, {constrained.front()});
        {
            Request plain = constrained.front();
            plain.grammar = {};
            RunRequests(*engine, {plain});
        }
        std::vector<double> with_tps, without_tps, ratios;
        int64_t failed = 0;
        for (int32_t rep = 0; rep < o.throughput_repeats; ++rep) {
            const ThroughputRun c = RunRequests(*engine, constrained);
            std::vector<Request> plain = constrained;
            for (int32_t i = 0; i < n; ++i) {
                plain[i].grammar = {};
                plain[i].ignore_eos = true;
                plain[i].max_tokens = std::max(1, c.lengths[i]);
            }
            const ThroughputRun u = RunRequests(*engine, std::move(plain));
            failed += c.failed + u.failed;
            with_tps.push_back(c.tokens / c.seconds);
            without_tps.push_back(u.tokens / u.seconds);
            ratios.push_back(with_tps.back() / without_tps.back());
            std::fprintf(stderr, "bench grammar: batch %d, repeat %d: %.1f tok/s constrained, %.1f unconstrained\n",
                         batch, rep + 1, with_tps.back(), without_tps.back());
        }
        out.push_back({{"batch", batch},
                       {"requests", n},
                       {"grammar", g->name},
                       {"constrained_tokens_per_s", Median(with_tps)},
                       {"unconstrained_tokens_per_s", Median(without_tps)},
                       {"ratio", Median(ratios)},
                       {"ratios", ratios},
                       {"failed_requests", failed}});
    }
    return out;
}

// ---- the command ------------------------------------------------------------

absl::Status CheckOptions(const BenchGrammarOptions& o) {
    if (o.compile_repeats < 1 || o.compile_repeats > 10000) {
        return absl::InvalidArgumentError("--compile-repeats must be in 1..10000");
    }
    if (o.cold_replays < 1 || o.cold_replays > 1000) return absl::InvalidArgumentError("--cold-replays must be in 1..1000");
    if (o.warm_replays < 0 || o.warm_replays > 1000) return absl::InvalidArgumentError("--warm-replays must be in 0..1000");
    if (o.max_tokens < 1 || o.max_tokens > 65536) return absl::InvalidArgumentError("--max-tokens must be in 1..65536");
    if (o.throughput_repeats < 1 || o.throughput_repeats > 100) {
        return absl::InvalidArgumentError("--throughput-repeats must be in 1..100");
    }
    if (!o.batch_sizes.empty() && !o.texts_file.empty()) {
        return absl::InvalidArgumentError("--batch-sizes needs a model with weights; --texts is for vocabulary-only models");
    }
    return absl::OkStatus();
}

void PrintTable(const Json& out) {
    std::printf("model %s: %lld tokens, trie built in %.1f ms\n", out["model"].get<std::string>().c_str(),
                static_cast<long long>(out["vocab"]["size"].get<int64_t>()), out["vocab"]["build_ms"].get<double>());
    std::printf("%-22s %6s %9s %9s %11s %8s %8s %8s %8s %8s\n", "grammar", "tokens", "comp p50", "comp p99",
                "comp+mask1", "cold p50", "cold p99", "warm p50", "warm p99", "warm max");
    std::printf("%-22s %6s %9s %9s %11s %8s %8s %8s %8s %8s\n", "", "", "ms", "ms", "ms", "us", "us", "us", "us", "us");
    for (const auto& g : out["grammars"]) {
        std::printf("%-22s %6lld %9.3f %9.3f %11.3f %8.1f %8.1f %8.1f %8.1f %8.1f\n",
                    g["name"].get<std::string>().c_str(), static_cast<long long>(g["tokens"].get<int64_t>()),
                    g["compile_ms"]["p50"].get<double>(), g["compile_ms"]["p99"].get<double>(),
                    g["compile_plus_first_mask_ms"]["p50"].get<double>(), g["mask_us"]["cold"]["p50"].get<double>(),
                    g["mask_us"]["cold"]["p99"].get<double>(), g["mask_us"]["warm"]["p50"].get<double>(),
                    g["mask_us"]["warm"]["p99"].get<double>(), g["mask_us"]["warm"]["max"].get<double>());
    }
    const auto& s = out["summary"];
    std::printf("all grammars: compile p50 %.3f ms; masks cold p50 %.1f p99 %.1f max %.1f us, warm p50 %.1f p99 %.1f "
                "max %.1f us\n",
                s["compile_ms"]["p50"].get<double>(), s["mask_us_cold"]["p50"].get<double>(),
                s["mask_us_cold"]["p99"].get<double>(), s["mask_us_cold"]["max"].get<double>(),
                s["mask_us_warm"]["p50"].get<double>(), s["mask_us_warm"]["p99"].get<double>(),
                s["mask_us_warm"]["max"].get<double>());
    if (out.contains("throughput")) {
        for (const auto& t : out["throughput"]) {
            std::printf("batch %2d (%s): %.1f tok/s constrained, %.1f unconstrained: %.1f%%\n", t["batch"].get<int>(),
                        t["grammar"].get<std::string>().c_str(), t["constrained_tokens_per_s"].get<double>(),
                        t["unconstrained_tokens_per_s"].get<double>(), 100.0 * t["ratio"].get<double>());
        }
    }
}

int Run(const BenchGrammarOptions& o) {
    if (absl::Status s = CheckOptions(o); !s.ok()) return Fail(s);
    absl::StatusOr<std::vector<BenchGrammar>> grammars = CollectGrammars(o);
    if (!grammars.ok()) return Fail(grammars.status());
    // Every grammar through its front end first: a bad one fails before a model loads.
    for (const BenchGrammar& g : *grammars) {
        if (absl::StatusOr<grammar::Grammar> b = grammar::BuildGrammar(g.spec); !b.ok()) {
            return Fail(absl::InvalidArgumentError(absl::StrCat("grammar '", g.name, "': ", b.status().message())));
        }
    }
    std::map<std::string, GivenSequence> texts;
    if (!o.texts_file.empty()) {
        absl::StatusOr<std::map<std::string, GivenSequence>> t = ReadTexts(o.texts_file);
        if (!t.ok()) return Fail(t.status());
        texts = *std::move(t);
    }
    // With --texts only the vocabulary is read (a vocabulary-only GGUF works).
    std::optional<Tokenizer> own_tok;
    absl::StatusOr<Loaded> loaded = absl::UnknownError("not loaded");
    const Tokenizer* tok = nullptr;
    if (o.texts_file.empty()) {
        loaded = Load(o.common, /*min_kv_tokens=*/4096);
        if (!loaded.ok()) return Fail(loaded.status());
        tok = &loaded->model->tokenizer();
    } else {
        absl::StatusOr<Tokenizer> t = LoadTokenizer(o.common.model);
        if (!t.ok()) return Fail(t.status());
        tok = &own_tok.emplace(*std::move(t));
    }

    const auto v0 = std::chrono::steady_clock::now();
    grammar::VocabularyInfo info = GrammarVocabularyInfo(*tok);
    const grammar::VocabularyInfo info_copy = o.dump_dir.empty() ? grammar::VocabularyInfo{} : info;
    auto vocab = std::make_shared<const grammar::TokenVocabulary>(std::move(info));
    const double vocab_ms = Seconds(v0, std::chrono::steady_clock::now()) * 1e3;

    std::optional<fs::path> dump;
    if (!o.dump_dir.empty()) {
        dump = fs::path(o.dump_dir);
        std::error_code ec;
        fs::create_directories(*dump / "grammars", ec);
        fs::create_directories(*dump / "masks", ec);
        if (ec) return Fail(absl::InternalError(absl::StrCat("cannot create --dump-dir '", o.dump_dir, "'")));
        if (absl::Status s = DumpVocabulary(*dump, *tok, info_copy); !s.ok()) return Fail(s);
    }

    Json results = Json::array();
    std::vector<double> all_compile, all_compile_samples, all_cold, all_warm;
    GrammarCompiler compiler(*tok);   // generation's: the trie built once, grammars cached
    for (const BenchGrammar& g : *grammars) {
        absl::StatusOr<Sequence> seq = absl::UnknownError("no sequence");
        if (o.texts_file.empty()) {
            std::fprintf(stderr, "bench grammar: generating for '%s'\n", g.name.c_str());
            seq = GenerateSequence(*loaded->runner, compiler, g, o);
        } else if (auto it = texts.find(g.name); it != texts.end()) {
            seq = GivenToSequence(*tok, it->second);
        } else {
            return Fail(absl::InvalidArgumentError(absl::StrCat("--texts has no text for grammar '", g.name, "'")));
        }
        if (!seq.ok()) {
            return Fail(absl::Status(seq.status().code(), absl::StrCat("grammar '", g.name, "': ", seq.status().message())));
        }
        absl::StatusOr<Json> r = BenchOne(g, vocab, *tok, *seq, o, dump ? &*dump : nullptr, &all_compile_samples, &all_cold,
                                          &all_warm);
        if (!r.ok()) return Fail(absl::Status(r.status().code(), absl::StrCat("grammar '", g.name, "': ", r.status().message())));
        results.push_back(*r);
        all_compile.push_back((*r)["compile_ms"]["p50"].get<double>());
    }
    Json out = {{"model", o.common.model},
                {"cpu_kernels", cpu::KernelChoiceSummary()},
                {"vocab", {{"size", vocab->size()}, {"type", std::string(tok->vocab_type())}, {"build_ms", vocab_ms}}},
                {"settings",
                 {{"max_tokens", o.max_tokens},
                  {"compile_repeats", o.compile_repeats},
                  {"cold_replays", o.cold_replays},
                  {"warm_replays", o.warm_replays},
                  {"source", o.texts_file.empty() ? "greedy generation" : "tokenized texts"}}},
                {"grammars", results}};
    if (!o.batch_sizes.empty()) {
        loaded->runner.reset();   // the engine loads its own copy
        loaded->pool.reset();
        loaded->model.reset();
        absl::StatusOr<Json> t = BenchThroughput(o, *grammars);
        if (!t.ok()) return Fail(t.status());
        out["throughput"] = *t;
    }
    out["summary"] = Json::object();
    // Compile: the distribution of the grammars' p50s, and every compile
    // of every grammar pooled. Masks: every grammar's samples pooled (each
    // step of each replay is one).
    out["summary"]["compile_ms"] = Distribution(all_compile);
    out["summary"]["compile_ms_pooled"] = Distribution(all_compile_samples);
    out["summary"]["mask_us_cold"] = Distribution(all_cold);
    out["summary"]["mask_us_warm"] = Distribution(all_warm);
    if (dump) {
        if (absl::Status s = WriteFile(*dump / "report.json", out.dump(-1, ' ', false, Json::error_handler_t::replace));
            !s.ok()) {
            return Fail(s);
        }
    }
    if (o.common.json) {
        std::printf("%s\n", out.dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
    } else {
        PrintTable(out);
    }
    return 0;
}

}  // namespace

void AddBenchGrammar(CLI::App& bench, int* exit_code) {
    auto* o = new BenchGrammarOptions();   // lives as long as the process: CLI11 binds to it
    CLI::App* cmd = bench.add_subcommand(
        "grammar", "Structured output: vocabulary, compile and per-token mask times, and constrained decode throughput");
    AddCommonOptions(cmd, &o->common);
    cmd->add_option("--schemas", o->schemas_dir, "a directory: each *.json is a JSON Schema, each *.gbnf a GBNF grammar");
    cmd->add_option("--json-schema", o->json_schema_files, "a JSON Schema file (repeatable)");
    cmd->add_option("--gbnf", o->gbnf_files, "a GBNF grammar file, start rule root (repeatable)");
    cmd->add_flag("--json-object", o->json_object, "also any JSON object (OpenAI's json_object mode)");
    cmd->add_option("--texts", o->texts_file,
                    "a JSON object {grammar name: text or [token ids]}: replay the text's tokenization or the ids "
                    "instead of generating (no weights are loaded: a vocabulary-only GGUF works)");
    o->prompt_option = cmd->add_option("--prompt", o->prompt, "the prompt for every grammar (default: one showing it)");
    cmd->add_option("--max-tokens", o->max_tokens, "tokens generated per grammar at most")->capture_default_str();
    cmd->add_option("--compile-repeats", o->compile_repeats, "cold compiles timed per grammar")->capture_default_str();
    cmd->add_option("--cold-replays", o->cold_replays, "replays each on a fresh compile")->capture_default_str();
    cmd->add_option("--warm-replays", o->warm_replays, "replays on the already-used compile")->capture_default_str();
    cmd->add_option("--dump-dir", o->dump_dir,
                    "write the vocabulary, GBNF, token ids and masks here for scripts/bench_grammar.py");
    cmd->add_option("--batch-sizes", o->batch_sizes,
                    "constrained vs unconstrained decode throughput at these batch sizes, e.g. 1,16 (default: skipped)");
    cmd->add_option("--throughput-repeats", o->throughput_repeats, "interleaved repeats (medians reported)")
        ->capture_default_str();
    cmd->add_option("--throughput-max-tokens", o->throughput_max_tokens, "tokens per request at most")
        ->capture_default_str();
    cmd->add_option("--throughput-grammar", o->throughput_grammar, "the grammar for throughput (default: the first)");
    cmd->callback([o, exit_code]() { *exit_code = Run(*o); });
}

}  // namespace prepack::cli
