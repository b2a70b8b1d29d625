// Server reflection (grpc.reflection.v1 and v1alpha), ours rather than
// gRPC's plugin, for one reason: the plugin's service is registered by the
// server builder and answers every caller, so with --auth-token-file anyone
// could still read the API. These answer only callers the Authenticator
// lets through (UNAUTHENTICATED otherwise). They serve what the plugin does:
// the service list and the file descriptors (with their dependencies) from
// protobuf's generated pool.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "auth.h"

namespace prepackd {

// Both reflection services. `services` are the full names ListServices
// reports (the reflection services add themselves).
std::vector<std::unique_ptr<grpc::Service>> MakeReflectionServices(const Authenticator& auth,
                                                                   std::vector<std::string> services);

}  // namespace prepackd
