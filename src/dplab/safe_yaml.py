"""YAML from users' files, parsed with limits so a small hostile file cannot exhaust memory.

``yaml.safe_load`` shares an aliased node (``*name``) instead of copying it, so a dozen lines
of nested aliases (a "billion laughs") load small but grow exponentially the moment anything
walks the result as a tree (pydantic, ``json.dumps``). ``load`` composes the node graph
(bounded by the file size), counts the nodes the document has with every alias expanded and
refuses it past ``max_nodes`` *before* building any Python object; a self-referencing alias
counts as unbounded. Files are read at most ``max_bytes`` (+1, to tell that there is more).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

# Python's parser, not libyaml's CSafeLoader: that one crashes the interpreter on a few
# thousand nested brackets, where Python's raises RecursionError.
_LOADER = yaml.SafeLoader


class YamlLimitError(ValueError):
    """The input is over a size limit; the message names the source and the limit."""


def read(path: Path, max_bytes: int) -> str:
    """The file's text, refused (YamlLimitError) when longer than ``max_bytes``; OSError and
    UnicodeDecodeError pass through for the caller to word."""
    with path.open("rb") as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise YamlLimitError(f"{path}: larger than the {max_bytes:,}-byte limit for this file")
    return data.decode()


def load(text: str, source: str, max_nodes: int) -> Any:
    """``yaml.safe_load(text)`` refusing (YamlLimitError) a document of more than
    ``max_nodes`` values once its aliases are expanded. yaml.YAMLError passes through."""
    loader = _LOADER(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise YamlLimitError(f"{source}: nested too deeply to read") from None
        if node is None:
            return None
        _check_expanded_size(node, source, max_nodes)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load_entry_list(path: Path, max_bytes: int, max_nodes: int, what: str) -> list:
    """An entries file: a YAML (or, by its ``.json`` suffix, JSON) list of ``what``, or a
    mapping ``entries: [...]``; ValueError naming the file otherwise (YamlLimitError for a
    file over the limits)."""
    try:
        text = read(path, max_bytes)
        data = json.loads(text) if path.suffix == ".json" else load(text, str(path), max_nodes)
    except YamlLimitError:
        raise
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read {what}: {exc}") from exc
    if isinstance(data, dict) and set(data) == {"entries"}:
        data = data["entries"]
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of {what} (or a mapping 'entries: [...]')")
    return data


def _check_expanded_size(root: yaml.Node, source: str, max_nodes: int) -> None:
    """Walk the node graph once (iteratively: depth is the file's), memoising each shared
    node's expanded size, so the cost is the number of distinct nodes, not the expansion."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes and sizes[id(node)] >= 0:
            continue
        children = _children(node)
        if children_done:
            sizes[id(node)] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[id(node)] > max_nodes:
                raise YamlLimitError(
                    f"{source}: the document expands to more than {max_nodes:,} values "
                    "(through YAML aliases, *name references to &name anchors); "
                    "refusing it")
            continue
        if sizes.get(id(node)) == -1:
            raise YamlLimitError(f"{source}: a YAML alias refers to a value that contains "
                                 "it (a recursive document); refusing it")
        sizes[id(node)] = -1  # on the current path: meeting it again below is a cycle
        stack.append((node, True))
        stack.extend((child, False) for child in children if sizes.get(id(child), -1) < 0)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
