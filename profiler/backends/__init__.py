"""Live-capture backends of the profiler (torch.profiler, CUPTI, the NVML sampler) and the
measurement tools that drive the GPU themselves (collective benchmark, peak calibration)."""
