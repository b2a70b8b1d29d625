package dev.prepack;

/** Where an engine computes (prepack_device; ordinal() is the C value). */
public enum Device {
    /** The CPU (the default). */
    CPU,
    /**
     * An NVIDIA GPU. The library loads libprepack_cuda.so on first use: from the
     * environment variable PREPACK_CUDA_MODULE or the loader's search path (the
     * jar does not carry it). Engine creation fails with UNAVAILABLE without a
     * usable GPU, UNIMPLEMENTED in a build without CUDA.
     */
    CUDA
}
