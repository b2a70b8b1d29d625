#include "request_decoder.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpcpp/impl/codegen/proto_utils.h>

#include <map>
#include <string>
#include <vector>

#include "convert.h"

namespace prepackd {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::io::CodedInputStream;
using google::protobuf::internal::WireFormatLite;

// protobuf's own nesting limit: deeper input fails to parse anyway.
constexpr int kMaxDepth = 100;

// Positions are offsets into the whole request: one stream reads every level.
std::string At(const CodedInputStream& in) { return " at byte " + std::to_string(in.CurrentPosition()); }

// Walks one message's fields (up to the stream's current limit) and returns
// the first problem found, "" for none.
std::string Walk(const Descriptor* type, CodedInputStream* in, const std::string& prefix, int depth) {
    if (depth > kMaxDepth) return "request: messages nested deeper than " + std::to_string(kMaxDepth);
    std::map<int, int> seen;   // field number -> occurrences so far (the index of a repeated one)
    while (true) {
        const int tag_at = in->CurrentPosition();
        const int left = in->BytesUntilLimit();   // before: a failed read may consume bytes
        const uint32_t tag = in->ReadTag();
        if (tag == 0) {
            // The end of this message (its limit), or a zero or malformed
            // tag, which is never valid.
            if (left == 0) return "";
            return "request: not protobuf (invalid field tag at byte " + std::to_string(tag_at) + ")";
        }
        const int number = static_cast<int>(WireFormatLite::GetTagFieldNumber(tag));
        const auto wire = WireFormatLite::GetTagWireType(tag);
        const FieldDescriptor* field = type->FindFieldByNumber(number);
        // Appended piece by piece: GCC 12 warns (-Wrestrict, wrongly) about
        // `"literal" + std::to_string(...)` here.
        std::string name = prefix;
        if (field != nullptr) {
            name += field->name();
        } else {
            name += "field ";
            name += std::to_string(number);
        }
        // An element's index, except for a packed array (all elements in one field).
        const bool packed = wire == WireFormatLite::WIRETYPE_LENGTH_DELIMITED && field != nullptr &&
                            field->type() != FieldDescriptor::TYPE_STRING &&
                            field->type() != FieldDescriptor::TYPE_BYTES &&
                            field->type() != FieldDescriptor::TYPE_MESSAGE;
        if (field != nullptr && field->is_repeated() && !packed) {
            name += '[';
            name += std::to_string(seen[number]++);
            name += ']';
        }
        if (wire != WireFormatLite::WIRETYPE_LENGTH_DELIMITED || field == nullptr ||
            (field->type() != FieldDescriptor::TYPE_STRING && field->type() != FieldDescriptor::TYPE_MESSAGE)) {
            // Scalars, packed arrays, bytes and unknown fields: only their
            // framing can be wrong.
            if (wire > WireFormatLite::WIRETYPE_FIXED32) {
                return "request: not protobuf (wire type " + std::to_string(wire) + " at byte " +
                       std::to_string(tag_at) + ")";
            }
            if (!WireFormatLite::SkipField(in, tag)) return name + ": truncated or malformed" + At(*in);
            continue;
        }
        uint32_t length = 0;
        if (!in->ReadVarint32(&length)) return name + ": truncated length" + At(*in);
        if (length > static_cast<uint32_t>(in->BytesUntilLimit())) {
            return name + ": " + std::to_string(length) + " bytes announced, " +
                   std::to_string(in->BytesUntilLimit()) + " left" + At(*in);
        }
        const int start = in->CurrentPosition();
        if (field->type() == FieldDescriptor::TYPE_STRING) {
            std::string value;
            if (!in->ReadString(&value, static_cast<int>(length))) return name + ": truncated" + At(*in);
            const size_t ok = ValidUtf8Prefix(value);
            if (ok < value.size()) {
                return name + ": invalid UTF-8 at byte " + std::to_string(ok) + " of the field (byte " +
                       std::to_string(start + static_cast<int>(ok)) +
                       " of the request); proto3 strings must be UTF-8";
            }
            continue;
        }
        const auto limit = in->PushLimit(static_cast<int>(length));
        std::string inner = Walk(field->message_type(), in, name + ".", depth + 1);
        in->PopLimit(limit);
        if (!inner.empty()) return inner;
    }
}

}  // namespace

std::string DiagnoseWire(const Descriptor* type, std::string_view wire) {
    CodedInputStream in(reinterpret_cast<const uint8_t*>(wire.data()), static_cast<int>(wire.size()));
    // A limit at the top level too, so every level ends the same way.
    in.PushLimit(static_cast<int>(wire.size()));
    return Walk(type, &in, "", 0);
}

grpc::Status DecodeRequest(const grpc::ByteBuffer& bytes, google::protobuf::Message* out) {
    grpc::ByteBuffer copy(bytes);   // shares the slices; Deserialize consumes its argument
    if (grpc::SerializationTraits<google::protobuf::Message>::Deserialize(&copy, out).ok()) return grpc::Status::OK;
    // The rare path: flatten the bytes and find out what is wrong.
    std::vector<grpc::Slice> slices;
    std::string wire;
    if (bytes.Dump(&slices).ok()) {
        for (const grpc::Slice& s : slices) wire.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
    std::string why = DiagnoseWire(out->GetDescriptor(), wire);
    if (why.empty()) {
        why = "request: not a valid " + out->GetDescriptor()->full_name() + " (" + std::to_string(wire.size()) + " bytes)";
    }
    else if (why.rfind("request:", 0) == 0) why += " for " + out->GetDescriptor()->full_name();
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, why);
}

std::optional<uint64_t> LeadingFieldLength(const grpc::ByteBuffer& bytes, int field_number) {
    grpc::ByteBuffer copy(bytes);   // shares the slices
    grpc::ProtoBufferReader reader(&copy);
    const void* data = nullptr;
    int size = 0;
    if (!reader.Next(&data, &size) || size <= 0) return std::nullopt;
    // Tag and length take at most 15 bytes; the first slice holds them for
    // any message long enough to matter.
    CodedInputStream in(static_cast<const uint8_t*>(data), size);
    const uint32_t tag = in.ReadTag();
    if (tag != WireFormatLite::MakeTag(field_number, WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) return std::nullopt;
    uint64_t length = 0;
    if (!in.ReadVarint64(&length)) return std::nullopt;
    return length;
}

grpc::ByteBuffer Encode(const google::protobuf::Message& message) {
    grpc::ByteBuffer bytes;
    bool own = false;
    // Fails only for messages over 2 GiB, which prepackd never builds.
    (void)grpc::SerializationTraits<google::protobuf::Message>::Serialize(message, &bytes, &own);
    return bytes;
}

}  // namespace prepackd
