namespace Prepack
{
    /// <summary>Where an engine computes (prepack_device).</summary>
    public enum Device
    {
        Cpu = 0,    // the default
        Cuda = 1,   // an NVIDIA GPU, through libprepack_cuda.so beside libprepack.so (or $PREPACK_CUDA_MODULE)
    }
}
