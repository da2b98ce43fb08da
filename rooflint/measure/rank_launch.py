"""A torchrun rank started for pass 2 while pass 1 runs: ``python rank_launch.py BASE PORTS
NCU OPTIONS... -- PROGRAM...``, run by torchrun (``--no-python``) as each rank's command,
becomes ``NCU OPTIONS... --port PORT PROGRAM...`` (early_start.LAUNCH: ``--mode launch``
around the rank's own process), PORT being ``BASE + PORTS * LOCAL_RANK``, so that the rank
waits at its first CUDA call until pass 2 attaches to it on its own ports
(program._attach_ranks). Under ``ncu --mode launch`` around
torchrun only torchrun's own process waits, and an attach there profiles none of its ranks
(Nsight Compute 2025.3). Imports nothing of rooflint: it runs under the rank's interpreter.
"""

import os
import sys


def main():
    base, ports, ncu = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    end = sys.argv.index("--", 4)
    options, program = sys.argv[4:end], sys.argv[end + 1:]
    port = base + ports * int(os.environ.get("LOCAL_RANK", "0"))
    os.execvp(ncu, [ncu, *options, "--port", str(port), *program])


if __name__ == "__main__":
    main()
