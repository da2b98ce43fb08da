"""The pure analysis core: counters and times in, roofline points, causes, verdicts
and moves out. Imports no CuPy, no GPU code and no command."""
