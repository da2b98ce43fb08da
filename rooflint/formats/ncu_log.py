"""The columns of Nsight Compute's raw CSV page (``--csv --page raw``) that rooflint reads
by name, written once for the code that runs ncu (measure/ncu.py, measure/pass_runner.py)
and the decisions that read its rows without a GPU (judge/kernel_times.py, autotuning.py,
launch_matching.py)."""

ID = "ID"                              # the launch's number in the session
KERNEL_NAME = "Kernel Name"            # demangled or not, as --kernel-name-base asked
GRID = "Grid Size"                     # "(1056, 1, 1)"
BLOCK = "Block Size"
PROCESS = "Process ID"
STREAM = "Stream"
DURATION = "gpu__time_duration.sum"    # the launch's GPU time, ns (the one metric every log has)
