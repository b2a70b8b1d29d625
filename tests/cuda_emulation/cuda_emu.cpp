#include "cuda_emu.h"

#include <setjmp.h>
#include <ucontext.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace cuda_emu {
namespace {

// "Device" memory: a cap, so that an impossible allocation fails as on a GPU.
constexpr size_t kDeviceBytes = size_t{8} << 30;
std::mutex memory_mu;
size_t allocated = 0;
std::vector<std::pair<void*, size_t>> allocations;

constexpr size_t kFiberStack = 256 << 10;

// One block in flight: its fibers, shared memory and warp exchange slots.
// Fibers start on their own stacks through makecontext/setcontext and then
// switch with _setjmp/_longjmp, which (unlike swapcontext) make no system
// call to save the signal mask: a switch per thread per barrier is the
// emulator's main cost.
struct BlockState {
    jmp_buf                 scheduler;
    std::vector<ucontext_t> starts;
    struct Jump {
        jmp_buf at;
    };
    std::vector<Jump>       fibers;
    std::vector<uint8_t>    started;
    std::vector<uint8_t>    done;
    std::vector<float>      lanes;       // one slot per thread, for shuffles
    std::vector<char>       shared;
    int                     current = 0;
    const std::function<void()>* body = nullptr;
};
thread_local BlockState* block = nullptr;
// Fiber stacks, kept across launches (allocating 256 per launch costs more than the kernels).
std::vector<std::unique_ptr<char[]>> stacks;
std::mutex launch_mu;   // one block at a time in the process: static __shared__ arrays are global

void Yield() {
    if (_setjmp(block->fibers[block->current].at) == 0) _longjmp(block->scheduler, 1);
}

void FiberMain() {
    (*block->body)();
    block->done[block->current] = 1;
    _longjmp(block->scheduler, 1);   // never returns: its stack is reused
}

}  // namespace

void SyncThreads() { Yield(); }

float ShuffleXor(float v, int lane_mask) {
    const int t = static_cast<int>(threadIdx.x);
    block->lanes[t] = v;
    Yield();   // every lane has written
    const int other = (t & ~31) | ((t & 31) ^ lane_mask);
    const float r = block->lanes[other];
    Yield();   // every lane has read before any writes again
    return r;
}

void* DynamicShared() { return block->shared.data(); }

void Run(dim3 grid, dim3 blk, size_t shared_bytes, const std::function<void()>& body) {
    std::lock_guard<std::mutex> lock(launch_mu);
    const int n = static_cast<int>(blk.x * blk.y * blk.z);
    BlockState state;
    state.starts.resize(n);
    state.fibers.resize(n);
    state.started.assign(n, 0);
    state.done.assign(n, 0);
    state.lanes.assign(n, 0.0f);
    state.shared.assign(shared_bytes + 16, 0);
    state.body = &body;
    while (static_cast<int>(stacks.size()) < n) stacks.emplace_back(new char[kFiberStack]);
    BlockState* saved = block;
    block = &state;
    const dim3 saved_t = threadIdx, saved_b = blockIdx, saved_bd = blockDim, saved_gd = gridDim;
    blockDim = blk;
    gridDim = grid;
    for (unsigned bz = 0; bz < grid.z; ++bz) {
        for (unsigned by = 0; by < grid.y; ++by) {
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                blockIdx = dim3(bx, by, bz);
                std::fill(state.shared.begin(), state.shared.end(), 0x5a);   // garbage, as on a GPU
                ucontext_t base;
                getcontext(&base);
                for (int i = 0; i < n; ++i) {
                    state.done[i] = 0;
                    state.started[i] = 0;
                    state.starts[i] = base;
                    state.starts[i].uc_stack.ss_sp = stacks[i].get();
                    state.starts[i].uc_stack.ss_size = kFiberStack;
                    state.starts[i].uc_link = nullptr;
                    makecontext(&state.starts[i], FiberMain, 0);
                }
                // Passes: each resumes every live fiber up to its next barrier.
                for (bool live = true; live;) {
                    live = false;
                    for (int i = 0; i < n; ++i) {
                        if (state.done[i]) continue;
                        state.current = i;
                        threadIdx = dim3(i % blk.x, (i / blk.x) % blk.y, i / (blk.x * blk.y));
                        if (_setjmp(state.scheduler) == 0) {
                            if (!state.started[i]) {
                                state.started[i] = 1;
                                setcontext(&state.starts[i]);
                            }
                            _longjmp(state.fibers[i].at, 1);
                        }
                        live |= !state.done[i];
                    }
                }
            }
        }
    }
    block = saved;
    threadIdx = saved_t;
    blockIdx = saved_b;
    blockDim = saved_bd;
    gridDim = saved_gd;
}

}  // namespace cuda_emu

using cuda_emu::allocated;
using cuda_emu::allocations;
using cuda_emu::memory_mu;

cudaError_t cudaGetDeviceCount(int* n) {
    *n = 1;
    return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
    std::lock_guard<std::mutex> lock(memory_mu);
    if (bytes > cuda_emu::kDeviceBytes - allocated) return cudaErrorMemoryAllocation;
    *p = std::malloc(bytes == 0 ? 1 : bytes);
    if (*p == nullptr) return cudaErrorMemoryAllocation;
    allocated += bytes;
    allocations.emplace_back(*p, bytes);
    return cudaSuccess;
}

cudaError_t cudaFree(void* p) {
    if (p == nullptr) return cudaSuccess;
    std::lock_guard<std::mutex> lock(memory_mu);
    auto it = std::find_if(allocations.begin(), allocations.end(), [p](const auto& a) { return a.first == p; });
    if (it == allocations.end()) return cudaErrorInvalidValue;
    allocated -= it->second;
    allocations.erase(it);
    std::free(p);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
    std::memmove(dst, src, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
    return cudaMemcpy(dst, src, bytes, kind);
}

cudaError_t cudaMemset(void* p, int value, size_t bytes) {
    std::memset(p, value, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
    std::lock_guard<std::mutex> lock(memory_mu);
    *free = cuda_emu::kDeviceBytes - allocated;
    *total = cuda_emu::kDeviceBytes;
    return cudaSuccess;
}

cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }

const char* cudaGetErrorString(cudaError_t e) {
    switch (e) {
        case cudaSuccess: return "no error";
        case cudaErrorMemoryAllocation: return "out of memory";
        case cudaErrorNoDevice: return "no CUDA-capable device is detected";
        case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient";
        default: return "invalid argument";
    }
}

struct EmuEvent {
    std::chrono::steady_clock::time_point at;
};
cudaError_t cudaEventCreate(cudaEvent_t* e) {
    *e = new EmuEvent();
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    delete e;
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
    e->at = std::chrono::steady_clock::now();
    return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop) {
    *ms = std::chrono::duration<float, std::milli>(stop->at - start->at).count();
    return cudaSuccess;
}

struct EmuBlas {};
cublasStatus_t cublasCreate(cublasHandle_t* h) {
    *h = new EmuBlas();
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t h) {
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}
const char* cublasGetStatusString(cublasStatus_t s) {
    return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_NOT_SUPPORTED";
}

namespace {
float Load(const void* p, cudaDataType_t t, size_t i) {
    return t == CUDA_R_16BF ? __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]) : static_cast<const float*>(p)[i];
}
void Store(void* p, cudaDataType_t t, size_t i, float v) {
    if (t == CUDA_R_16BF) {
        static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
    } else {
        static_cast<float*>(p)[i] = v;
    }
}
}  // namespace

cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void* alpha, const void* a, cudaDataType_t at, int lda, const void* b,
                            cudaDataType_t bt, int ldb, const void* beta, void* c, cudaDataType_t ct, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t) {
    if (compute != CUBLAS_COMPUTE_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
    const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);
    for (int j = 0; j < n; ++j) {
        for (int i = 0; i < m; ++i) {
            float acc = 0.0f;
            for (int p = 0; p < k; ++p) {
                // Column-major: op(A)[i, p], op(B)[p, j].
                const float x = ta == CUBLAS_OP_T ? Load(a, at, size_t(i) * lda + p) : Load(a, at, size_t(p) * lda + i);
                const float y = tb == CUBLAS_OP_T ? Load(b, bt, size_t(p) * ldb + j) : Load(b, bt, size_t(j) * ldb + p);
                acc += x * y;
            }
            const size_t at_c = size_t(j) * ldc + i;
            Store(c, ct, at_c, al * acc + (be != 0.0f ? be * Load(c, ct, at_c) : 0.0f));
        }
    }
    return CUBLAS_STATUS_SUCCESS;
}
