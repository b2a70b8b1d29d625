// The two versions of server reflection, grpc.reflection.v1 and v1alpha,
// as type bundles: they differ in their package only, so one implementation
// (reflection_service.cpp) and one set of tests serve both.
#pragma once

#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"

namespace prepackd {

struct ReflectionV1 {
    using Service = grpc::reflection::v1::ServerReflection;
    using Request = grpc::reflection::v1::ServerReflectionRequest;
    using Response = grpc::reflection::v1::ServerReflectionResponse;
};
struct ReflectionV1alpha {
    using Service = grpc::reflection::v1alpha::ServerReflection;
    using Request = grpc::reflection::v1alpha::ServerReflectionRequest;
    using Response = grpc::reflection::v1alpha::ServerReflectionResponse;
};

}  // namespace prepackd
