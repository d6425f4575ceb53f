"""YAML documents read as plain data, with a key given twice refused.

PyYAML's loaders keep the last of two equal keys silently: a configuration or a policy
that sets ``auc`` twice would run on one of them without a word. :func:`load_yaml_text`
parses with ``yaml.SafeLoader`` (plain data only, never an object; YAML 1.2's numbers,
so ``1e-3`` is a float and ``1:30`` a string), walks the node tree
once to refuse a repeated key with its dotted path and both lines, and words a syntax
error with its line and column. A document whose aliases (``*name``) would expand it past
:data:`MAX_EXPANDED_VALUES` values (a "billion laughs" document: a few lines, each alias
repeating the previous anchor) is refused before anything walks its values: every reader
of the data (a validator, an error message's ``repr``) would otherwise take exponential
time and memory. The callers (the CLI's configurations, the CI gate's
policies) read the file themselves and pass their own error type and wording.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_EXPANDED_VALUES", "load_yaml_text"]

#: Values (scalars, sequences, mappings) a document may hold once its aliases are expanded:
#: far above any configuration or policy, far below what exhausts memory.
MAX_EXPANDED_VALUES = 100_000


_INT, _FLOAT = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
#: YAML 1.2's numbers: ``1e-3`` is a float (YAML 1.1, PyYAML's default, reads it as a
#: string, and ``fpr: 1e-3`` would be refused as "not a number"); ``1:30`` is a string
#: (YAML 1.1 reads it as the base-60 number 90). Integers keep YAML 1.1's other forms.
_INT_PATTERN = (r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)"
                r"|[-+]?0x[0-9a-fA-F_]+)$")
_FLOAT_PATTERN = (r"^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?"
                  r"|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+"
                  r"|[-+]?\.[0-9][0-9_]*(?:[eE][-+]?[0-9]+)?"
                  r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")


_LOADER: Any = None


def _loader_class() -> Any:
    """``yaml.SafeLoader`` with YAML 1.2's numbers (:data:`_FLOAT_PATTERN`), built once."""
    global _LOADER
    if _LOADER is None:
        import re

        import yaml

        class Loader(yaml.SafeLoader):
            pass

        Loader.yaml_implicit_resolvers = {
            first: [(tag, rx) for tag, rx in resolvers if tag not in (_INT, _FLOAT)]
            for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
        Loader.add_implicit_resolver(_INT, re.compile(_INT_PATTERN), list("-+0123456789"))
        Loader.add_implicit_resolver(_FLOAT, re.compile(_FLOAT_PATTERN),
                                     list("-+0123456789."))
        _LOADER = Loader
    return _LOADER



def _expanded_size(root: Any) -> int:
    """How many values the document under ``root`` holds with every alias expanded.

    Each node's count is computed once (an alias is the same node object as its anchor),
    so a billion-laughs document is counted in linear time. A document holding itself
    (``&a [*a]``) counts as infinite; counts stop past the limit.
    """
    import yaml

    sizes: dict[int, int] = {}
    started: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        children = ([v for pair in node.value for v in pair]
                    if isinstance(node, yaml.MappingNode)
                    else node.value if isinstance(node, yaml.SequenceNode) else [])
        if not children_done:
            if id(node) in started:  # reached again from below itself: a cycle
                return MAX_EXPANDED_VALUES + 1
            started.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
            continue
        sizes[id(node)] = min(1 + sum(sizes[id(child)] for child in children),
                              MAX_EXPANDED_VALUES + 1)
    return sizes[id(root)]


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

    try:
        # the reader checks the characters here: a control character is a YAMLError too
        loader = _loader_class()(text)
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, describe, error, what) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node) > MAX_EXPANDED_VALUES:
            raise error(f"{what or 'The file'} {describe} holds more than "
                        f"{MAX_EXPANDED_VALUES:,} values once any aliases (*name) are "
                        "expanded, or holds itself: refused (far more than any "
                        "configuration needs; a 'billion laughs' document stays small "
                        "on disk).")
        _check_duplicates(node, (), describe, error, set())
        return _construct(loader, node, describe, error, what)
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, describe, error, what) from None
    finally:
        loader.dispose()


def _construct(loader: Any, node: Any, describe: str, error: type[Exception],
               what: str | None) -> Any:
    """The document's values; a value Python cannot convert is ``error``, naming the file."""
    try:
        return loader.construct_document(node)
    except ValueError as exc:  # an integer of more digits than Python converts
        raise error(f"{what or 'The file'} {describe} holds a value Python cannot read "
                    f"({' '.join(str(exc).split())[:120]}).") from None


def _syntax_error(exc: Any, describe: str, error: type[Exception], what: str | None
                  ) -> Exception:
    """``error`` for a YAML syntax error: its problem, line and column."""
    mark = getattr(exc, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
    problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
    return error(f"{what or 'The file'} {describe} is not valid YAML: {problem}{where}.")
