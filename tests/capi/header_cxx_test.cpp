// prepack.h must compile as C++ too (warnings as errors), and its enums and
// structs must be usable from C++ code as they are from C.
#include "prepack/prepack.h"

#include <cstdio>
#include <cstring>

int main() {
    prepack_request rq;
    prepack_request_init(&rq);
    prepack_status st = PREPACK_OK;
    const bool ok = rq.struct_size == sizeof rq && rq.max_tokens == 128 && st == 0 &&
                    std::strcmp(prepack_status_str(PREPACK_INVALID_ARGUMENT), "INVALID_ARGUMENT") == 0;
    std::printf("%d passed, %d failed\n", ok ? 1 : 0, ok ? 0 : 1);
    return ok ? 0 : 1;
}
