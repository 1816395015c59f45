"""Fakes at external boundaries (NVML, CUPTI) for CPU-only tests."""
