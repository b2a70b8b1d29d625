namespace Prepack
{
    /// <summary>How an engine stores its weight matrices and KV cache (prepack_dtype).</summary>
    public enum DType
    {
        F32 = 0,    // f32 weights
        Bf16 = 1,   // bf16 weight matrices and KV cache: half the memory and of the bytes read per decoded token
    }
}
