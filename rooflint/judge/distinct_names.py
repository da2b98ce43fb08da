"""The name each of a program's kernels is shown by (the variant's name in a profile's
result): what it does or its short name (kernel_names.py), with words that tell apart the
kernels that would share one."""

from __future__ import annotations

from collections import Counter as Tally

from rooflint.judge.kernel_names import short_name, what_it_does
from rooflint.judge.kernel_times import Identity, KernelTime


def described_name(k: KernelTime) -> str:
    """What a kernel does where its name tells (what_it_does), else its short name."""
    return what_it_does(k.kernel, k.cast) or short_name(k.kernel)


def unique_names(kernels: list[KernelTime]) -> dict[Identity, str]:
    """Identity -> a name no other of the program's kernels shares: what it does or its
    short name (described_name), and where kernels share one, what tells them apart in
    words: the line that launched each (``cast bf16→fp32 at train.py:80``), else its
    grid's block count (``k (1536 blocks)``: cuBLAS's GEMM at two sizes), else its
    blocks and threads (``k (8192×256)``: a sweep of block sizes), then #2, #3 for
    whatever still collides."""
    base = {k.identity: described_name(k) for k in kernels}
    groups: dict[str, list[KernelTime]] = {}
    for k in kernels:
        groups.setdefault(base[k.identity], []).append(k)
    names: dict[Identity, str] = {}
    seen: Tally = Tally()
    for k in kernels:
        group = groups[base[k.identity]]
        name = base[k.identity] + (_telling_apart(k, group) if len(group) > 1 else "")
        seen[name] += 1
        names[k.identity] = name if seen[name] == 1 else f"{name}#{seen[name]}"
    return names


def _telling_apart(k: KernelTime, group: list[KernelTime]) -> str:
    """The words after a shared name that tell ``k`` from the rest of ``group``: the first
    of its launching line, its block count, its blocks×threads that differs across the
    whole group; "" where none does (#2, #3 follow)."""
    for words in (_launched_at, _in_blocks, _in_blocks_of_threads):
        told = [words(other) for other in group]
        if all(told) and len(set(told)) == len(group):
            return words(k)
    return ""


def _launched_at(k: KernelTime) -> str:
    line = next((o.line for o in k.origins if o.line), None)
    return f" at {line.split(' in ')[0]}" if line else ""


def _in_blocks(k: KernelTime) -> str:
    return f" ({k.blocks} blocks)" if k.blocks else ""


def _in_blocks_of_threads(k: KernelTime) -> str:
    return f" ({k.blocks}×{k.threads})" if k.blocks and k.threads else ""
