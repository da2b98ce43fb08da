"""rooflint: a roofline profiler and kernel diagnostician for NVIDIA GPUs."""

__version__ = "0.1.0"
