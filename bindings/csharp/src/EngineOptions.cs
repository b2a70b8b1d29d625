namespace Prepack
{
    /// <summary>What an engine loads and how it runs. Unset (null) values keep the library's defaults.</summary>
    public sealed class EngineOptions
    {
        public EngineOptions(string model)
        {
            Model = model;
        }

        /// <summary>A GGUF file path or "synthetic:NAME".</summary>
        public string Model { get; set; }
        /// <summary>CPU threads; 0 = all CPUs (the default).</summary>
        public int? Threads { get; set; }
        /// <summary>KV cache bytes; 0 = room for one full context (the default).</summary>
        public long? KvBudgetBytes { get; set; }
        /// <summary>Tokens per KV block (default 16).</summary>
        public int? KvBlockSize { get; set; }
        /// <summary>Tokens per forward step (default 1024).</summary>
        public int? MaxBatchTokens { get; set; }
        /// <summary>Sequences decoding at once (default 64).</summary>
        public int? MaxRunning { get; set; }
        public Policy? Policy { get; set; }
        /// <summary>How weight matrices are stored (default F32).</summary>
        public DType? DType { get; set; }
        /// <summary>Where the engine computes (default CPU).</summary>
        public Device? Device { get; set; }
        /// <summary>
        /// A Jinja chat template file for chat requests instead of the model's own
        /// (its GGUF's tokenizer.chat_template); null (the default) = the model's.
        /// </summary>
        public string ChatTemplateFile { get; set; }

        /// <summary>A native copy; the caller disposes it.</summary>
        internal Native.EngineOptions ToNative()
        {
            var n = new Native.EngineOptions();
            n.Model = Model ?? "";
            if (Threads.HasValue) n.Threads = Threads.Value;
            if (KvBudgetBytes.HasValue) n.KvBudgetBytes = KvBudgetBytes.Value;
            if (KvBlockSize.HasValue) n.KvBlockSize = KvBlockSize.Value;
            if (MaxBatchTokens.HasValue) n.MaxBatchTokens = MaxBatchTokens.Value;
            if (MaxRunning.HasValue) n.MaxRunning = MaxRunning.Value;
            if (Policy.HasValue) n.Policy = (int)Policy.Value;
            if (DType.HasValue) n.Dtype = (int)DType.Value;
            if (Device.HasValue) n.Device = (int)Device.Value;
            if (ChatTemplateFile != null) n.ChatTemplateFile = ChatTemplateFile;
            return n;
        }
    }
}
