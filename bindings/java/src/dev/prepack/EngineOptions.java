package dev.prepack;

/**
 * What an engine loads and how it runs. Unset values keep the library's
 * defaults. Setters return this, for chaining.
 */
public final class EngineOptions {
    private final String model;
    // null: the library's default (checking happens there, not here)
    private Integer threads;
    private Long kvBudgetBytes;
    private Integer kvBlockSize;
    private Integer maxBatchTokens;
    private Integer maxRunning;
    private Policy policy;
    private DType dtype;
    private Device device;
    private String chatTemplateFile;

    /** @param model a GGUF file path or "synthetic:NAME" */
    public EngineOptions(String model) {
        this.model = model;
    }

    /** CPU threads; 0 = all CPUs (the default). */
    public EngineOptions threads(int n) {
        threads = n;
        return this;
    }

    /** Bytes of KV cache; 0 = room for one full context (the default). */
    public EngineOptions kvBudgetBytes(long bytes) {
        kvBudgetBytes = bytes;
        return this;
    }

    /** Tokens per KV block (default 16). */
    public EngineOptions kvBlockSize(int tokens) {
        kvBlockSize = tokens;
        return this;
    }

    /** Tokens per forward step (default 1024). */
    public EngineOptions maxBatchTokens(int tokens) {
        maxBatchTokens = tokens;
        return this;
    }

    /** Sequences decoding at once (default 64). */
    public EngineOptions maxRunning(int n) {
        maxRunning = n;
        return this;
    }

    /** Prefix sharing policy (default FCFS). */
    public EngineOptions policy(Policy p) {
        policy = p;
        return this;
    }

    /** How weight matrices are stored (default F32). */
    public EngineOptions dtype(DType d) {
        dtype = d;
        return this;
    }

    /** Where the engine computes (default CPU). */
    public EngineOptions device(Device d) {
        device = d;
        return this;
    }

    /**
     * A Jinja chat template file for chat requests instead of the model's own
     * (its GGUF's tokenizer.chat_template); null (the default) = the model's.
     */
    public EngineOptions chatTemplateFile(String path) {
        chatTemplateFile = path;
        return this;
    }

    /** A native copy; the caller deletes it. */
    dev.prepack.swig.EngineOptions toNative() {
        dev.prepack.swig.EngineOptions n = new dev.prepack.swig.EngineOptions();
        n.setModel(model == null ? "" : model);
        if (threads != null) n.setThreads(threads);
        if (kvBudgetBytes != null) n.setKvBudgetBytes(kvBudgetBytes);
        if (kvBlockSize != null) n.setKvBlockSize(kvBlockSize);
        if (maxBatchTokens != null) n.setMaxBatchTokens(maxBatchTokens);
        if (maxRunning != null) n.setMaxRunning(maxRunning);
        if (policy != null) n.setPolicy(policy.ordinal());
        if (dtype != null) n.setDtype(dtype.ordinal());
        if (device != null) n.setDevice(device.ordinal());
        if (chatTemplateFile != null) n.setChatTemplateFile(chatTemplateFile);
        return n;
    }
}
