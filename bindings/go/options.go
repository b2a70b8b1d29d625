package prepack

import "prepack.dev/prepack/bindings/internal/native"

// Policy is how an engine shares prompt prefixes between requests.
type Policy int

const (
	FCFS     Policy = 0 // first come, first served; nothing shared
	LRU      Policy = 1 // a block-hash prefix cache with LRU eviction
	BatchLLM Policy = 2 // GenerateBatch groups prompts by a global prefix tree
)

// DType is how an engine stores its weight matrices and its KV cache.
type DType int

const (
	F32  DType = 0 // f32 weights
	BF16 DType = 1 // bf16 weight matrices and KV cache: half the memory and of the bytes read per decoded token
)

// Device is where the engine computes.
type Device int

const (
	CPU  Device = 0
	CUDA Device = 1 // an NVIDIA GPU (libprepack_cuda.so beside libprepack.so or $PREPACK_CUDA_MODULE); Unavailable without one
)

// Options say what an engine loads and how it runs. Zero fields take the
// library's defaults.
type Options struct {
	Model          string // GGUF file path or "synthetic:NAME"; required
	Device         Device
	Threads        int    // CPU threads; 0 = all CPUs
	KVBudgetBytes  int64  // KV cache bytes; 0 = room for one full context
	KVBlockSize    int    // tokens per KV block; 0 = 16
	MaxBatchTokens int    // tokens per forward step; 0 = 1024
	MaxRunning     int    // sequences decoding at once; 0 = 64
	Policy         Policy // 0 = FCFS
	DType          DType  // 0 = F32
	// A Jinja chat template file for chat requests instead of the model's
	// own (its GGUF's tokenizer.chat_template); "" = the model's.
	ChatTemplateFile string
}

// toNative returns a native copy; the caller deletes it.
func (o *Options) toNative() native.EngineOptions {
	n := native.NewEngineOptions()
	n.SetModel(o.Model)
	n.SetDevice(int(o.Device))
	n.SetPolicy(int(o.Policy))
	n.SetDtype(int(o.DType))
	n.SetChatTemplateFile(o.ChatTemplateFile)
	// Zero keeps the native default; anything else, even invalid, goes to
	// the library, which checks it.
	if o.Threads != 0 {
		n.SetThreads(o.Threads)
	}
	if o.KVBudgetBytes != 0 {
		n.SetKvBudgetBytes(o.KVBudgetBytes)
	}
	if o.KVBlockSize != 0 {
		n.SetKvBlockSize(o.KVBlockSize)
	}
	if o.MaxBatchTokens != 0 {
		n.SetMaxBatchTokens(o.MaxBatchTokens)
	}
	if o.MaxRunning != 0 {
		n.SetMaxRunning(o.MaxRunning)
	}
	return n
}
