"""The work behind the commands, for any command that needs it: families measured across
the GPUs (families.py), a program profiled in two passes (program.py), compare's sides
(compare_sides.py), whether counters are taken (counters_switch.py), a GPU named on the
command line (named_gpu.py). Nothing here prints or parses options: commands/ does."""
