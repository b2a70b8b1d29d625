// Request decoding for the raw (ByteBuffer) handlers. gRPC's generated
// handlers parse requests themselves and, when protobuf refuses the bytes
// (invalid UTF-8 in a proto3 string, a malformed message), answer
// UNIMPLEMENTED with no message before any handler runs, so nothing is
// logged or counted. prepackd registers its methods raw and decodes here:
// a refusal becomes INVALID_ARGUMENT whose message names the field (or the
// byte where the message stops being protobuf).
#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace prepackd {

// Parses `bytes` into *out. INVALID_ARGUMENT when it is not a valid
// message of out's type: "text: invalid UTF-8 at byte 3 ..." for a string
// field, "request: not a valid prepack.v1.GenerateRequest (...)" otherwise.
grpc::Status DecodeRequest(const grpc::ByteBuffer& bytes, google::protobuf::Message* out);

// Why `wire` does not parse as `type`, naming the field ("requests[2].text")
// where one is at fault; "" when the walk finds nothing wrong. Exposed for
// tests.
std::string DiagnoseWire(const google::protobuf::Descriptor* type, std::string_view wire);

// The length of a length-delimited field `field_number` when it is the
// first field of the serialized message (as every protobuf library writes
// fields in number order, a GenerateRequest's `text`, field 1, comes first),
// read from the first bytes alone: O(1) however long the message. nullopt
// when the message starts otherwise.
std::optional<uint64_t> LeadingFieldLength(const grpc::ByteBuffer& bytes, int field_number);

// `message` serialized for a raw handler's response.
grpc::ByteBuffer Encode(const google::protobuf::Message& message);

}  // namespace prepackd
