#include "core/grammar/gbnf_regex_pool.h"

#include <algorithm>
#include <cstring>

namespace prepack::grammar::gbnf {
namespace {

using Kind = RegexNode::Kind;

// Every field that makes two nodes different, as bytes.
std::string StructuralKey(const RegexNode& node) {
    std::string key;
    key.push_back(static_cast<char>(node.kind));
    auto append = [&key](const void* data, size_t size) { key.append(static_cast<const char*>(data), size); };
    if (node.kind == Kind::kByteSet) append(node.bytes.data(), sizeof(node.bytes));
    if (node.kind == Kind::kRepeat) {
        append(&node.min, sizeof(node.min));
        append(&node.max, sizeof(node.max));
    }
    append(node.children.data(), node.children.size() * sizeof(int32_t));
    return key;
}

int64_t SaturatingAdd(int64_t a, int64_t b, int64_t cap) { return std::min(a + b, cap); }
int64_t SaturatingMul(int64_t a, int64_t b, int64_t cap) {
    if (a == 0 || b == 0) return 0;
    return a > cap / b ? cap : std::min(a * b, cap);
}

}  // namespace

// Flattening copies a nested concatenation's children into its parent;
// only small ones, so that a chain of rules each adding one item to the
// previous stays linear in memory instead of quadratic.
constexpr size_t kMaxFlattenedChildren = 16;

RegexPool::RegexPool(int32_t max_nodes, int32_t max_depth) : max_nodes_(max_nodes), max_depth_(max_depth) {
    RegexNode empty;
    empty.kind = Kind::kEmpty;
    nodes_.push_back(empty);
    expanded_size_.push_back(1);
    depth_.push_back(1);
    index_of_.emplace(StructuralKey(empty), 0);
    empty_ = 0;
}

int32_t RegexPool::Intern(RegexNode node) {
    if (!status_.ok()) return empty_;
    std::string key = StructuralKey(node);
    auto it = index_of_.find(key);
    if (it != index_of_.end()) return it->second;

    // The size a tree-walking consumer would see: shared children at every
    // use, a bounded repetition at its largest count.
    const int64_t cap = int64_t{max_nodes_} + 1;
    int64_t size = 1;
    int64_t children_size = 0;
    for (int32_t child : node.children) children_size = SaturatingAdd(children_size, expanded_size_[child], cap);
    if (node.kind == Kind::kRepeat) {
        const int64_t copies = std::max<int64_t>({int64_t{node.min}, int64_t{node.max}, 1});
        children_size = SaturatingMul(children_size, copies, cap);
    }
    size = SaturatingAdd(size, children_size, cap);
    int32_t depth = 1;
    for (int32_t child : node.children) depth = std::max(depth, depth_[child] + 1);
    if (size > max_nodes_ || static_cast<int64_t>(nodes_.size()) >= max_nodes_) {
        status_ = absl::ResourceExhaustedError(absl::StrCat(
            "GBNF: a lexeme's regular expression needs more than ", max_nodes_,
            " nodes once repetitions and UTF-8 classes are expanded (GbnfLimits::max_regex_nodes)"));
        return empty_;
    }
    if (depth > max_depth_) {
        status_ = absl::ResourceExhaustedError(absl::StrCat(
            "GBNF: a lexeme's regular expression is nested deeper than ", max_depth_,
            " levels once regular rules are inlined (4 x GbnfLimits::max_nesting)"));
        return empty_;
    }
    nodes_.push_back(std::move(node));
    expanded_size_.push_back(size);
    depth_.push_back(depth);
    const int32_t index = static_cast<int32_t>(nodes_.size() - 1);
    index_of_.emplace(std::move(key), index);
    return index;
}

int32_t RegexPool::ByteRange(uint8_t lo, uint8_t hi) {
    std::array<uint64_t, 4> bytes{};
    for (int b = lo; b <= hi; ++b) bytes[b >> 6] |= uint64_t{1} << (b & 63);
    return Bytes(bytes);
}

int32_t RegexPool::Bytes(const std::array<uint64_t, 4>& bytes) {
    RegexNode node;
    node.kind = Kind::kByteSet;
    node.bytes = bytes;
    return Intern(std::move(node));
}

int32_t RegexPool::Concat(const std::vector<int32_t>& children) {
    std::vector<int32_t> flat;
    for (int32_t child : children) {
        const RegexNode& c = nodes_[child];
        if (c.kind == Kind::kEmpty) continue;
        if (c.kind == Kind::kConcat && c.children.size() <= kMaxFlattenedChildren) {
            flat.insert(flat.end(), c.children.begin(), c.children.end());
        } else {
            flat.push_back(child);
        }
    }
    if (flat.empty()) return empty_;
    if (flat.size() == 1) return flat[0];
    RegexNode node;
    node.kind = Kind::kConcat;
    node.children = std::move(flat);
    return Intern(std::move(node));
}

int32_t RegexPool::Alt(const std::vector<int32_t>& children) {
    std::vector<int32_t> flat;
    std::array<uint64_t, 4> single_bytes{};
    bool has_single_bytes = false;
    for (int32_t child : children) {
        const RegexNode& c = nodes_[child];
        if (c.kind == Kind::kAlt && c.children.size() <= kMaxFlattenedChildren) {
            for (int32_t grandchild : c.children) {
                if (nodes_[grandchild].kind == Kind::kByteSet) {
                    for (int w = 0; w < 4; ++w) single_bytes[w] |= nodes_[grandchild].bytes[w];
                    has_single_bytes = true;
                } else {
                    flat.push_back(grandchild);
                }
            }
        } else if (c.kind == Kind::kByteSet) {
            // One byte out of several sets is one byte out of their union.
            for (int w = 0; w < 4; ++w) single_bytes[w] |= c.bytes[w];
            has_single_bytes = true;
        } else {
            flat.push_back(child);
        }
    }
    if (has_single_bytes) flat.push_back(Bytes(single_bytes));
    // Order does not matter to a choice: sorted, identical choices share a node.
    std::sort(flat.begin(), flat.end());
    flat.erase(std::unique(flat.begin(), flat.end()), flat.end());
    if (flat.empty()) return empty_;
    if (flat.size() == 1) return flat[0];
    RegexNode node;
    node.kind = Kind::kAlt;
    node.children = std::move(flat);
    return Intern(std::move(node));
}

int32_t RegexPool::Repeat(int32_t child, int32_t min, int32_t max) {
    if (max == 0 || nodes_[child].kind == Kind::kEmpty) return empty_;
    if (min == 1 && max == 1) return child;
    RegexNode node;
    node.kind = Kind::kRepeat;
    node.children = {child};
    node.min = min;
    node.max = max;
    return Intern(std::move(node));
}

}  // namespace prepack::grammar::gbnf
