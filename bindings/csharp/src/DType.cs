namespace Prepack
{
    /// <summary>How an engine stores its weight matrices (prepack_dtype).</summary>
    public enum DType
    {
        F32 = 0,    // f32 weights
        Bf16 = 1,   // bf16 weight matrices: half the memory and of the bytes read per decoded token
    }
}
