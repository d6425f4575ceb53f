"""YAML documents read as plain data, with a key given twice refused.

PyYAML's loaders keep the last of two equal keys silently: a configuration or a policy
that sets ``auc`` twice would run on one of them without a word. :func:`load_yaml_text`
parses with ``yaml.SafeLoader`` (plain data only, never an object), walks the node tree
once to refuse a repeated key with its dotted path and both lines, and words a syntax
error with its line and column. The callers (the CLI's configurations, the CI gate's
policies) read the file themselves and pass their own error type and wording.
"""

from __future__ import annotations

from typing import Any

__all__ = ["load_yaml_text"]


def _check_duplicates(node: Any, where: tuple[str, ...], describe: str, error: type[Exception],
                      seen: set[int]) -> None:
    """Refuse a mapping that repeats a key, anywhere below ``node``."""
    import yaml

    if id(node) in seen:  # an alias: its node was checked where it was anchored
        return
    seen.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_duplicates(item, (*where, f"[{i}]"), describe, error, seen)
    if not isinstance(node, yaml.MappingNode):
        return
    lines: dict[tuple[str, str], int] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
            continue
        key = (key_node.tag, key_node.value)
        dotted = ".".join((*where, key_node.value)).replace(".[", "[")
        line = key_node.start_mark.line + 1
        if key in lines:
            raise error(f"The {dotted!r} key of {describe} is given twice (lines "
                        f"{lines[key]} and {line}); keep one.")
        lines[key] = line
        _check_duplicates(value_node, (*where, key_node.value), describe, error, seen)


def load_yaml_text(text: str, *, describe: str, error: type[Exception],
                   what: str | None = None) -> Any:
    """The YAML document in ``text`` as plain data (None for an empty document).

    Parameters
    ----------
    text : str
        The document.
    describe : str
        How an error names the file (e.g. its path).
    error : type of Exception
        What a repeated key or a syntax error raises.
    what : str, optional
        What the file is, for a syntax error ("The audit configuration"); default "The
        file".

    Raises
    ------
    error
        A key given twice in one mapping (its dotted path and both lines), or a syntax
        error (its line and column).
    """
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_duplicates(node, (), describe, error, set())
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise error(f"{what or 'The file'} {describe} is not valid YAML: {problem}"
                    f"{where}.") from None
    finally:
        loader.dispose()
