"""A torchrun rank started for pass 2 while pass 1 runs: ``python rank_launch.py BASE PORTS
NCU -- PROGRAM...``, run by torchrun (``--no-python``) as each rank's command, becomes
``NCU --mode launch`` around the rank's program, listening on the ports from
``BASE + PORTS * LOCAL_RANK``, so that the rank waits at its first CUDA call until pass 2
attaches to it on its own ports (program._attach_ranks). Under ``ncu --mode launch`` around
torchrun only torchrun's own process waits, and an attach there profiles none of its ranks
(Nsight Compute 2025.3). Imports nothing of rooflint: it runs under the rank's interpreter.
"""

import os
import sys


def main():
    base, ports, ncu = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    program = sys.argv[sys.argv.index("--", 4) + 1:]
    port = base + ports * int(os.environ.get("LOCAL_RANK", "0"))
    os.execvp(ncu, [ncu, "--mode", "launch", "--target-processes", "application-only",
                    "--port", str(port), "--max-connections", str(ports), *program])


if __name__ == "__main__":
    main()
