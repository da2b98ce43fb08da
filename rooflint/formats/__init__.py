"""The documents rooflint reads and writes, and their schemas: manifests, results,
baselines, calibrations, GPU specs, kernel models, PyTorch's profiler trace. Built from
the core's types (analysis/); nothing that judges, measures or prints them is imported."""
