// The pre-tokenizer table and the PCRE2 splitter; see pretokenizer.h.
//
// The expressions below are llama.cpp's, spelled as llama.cpp spells them
// (its std::regex dialect), and translated by ToPcre2 when compiled; keeping
// llama.cpp's spelling makes them easy to compare with upstream
// (tests/tokenizer_pretokenizer_names_test.cc compares them with the list
// scripts/extract_llama_pre_table.py reads out of llama-vocab.cpp). Where
// llama.cpp runs a hand-written matcher instead of the expression (the GPT-2
// and Llama 3 expressions), the matcher is equivalent to the expression, so
// the expression itself runs here. llama.cpp evaluates `\p{..}` on a
// "collapsed" text (each non-ASCII code point replaced by a byte standing for
// its category); for the classes used here (L, N, P, S, M) that gives the same
// answers as PCRE2's Unicode properties, up to the Unicode version of the
// two tables (PCRE2 10.42: Unicode 14).
#include "core/model/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>

namespace prepack {

namespace {

// llama.cpp's whitespace (unicode_set_whitespace: the White_Space property),
// as the body of a character class.
constexpr std::string_view kWhitespaceClass =
    "\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}";

// ---- the expressions (llama.cpp dialect) -----------------------------------
//
// One constant per expression that several types share; the table below
// lists each type's expressions in llama.cpp's order. Where llama.cpp writes
// a non-ASCII character, the table writes PCRE2's \x{HEX} for it: the
// source stays ASCII, so no editor's Unicode normalisation can turn one
// character of a range into another (U+212A KELVIN SIGN into K, say).

// GPT-2's expression.
constexpr const char* kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
// Llama 3's `(?i:'s|...)` as llama.cpp adapted it for std::regex.
constexpr const char* kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// Qwen2: Llama 3's with single digits.
constexpr const char* kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// Qwen3.5: Qwen2's with combining marks kept inside words.
constexpr const char* kQwen35 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// Mistral's tekken (Nemo, Small 3, Pixtral 12B): words split at a change
// from lower to upper case. Upstream writes the cases as \p{Lu}... and
// \p{Ll}...; llama.cpp, whose std::regex cannot tell cases of non-ASCII
// letters apart, spells them "a letter that is not a-z" and "a letter that
// is not A-Z", and so does this table: prepack tokenizes as llama.cpp does
// (tests/tokenizer_tekken_test.cc shows where that differs from Mistral's
// own encoder).
constexpr const char* kTekken =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|"
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// OpenAI's o200k (GPT-4o; Phi-4-mini, Llama 4): tekken's case split with
// English contractions kept on the word and digits in threes.
constexpr const char* kGpt4o =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+"
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|"
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*"
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// Granite's multilingual embedding vocabulary: GPT-4o's with marks as letters.
constexpr const char* kGraniteEmbMulti =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+"
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|"
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*"
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// DeepSeek V3 and its relatives: digits in threes, CJK runs, then words
// whose leading ASCII punctuation sticks to a following Latin word.
constexpr const char* kCjkKana = "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+";
constexpr const char* kDeepseek3Words =
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
    " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";
// BLOOM, Poro, GPT-3 Finnish, Viking: anything up to a space or punctuation.
constexpr const char* kBloom = " ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+";
constexpr const char* kDeepseekCjk = "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+";

// What llama.cpp ties to a `tokenizer.ggml.pre` name. The flags are those
// that change the ids (llama.cpp's clean_spaces only rewrites decoded text,
// which prepack does not do).
struct Family {
    std::vector<const char*> names;
    std::vector<const char*> expressions;
    bool ignore_merges = false;   // a word that is a vocabulary entry is taken whole
    bool add_bos = false;         // BOS when the file has no add_bos_token
    bool default_bos = true;      // BOS id 11 when the file names none (chatglm: none)
};

// Each row is one LLAMA_VOCAB_PRE_TYPE_* of llama.cpp's llama-vocab.cpp
// (the names it maps onto that type with the same flags; types whose
// expressions are equal share a row). tests/data/tokenizer/
// llama_cpp_pre_tokenizers.json is the upstream list the tests compare with.
const std::vector<Family>& Families() {
    static const std::vector<Family> kFamilies = {
        // No or unknown-to-the-converter pre-tokenizer.
        {.names = {"default"}, .expressions = {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"}},
        {.names = {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
                   "jina-v5-nano"},
         .expressions = {kLlama3}, .ignore_merges = true, .add_bos = true},
        {.names = {"dbrx", "smaug-bpe"}, .expressions = {kLlama3}},
        {.names = {"chatglm-bpe"}, .expressions = {kLlama3}, .default_bos = false},
        {.names = {"glm4", "glm5"}, .expressions = {kLlama3}, .ignore_merges = true, .default_bos = false},
        {.names = {"deepseek-llm"},
         .expressions = {"[\r\n]",
                         "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+",
                         "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+", "\\s+$", kDeepseekCjk, "\\p{N}+"}},
        {.names = {"deepseek-coder"},
         .expressions = {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kDeepseekCjk, "\\p{N}"}},
        {.names = {"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"},
         .expressions = {"\\p{N}{1,3}", kCjkKana, kDeepseek3Words}},
        {.names = {"spark2_5"},
         .expressions = {"\\p{N}{1,3}", kCjkKana,
                         "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
                         " ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
                         "\\p{N}"}},
        {.names = {"youtu"},
         .expressions = {"[\\x{AC00}-\\x{D7A3}\\x{3131}-\\x{318E}]+|[\\x{FF01}\\x{2026}\\x{201C}\\x{201D}\\x{2018}\\x{2019}\\x{2014}\\x{FF1A}\\x{FF1B}\\x{FF0C}\\x{3001}-\\x{303F}\\x{FE30}-\\x{FE4F}]+|[\\x{3105}-\\x{312F}]+|[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
                         "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
                         "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|"
                         "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
                         "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|"
                         "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
         .ignore_merges = true},
        {.names = {"falcon"}, .expressions = {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"}},
        {.names = {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"},
         .expressions = {"\\p{N}", kGpt2}},
        {.names = {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
                   "modern-bert", "exaone4", "mpt", "olmo", "jais", "trillion", "granite-docling"},
         .expressions = {kGpt2}},
        {.names = {"jais-2"},
         .expressions = {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
                         "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|"
                         "\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|"
                         "\\s{1,2}(?!\\S)|\\s{1}"}},
        {.names = {"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan", "solar-open",
                   "grok-2"},
         .expressions = {kQwen2}},
        {.names = {"qwen35"}, .expressions = {kQwen35}},
        {.names = {"laguna"}, .expressions = {"[^\\n]+|[\\n]+", kQwen2}},
        {.names = {"ufakzeka"},
         .expressions = {"[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
                         "\\s+(?!\\S)|\\s+"}},
        {.names = {"minicpm5"},
         .expressions = {"\\p{N}{1,3}",
                         "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
                         "\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
         .ignore_merges = true},
        {.names = {"seed-coder"},
         .expressions = {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
                         "\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
        {.names = {"bailingmoe", "bailingmoe2", "llada-moe"},
         .expressions = {"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|"
                         " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"}},
        {.names = {"exaone-moe"},
         .expressions = {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|"
                         "[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|"
                         "\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"}},
        {.names = {"tekken"}, .expressions = {kTekken}, .ignore_merges = true, .add_bos = true},
        {.names = {"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, .expressions = {kGpt4o}},
        {.names = {"granite-embed-multi-97m"}, .expressions = {kGraniteEmbMulti}, .ignore_merges = true},
        {.names = {"chameleon"},
         .expressions = {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
                         "[\\p{P}!-/:-@\\[-`{-~]", kGpt2},
         .add_bos = true},
        {.names = {"poro-chat", "bloom", "gpt3-finnish"}, .expressions = {kBloom}},
        {.names = {"viking"}, .expressions = {kBloom, "\\p{N}"}},
    };
    return kFamilies;
}

// Names llama.cpp accepts that prepack refuses, and why: what each would need.
struct Refused {
    const char* name;
    const char* needs;
};
constexpr Refused kRefused[] = {
    {"kimi-k2", "llama.cpp's hand-written Kimi-K2 splitter (Han runs apart) and a vocabulary without merges"},
    {"afmoe", "llama.cpp's hand-written AFMoE digit grouping (by length modulo 3)"},
    {"superbpe", "splitting at the empty matches of a look-ahead (digits grouped in threes from the right)"},
    {"tiny_aya", "std::wregex's \\d and \\b (digits grouped in threes from the right)"},
    {"cohere2moe", "std::wregex's \\d and \\b (digits grouped in threes from the right)"},
    {"gemma4", "SentencePiece-style BPE: raw UTF-8 pieces with spaces as U+2581, no byte-level encoding"},
    {"granite-embed-multi-311m", "SentencePiece-style BPE: raw UTF-8 pieces with spaces as U+2581"},
    {"sarvam-moe", "SentencePiece-style BPE: raw UTF-8 pieces with spaces as U+2581"},
    {"whitespace", "a vocabulary of raw UTF-8 words split at whitespace (an embedding model's)"},
    {"jina-v1-en", "a separator token after the text (BERT-style embedding models)"},
    {"jina-v2-code", "a separator token after the text (BERT-style embedding models)"},
    {"roberta-bpe", "a separator token after the text (BERT-style embedding models)"},
};

const Family* FindFamily(std::string_view name) {
    for (const Family& f : Families()) {
        for (const char* n : f.names) {
            if (name == n) return &f;
        }
    }
    return nullptr;
}

const Refused* FindRefused(std::string_view name) {
    for (const Refused& r : kRefused) {
        if (name == r.name) return &r;
    }
    return nullptr;
}

struct CodeDeleter {
    void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};
struct MatchDataDeleter {
    void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};

// Whether `rest` starts with one of the letter sub-categories "{Lu}",
// "{Ll}", "{Lt}", "{Lm}", "{Lo}".
bool IsLetterSubcategory(std::string_view rest) {
    return rest.size() >= 4 && rest[0] == '{' && rest[1] == 'L' && rest[3] == '}' &&
           std::string_view("ultmo").find(rest[2]) != std::string_view::npos;
}

// Start of the code point after the one at `i` (input is valid UTF-8).
size_t NextCodePoint(std::string_view s, size_t i) {
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
    return i;
}

}  // namespace

struct PreTokenizer::Compiled {
    std::vector<std::unique_ptr<pcre2_code, CodeDeleter>> codes;
};

std::string PreTokenizer::ToPcre2(std::string_view re) {
    std::string out;
    out.reserve(re.size() + 64);
    bool in_class = false;
    for (size_t i = 0; i < re.size(); ++i) {
        const char c = re[i];
        if (c == '\\' && i + 1 < re.size()) {
            const char next = re[++i];
            if (next == 's') {
                if (in_class) {
                    out.append(kWhitespaceClass);
                } else {
                    out.append("[").append(kWhitespaceClass).append("]");
                }
            } else if (next == 'S' && !in_class) {
                out.append("[^").append(kWhitespaceClass).append("]");
            } else if (next == 'p' && IsLetterSubcategory(re.substr(i + 1))) {
                // llama.cpp reads \p{Lu} \p{Ll} \p{Lt} \p{Lm} \p{Lo} all
                // as \p{L} (its collapsed text keeps one letter class).
                out.append("\\p{L}");
                i += 4;   // past "{Lx}"
            } else {
                // (`\S` inside a class occurs in none of the expressions.)
                out.push_back(c);
                out.push_back(next);
            }
            continue;
        }
        if (!in_class && c == '[') {
            in_class = true;
        } else if (in_class && c == ']') {
            in_class = false;
        } else if (!in_class && c == '$') {
            out.append("\\z");
            continue;
        }
        out.push_back(c);
    }
    return out;
}

absl::StatusOr<PreTokenizer> PreTokenizer::ForName(std::string_view name) {
    if (name.empty()) name = "default";
    const Family* family = FindFamily(name);
    if (family == nullptr) {
        if (const Refused* refused = FindRefused(name); refused != nullptr) {
            return absl::InvalidArgumentError(absl::StrCat(
                "tokenizer: pre-tokenizer '", std::string(name),
                "' (tokenizer.ggml.pre) is not supported: it needs ", refused->needs));
        }
        std::string known;
        for (const std::string& n : KnownNames()) absl::StrAppend(&known, known.empty() ? "" : ", ", n);
        return absl::InvalidArgumentError(absl::StrCat(
            "tokenizer: unknown pre-tokenizer '", std::string(name), "' (tokenizer.ggml.pre); known: ", known));
    }
    auto compiled = std::make_shared<Compiled>();
    for (const char* regex : family->expressions) {
        const std::string pattern = ToPcre2(regex);
        int error = 0;
        PCRE2_SIZE offset = 0;
        pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                         PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
        if (code == nullptr) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(error, message, sizeof message);
            return absl::InternalError(absl::StrCat("tokenizer: pre-tokenizer '", std::string(name), "': PCRE2 rejects '",
                                                    pattern, "' at ", offset, ": ",
                                                    reinterpret_cast<const char*>(message)));
        }
        // JIT is an optimisation only: without it (an unsupported CPU or a
        // build without JIT) pcre2_match interprets the same code.
        (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
        compiled->codes.emplace_back(code);
    }
    PreTokenizer pre;
    pre.name_ = std::string(name);
    pre.ignore_merges_ = family->ignore_merges;
    pre.add_bos_default_ = family->add_bos;
    pre.has_default_bos_ = family->default_bos;
    pre.expressions_.assign(family->expressions.begin(), family->expressions.end());
    pre.compiled_ = std::move(compiled);
    return pre;
}

std::vector<std::string> PreTokenizer::RefusedNames() {
    std::vector<std::string> names;
    for (const Refused& r : kRefused) names.emplace_back(r.name);
    std::sort(names.begin(), names.end());
    return names;
}

std::vector<std::string> PreTokenizer::KnownNames() {
    std::vector<std::string> names;
    for (const Family& f : Families()) names.insert(names.end(), f.names.begin(), f.names.end());
    std::sort(names.begin(), names.end());
    return names;
}

absl::Status PreTokenizer::Split(std::string_view text,
                                 std::vector<std::pair<size_t, size_t>>* words) const {
    std::vector<std::pair<size_t, size_t>> pieces;
    if (!text.empty()) pieces.emplace_back(0, text.size());
    std::vector<std::pair<size_t, size_t>> next;
    // Match data per call: Encode may run on several threads at once.
    std::unique_ptr<pcre2_match_data, MatchDataDeleter> md(pcre2_match_data_create(1, nullptr));
    if (md == nullptr) return absl::ResourceExhaustedError("tokenizer: PCRE2 match data");

    for (const auto& code : compiled_->codes) {
        next.clear();
        next.reserve(pieces.size() * 2);
        for (const auto& [begin, end] : pieces) {
            // Each piece is a subject of its own, as llama.cpp iterates over
            // [begin, end): look-ahead and `\z` stop at its end.
            const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + begin);
            const size_t length = end - begin;
            size_t at = 0, gap = 0;   // search position; start of the unmatched stretch
            while (at < length) {
                int rc = pcre2_match(code.get(), subject, length, at, PCRE2_NO_UTF_CHECK, md.get(), nullptr);
                if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
                    // The interpreter keeps its backtracking on the heap.
                    rc = pcre2_match(code.get(), subject, length, at, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                                     md.get(), nullptr);
                }
                if (rc == PCRE2_ERROR_NOMATCH) break;
                if (rc < 0) {
                    PCRE2_UCHAR message[256];
                    pcre2_get_error_message(rc, message, sizeof message);
                    return absl::InternalError(absl::StrCat("tokenizer: pre-tokenizer '", name_,
                                                            "': PCRE2 match failed: ",
                                                            reinterpret_cast<const char*>(message)));
                }
                const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
                const size_t m_begin = ov[0], m_end = ov[1];
                if (m_end == m_begin) {
                    // An empty match adds no text (llama.cpp keeps an empty
                    // piece, which encodes to nothing); step over one code
                    // point, which stays in the unmatched stretch.
                    at = NextCodePoint(std::string_view(text.data() + begin, length), m_begin);
                    continue;
                }
                if (m_begin > gap) next.emplace_back(begin + gap, begin + m_begin);
                next.emplace_back(begin + m_begin, begin + m_end);
                at = gap = m_end;
            }
            if (gap < length) next.emplace_back(begin + gap, end);
        }
        pieces.swap(next);
    }
    words->insert(words->end(), pieces.begin(), pieces.end());
    return absl::OkStatus();
}

}  // namespace prepack
