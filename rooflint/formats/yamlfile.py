"""Reading the YAML files users write and share (manifests, GPU specs), strictly and cheaply.

Three promises beyond ``yaml.safe_load``:
- a duplicate key is an error naming its line (YAML would silently keep the last one, so
  a second ``tolerance:`` would quietly win);
- what a file can cost is bounded: its size, and the size of the document once its
  aliases are expanded (a 1 KB "billion laughs" file expands to 10^9 nodes that later
  code would walk; anchors and aliases stay usable for ordinary repetition); only a
  regular file is read (a FIFO, a device or a directory is named as such, never waited on);
- a document is read against its declared schema (:func:`read`, rooflint.formats.schema),
  which names an unknown key with the nearest valid one (``tolerence``: did you mean
  ``tolerance``?), so a misspelling is never silently ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rooflint.common.errors import RooflintError
from rooflint.formats import schema
from rooflint.formats.jsonfile import read_limited

MAX_FILE_BYTES = 1 << 20        # a manifest or spec is a few KB; a megabyte is generous
MAX_EXPANDED_NODES = 100_000    # values after alias expansion; bundled manifests have < 2,000


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys in a mapping (merge keys ``<<`` excepted)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) or key is None:
                continue  # SafeLoader itself refuses unhashable keys
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def read(path: Path, document: schema.Document) -> Any:
    """The file at ``path`` read against its schema; RooflintError naming the file (and the
    field) for any problem."""
    return schema.read(document, load(path), path)


def load(path: Path) -> Any:
    """The document in ``path``; RooflintError naming the file for any problem."""
    try:
        text = read_limited(path, "YAML file", MAX_FILE_BYTES).decode("utf-8")
    except UnicodeDecodeError:
        raise RooflintError(f"{path}: not a text file (expected YAML)") from None
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
        nodes = _expanded_size(data, {}, MAX_EXPANDED_NODES)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}" if mark else ""
        problem = " ".join(f"{exc.context or ''} {exc.problem or ''}".split())
        raise RooflintError(f"{path}: not valid YAML{where}: {problem}") from None
    except yaml.YAMLError as exc:
        raise RooflintError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise RooflintError(f"{path}: nested too deeply to be a rooflint YAML file") from None
    if nodes > MAX_EXPANDED_NODES:
        raise RooflintError(f"{path}: the document expands to over {MAX_EXPANDED_NODES} values "
                            f"(aliases nested inside aliases?); refusing to read it")
    return data


def _expanded_size(value: Any, memo: dict[int, int], limit: int) -> int:
    """Values in ``value`` with every alias expanded, counted without expanding anything
    (shared sub-documents are counted once per use, from a memo); stops past ``limit``."""
    if not isinstance(value, (dict, list)):
        return 1
    if id(value) in memo:
        return memo[id(value)]
    items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
    total = 1
    for item in items:
        total += _expanded_size(item, memo, limit)
        if total > limit:
            break
    memo[id(value)] = total
    return total
