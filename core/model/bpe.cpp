// Byte-level BPE merges; see bpe.h for the contract.
//
// Merging works on symbol ids, not strings: every string a merge can produce
// is interned once when the table is built (vocabulary ids, plus extra ids
// for the rare merge strings that are no vocabulary entry), so a pair lookup
// is one hash of two integers. llama.cpp compares strings instead; since
// symbols only ever grow to the right, "same text" and "same id" pick the
// same pairs. The merge loop itself (lowest rank first, leftmost on ties,
// as llama.cpp's bigram queue) is pair_merge.h, shared with SentencePiece.
#include "core/model/bpe.h"

#include "core/model/pair_merge.h"

namespace prepack {

namespace {

std::string CodePointUtf8(uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        s.push_back(static_cast<char>(0xC0 | cp >> 6));
        s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        s.push_back(static_cast<char>(0xE0 | cp >> 12));
        s.push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
        s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    return s;
}

// GPT-2's bytes_to_unicode: printable Latin-1 bytes keep their code point,
// the others take U+0100 upwards in byte order.
struct ByteMap {
    std::string byte_text[256];   // byte -> UTF-8 of its code point
    int16_t cp_byte[0x144];       // code point -> byte, -1 if none
    ByteMap() {
        for (int16_t& b : cp_byte) b = -1;
        uint32_t next = 0x100;
        for (int b = 0; b < 256; ++b) {
            const bool keeps = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
            const uint32_t cp = keeps ? static_cast<uint32_t>(b) : next++;
            byte_text[b] = CodePointUtf8(cp);
            cp_byte[cp] = static_cast<int16_t>(b);
        }
    }
};

const ByteMap& Bytes() {
    static const ByteMap kMap;
    return kMap;
}

}  // namespace

std::string BytesToBpeText(std::string_view bytes) {
    const ByteMap& map = Bytes();
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char b : bytes) out.append(map.byte_text[b]);
    return out;
}

std::string BpeTextToBytes(std::string_view text) {
    const ByteMap& map = Bytes();
    std::string out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
        const auto lead = static_cast<unsigned char>(text[i]);
        size_t len = lead < 0x80 ? 1 : lead >= 0xF8 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
        if (i + len > text.size()) len = 1;
        uint32_t cp = len == 1 ? lead : lead & (0x7F >> len);
        bool well_formed = len == 1 ? lead < 0x80 : true;
        for (size_t k = 1; k < len; ++k) {
            const auto c = static_cast<unsigned char>(text[i + k]);
            if ((c & 0xC0) != 0x80) well_formed = false;
            cp = cp << 6 | (c & 0x3F);
        }
        if (well_formed && cp < 0x144 && map.cp_byte[cp] >= 0) {
            out.push_back(static_cast<char>(map.cp_byte[cp]));
        } else {
            out.append(text.substr(i, well_formed ? len : 1));   // not a byte code point: as is
            if (!well_formed) len = 1;
        }
        i += len;
    }
    return out;
}

BpeMerges BpeMerges::Build(const std::unordered_map<std::string, int32_t>& piece_to_id,
                           int32_t vocab_size, const std::vector<std::string>& merges) {
    BpeMerges m;
    m.vocab_size_ = vocab_size;
    std::unordered_map<std::string, int32_t> extra;   // strings outside the vocabulary
    std::vector<std::string> extra_text;
    auto intern = [&](const std::string& s) -> int32_t {
        const auto it = piece_to_id.find(s);
        if (it != piece_to_id.end()) return it->second;
        const auto [e, inserted] = extra.emplace(s, vocab_size + static_cast<int32_t>(extra_text.size()));
        if (inserted) extra_text.push_back(s);
        return e->second;
    };
    const ByteMap& map = Bytes();
    for (int b = 0; b < 256; ++b) m.byte_symbol_[b] = intern(map.byte_text[b]);

    m.merges_.reserve(merges.size());
    std::string joined;
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const std::string& line = merges[rank];
        const size_t space = line.find(' ', 1);
        if (space == std::string::npos) continue;
        const std::string left = line.substr(0, space), right = line.substr(space + 1);
        joined.assign(left).append(right);
        const int32_t l = intern(left), r = intern(right), result = intern(joined);
        m.merges_.emplace(Key(l, r), Merge{static_cast<int32_t>(rank), result});   // first rank wins
    }

    // An extra symbol that survives merging has no id: its bytes' own pieces
    // stand in (a byte whose piece is missing is dropped, as in llama.cpp).
    m.extra_fallback_.resize(extra_text.size());
    for (size_t i = 0; i < extra_text.size(); ++i) {
        for (unsigned char b : BpeTextToBytes(extra_text[i])) {
            const int32_t s = m.byte_symbol_[b];
            if (s < vocab_size) m.extra_fallback_[i].push_back(s);
        }
    }
    return m;
}

void BpeMerges::Emit(int32_t symbol, std::vector<int32_t>* out) const {
    if (symbol < vocab_size_) {
        out->push_back(symbol);
    } else {
        const auto& ids = extra_fallback_[symbol - vocab_size_];
        out->insert(out->end(), ids.begin(), ids.end());
    }
}

void BpeMerges::EncodeWord(std::string_view word, bool ignore_merges,
                           const std::unordered_map<std::string, int32_t>& piece_to_id,
                           std::vector<int32_t>* out) const {
    if (word.empty()) return;
    if (ignore_merges) {
        const auto it = piece_to_id.find(BytesToBpeText(word));
        if (it != piece_to_id.end()) {
            out->push_back(it->second);
            return;
        }
    }
    const auto n = static_cast<int32_t>(word.size());
    if (n == 1) {
        Emit(byte_symbol_[static_cast<unsigned char>(word[0])], out);
        return;
    }
    std::vector<int32_t> initial(word.size());
    for (int32_t i = 0; i < n; ++i) initial[i] = byte_symbol_[static_cast<unsigned char>(word[i])];
    // Lowest rank first: the priority is the negated rank.
    const auto merge = [this](int32_t left, int32_t right) -> std::optional<PairMerge> {
        const auto it = merges_.find(Key(left, right));
        if (it == merges_.end()) return std::nullopt;
        return PairMerge{-static_cast<double>(it->second.rank), it->second.result};
    };
    for (int32_t symbol : MergeAdjacentPairs(initial, merge)) Emit(symbol, out);
}

}  // namespace prepack
