"""The documents rooflint reads and writes, and their schemas: manifests, results,
baselines, GPU specs, kernel models, PyTorch's profiler trace."""
