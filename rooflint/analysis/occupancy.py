"""A launch's theoretical occupancy from its shape and its kernel's resources, as Nsight
Compute's launch statistics give it, for a counter engine that has only the shape and the
resources (CUPTI's range profiler: it reads counters, not launch statistics).

Each resource of an SM allows so many resident blocks of the launch; the fewest is the
occupancy, and the resource that allows it the limiter. Registers are allocated per warp in
units of 256 (8 a thread), shared memory per block in units of 128 bytes with the driver's
reserve added (1 KiB from Ampere on). The shared-memory limit is taken at the SM's largest
carveout, and at most the SM's block limit: the driver sizes the carveout to the launch
(Nsight Compute's limit is at the size it chose), and the size it chose never allowed fewer
blocks than another resource did, often exactly the SM's 32 (a block needing only the
driver's reserve gets 32 KiB), which Nsight Compute then names the limiter before the
block limit. On 1,158 launches recorded with Nsight Compute's launch statistics (H100,
H200; tests/core/test_occupancy.py) this gives the same blocks per SM on all and the same
limiter on all but 2, launches at full occupancy whose carveout allowed more than 32.
"""

from __future__ import annotations

from dataclasses import dataclass

WARP_THREADS = 32
REGISTER_UNIT = 8           # registers a thread is allocated in (256 a warp)
SHARED_UNIT = 128           # bytes a block's shared memory is allocated in
# The resources, as Nsight Compute names its limits, in its order (the first of a tie limits).
LIMITERS = ("registers", "shared memory", "warps", "blocks")


@dataclass(frozen=True)
class SmLimits:
    """What one SM holds, as the CUDA driver's device attributes give it."""

    registers: int              # 32-bit registers
    threads: int                # resident threads
    blocks: int                 # resident blocks
    shared_bytes: int           # shared memory at the largest carveout
    reserved_shared_bytes: int  # the driver's per block


@dataclass(frozen=True)
class LaunchResources:
    """A launch's shape and what each of its blocks needs."""

    blocks: int                 # in the grid
    threads_per_block: int
    registers_per_thread: int
    shared_bytes_per_block: int  # static and dynamic


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks per SM each resource allows, by LIMITERS (the first of a tie is the
    limiter: registers, the one a kernel author sets), and what follows from them."""

    limits: dict[str, int]
    sm_warps: int               # the SM's resident warps

    @property
    def blocks_per_sm(self) -> int:
        return min(self.limits.values())

    @property
    def limiter(self) -> str:
        return min(self.limits, key=self.limits.get)

    def theoretical_pct(self, threads_per_block: int) -> float:
        """Resident warps against the SM's, in percent."""
        return 100.0 * self.blocks_per_sm * _warps(threads_per_block) / self.sm_warps

    def waves(self, blocks: int, sms: int) -> float:
        """The grid over what all SMs hold at once."""
        return blocks / (self.blocks_per_sm * sms) if self.blocks_per_sm else 0.0


def occupancy(launch: LaunchResources, sm: SmLimits) -> Occupancy:
    warps = _warps(launch.threads_per_block)
    registers = _rounded(launch.registers_per_thread, REGISTER_UNIT) * WARP_THREADS * warps
    shared = _rounded(launch.shared_bytes_per_block + sm.reserved_shared_bytes, SHARED_UNIT)
    sm_warps = sm.threads // WARP_THREADS
    allowed = (sm.registers // registers if registers else sm.blocks,
               min(sm.shared_bytes // shared, sm.blocks), sm_warps // warps, sm.blocks)
    return Occupancy(dict(zip(LIMITERS, allowed)), sm_warps)


def _warps(threads: int) -> int:
    return -(-threads // WARP_THREADS)


def _rounded(value: int, unit: int) -> int:
    return -(-value // unit) * unit
