"""Pass 2's launches met with pass 1's chosen kernels: by identity, never by position,
since two runs of one program need not launch in the same order; their counters averaged
per launch; and, for a chosen kernel pass 2 did not profile, what pass 2 saw instead."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rooflint.analysis.counters import Counters
from rooflint.formats.ncu_log import KERNEL_NAME as NAME
from rooflint.judge.kernel_names import mangled_names
from rooflint.judge.kernel_times import Identity, KernelTime, identity

def launches_by_identity(chosen: list[KernelTime], rows: list[dict],
                         timed: list[KernelTime] | None = None,
                         loosely: bool = True) -> dict[Identity, list[dict]]:
    """Each chosen kernel's launches among pass 2's rows, found by identity wherever they
    sit in pass 2's launch order. A name the two demanglers still write apart (a lambda's
    enclosing template: ``T1`` for ``CUDAGeneratorImpl``) is matched on its function's
    name, grid and block when exactly one of pass 2's kernels and none other of pass 1's
    (``timed``) has those; not ``loosely``, never: rows that were not profiled for these
    kernels (an imported report's) can hold another kernel of the function at that shape
    (a report's fill kernel, a trace's cast, both PyTorch's vectorized_elementwise_kernel
    at 4096 blocks of 128 threads, H200)."""
    launches: dict[Identity, list[dict]] = {}
    for row in rows:
        launches.setdefault(identity(row), []).append(row)
    known = {k.identity for k in timed or chosen}
    loose: dict[Identity, list[Identity]] = {}
    for key in launches:
        if key not in known:
            loose.setdefault(_loosely(key), []).append(key)
    taken = {_loosely(k.identity) for k in timed or chosen if k.identity in launches}
    found = {}
    for k in chosen:
        mine = launches.get(k.identity)
        if not mine and loosely and _loosely(k.identity) not in taken:
            candidates = loose.get(_loosely(k.identity), [])
            mine = launches[candidates[0]] if len(candidates) == 1 else None
        if mine:
            found[k.identity] = mine
    return found


def _loosely(key: Identity) -> Identity:
    """An identity with only the function's name of its name key (of a mangled name pass
    1 kept, the function's name as mangled_names reads it: Nsight Compute demangles it)."""
    name, grid, block = key
    first = name.split(" ", 1)[0]
    return mangled_names(first)[0] or first, grid, block


@dataclass(frozen=True)
class Missed:
    """What pass 2 saw of a chosen kernel it has no counters for: the launch shapes (grid,
    block) it profiled the kernel's name at, else the name it profiled at the kernel's
    shape (a name rooflint does not read as the kernel's); neither, when it saw none."""

    other_shapes: frozenset[tuple[str, str]] = frozenset()
    twin: str | None = None


def missed(k: KernelTime, rows: list[dict]) -> Missed:
    """What pass 2's ``rows`` hold of ``k`` where they hold none of its launches."""
    shapes = frozenset((grid, block) for key, grid, block in map(identity, rows)
                       if key == k.identity[0])
    if shapes:
        return Missed(other_shapes=shapes)
    twins = sorted({str(row[NAME]) for row in rows if identity(row)[1:] == k.identity[1:]})
    return Missed(twin=twins[0] if twins else None)


def per_launch(c: Counters, launches: int) -> Counters:
    """Counters summed over ``launches`` launches, as the mean of one."""
    return replace(c, duration_s=c.duration_s / launches, dram_read=c.dram_read / launches,
                   dram_write=c.dram_write / launches, l2_bytes=c.l2_bytes / launches,
                   l1_bytes=c.l1_bytes / launches, local_bytes=c.local_bytes / launches,
                   flops={p: x / launches for p, x in c.flops.items()})
