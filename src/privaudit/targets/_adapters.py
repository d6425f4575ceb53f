"""A PEFT/LoRA adapter folder over a local base model, checked before peft reads it.

An adapter folder (``save_pretrained`` of a ``peft`` model) holds ``adapter_config.json``
and ``adapter_model.safetensors``: the low-rank matrices of LoRA (Hu et al., "LoRA:
Low-Rank Adaptation of Large Language Models", ICLR 2022), whose product ``B A`` scaled by
``lora_alpha / r`` is added to each adapted weight (their eq. 3). It names its base model
in ``base_model_name_or_path``, usually a hub id or a path on the machine that trained it.
:func:`load_adapter_model` loads it as it loads a model folder (no hub, no pickle, no
remote code, no file outside the folders):

- the base is a local folder only: given as ``base=``, or the configuration's
  ``base_model_name_or_path`` resolved against the adapter folder (a relative path) and
  required to lie, links followed, inside ``base_root`` (default: the folder holding the
  adapter folder); it is loaded by :func:`~privaudit.targets.load_causal_lm`, all of its
  checks included;
- the adapter's weights come from ``adapter_model.safetensors`` only (read here, not by
  peft, which falls back to a pickled ``adapter_model.bin``), and every LoRA weight the
  configuration creates must be in it (none left at its random initialisation), nothing
  else may be;
- the configuration must be a LoRA one whose every key this peft knows; keys that make
  peft import a module (``megatron_core``) or rewrite the base weights at creation
  (``init_lora_weights`` = ``"pissa"``, ``"olora"``, ``"loftq"``, ...) are refused, and
  every ``target_modules`` entry must name a module of the base;
- the texts peft makes regular expressions of (``target_modules`` or ``exclude_modules``
  given as one pattern, the keys of ``rank_pattern`` and ``alpha_pattern``) must match in
  bounded time: no repeat or alternation inside a repeat, no back-reference, at most
  :data:`MAX_PATTERN_REPEATS` unbounded repeats (catastrophic backtracking would hang the
  load on every module name); the names peft pastes into a pattern unescaped
  (``modules_to_save``, ``layers_pattern``) must be plain module names.

The adapter's weights require a gradient and the base's do not (as when it was trained):
GradNorm reads the gradient of the adapter's weights; of every weight once merged.
"""

from __future__ import annotations

import dataclasses
import os
import re
import warnings
from pathlib import Path
from typing import Any

from privaudit._files import check_inside
from privaudit._optional import import_optional
from privaudit.targets._hf_folder import (
    FolderError,
    _check_links,
    _json_dict,
    _safetensors_keys,
    guarded,
)

__all__ = ["ADAPTER_CONFIG", "is_adapter_folder", "load_adapter_model"]

ADAPTER_CONFIG = "adapter_config.json"
_ADAPTER_WEIGHTS = "adapter_model.safetensors"
_FUNC = "load_causal_lm"
#: ``init_lora_weights`` values that leave the base weights as they are.
_PLAIN_INITS = (True, False, "gaussian")
#: Unbounded repeats (``*``, ``+``, ``{n,}``) a pattern may hold: a pattern that fails on a
#: module name of L characters can try about L^k / k! ways of sharing the name among its k
#: unbounded repeats (docs/security.md gives the measured worst case).
MAX_PATTERN_REPEATS = 4
#: Longest pattern accepted (peft's documented patterns are a few dozen characters).
MAX_PATTERN_LENGTH = 1000
#: Keys peft matches as regular expressions: a whole-pattern string, or a mapping whose
#: keys peft wraps as ``(.*\.)?(KEY)$`` (peft.utils.other, rank and alpha patterns).
_PATTERN_KEYS = ("target_modules", "exclude_modules", "rank_pattern", "alpha_pattern")
#: Keys whose names peft pastes unescaped into a pattern (``(^|.*\.)NAME($|\..*)``).
_NAME_KEYS = ("modules_to_save", "layers_pattern")
_MODULE_NAME = re.compile(r"[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*")


def is_adapter_folder(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a folder holding a peft adapter (``adapter_config.json``)."""
    return (Path(path).expanduser() / ADAPTER_CONFIG).is_file()


def load_adapter_model(folder: str | os.PathLike[str], *, base: Any = None,
                       base_root: Any = None, merge: bool = False,
                       load_base: Any) -> tuple[Any, Any, Path]:
    """The base model with the adapter of ``folder`` on it, and the base's tokenizer.

    Parameters
    ----------
    folder : path-like
        The adapter folder.
    base : path-like, optional
        The base model's folder. Default: the configuration's ``base_model_name_or_path``,
        which must then resolve inside ``base_root``.
    base_root : path-like, optional
        Where a base named by the configuration may lie (links followed). Default: the
        folder holding ``folder``.
    merge : bool, default=False
        Fold the adapter into the base weights (``merge_and_unload``): a plain
        transformers model, as fast as the base. Otherwise a ``peft`` model.
    load_base : callable
        ``load_base(path) -> CausalLMTarget`` (:func:`~privaudit.targets.load_causal_lm`
        with the caller's options).

    Returns
    -------
    (model, tokenizer, base_folder)
        The model in evaluation mode.
    """
    peft = import_optional("peft", extra="peft", purpose="Loading a LoRA adapter")
    folder = Path(folder).expanduser()
    _check_links(folder, folder)
    config = _adapter_config(folder, peft)
    weights = _adapter_weights(folder)
    base_folder = _base_folder(folder, config, base, base_root)
    target = load_base(base_folder)
    # Where the base was loaded from (peft warns when this differs from the model's own).
    config.base_model_name_or_path = getattr(target.model.config, "name_or_path", None)
    model = _with_adapter(target.model, config, weights, folder, peft)
    if merge:
        model = guarded(model.merge_and_unload,
                        f"{_FUNC}: the adapter in {folder} cannot be merged into its base")
    model.eval()
    return model, target.tokenizer, base_folder


def _adapter_config(folder: Path, peft: Any) -> Any:
    """``adapter_config.json`` as a LoRA configuration, every key known and harmless."""
    doc = _json_dict(folder, ADAPTER_CONFIG, folder, required=True)
    path = folder / ADAPTER_CONFIG
    if doc.get("peft_type") != "LORA":
        raise FolderError(f"The 'peft_type' key of {path} must be 'LORA' (privaudit loads "
                          f"LoRA adapters). Got {str(doc.get('peft_type'))[:40]!r} instead.")
    known = {field.name for field in dataclasses.fields(peft.LoraConfig)}
    unknown = sorted(set(doc) - known)
    if unknown:
        raise FolderError(f"{path} has keys this peft ({peft.__version__}) does not know: "
                          f"{', '.join(unknown[:5])}. privaudit loads no configuration it "
                          "cannot read whole (a newer peft may know them).")
    if doc.get("megatron_config") or doc.get("megatron_core") not in (None, "megatron.core"):
        raise FolderError(f"The 'megatron_config'/'megatron_core' keys of {path} must be "
                          "unset: they make peft import a module the file names.")
    _check_patterns(doc, path)
    if doc.get("init_lora_weights", True) not in _PLAIN_INITS:
        raise FolderError(
            f"The 'init_lora_weights' key of {path} must be true, false or 'gaussian'. Got "
            f"{str(doc.get('init_lora_weights'))[:40]!r} instead: that initialisation "
            "rewrites the base weights (convert the adapter to plain LoRA when saving it).")
    fields = {k: v for k, v in doc.items() if k != "megatron_core"}
    # init False: the LoRA weights come from the file, no initialisation is computed.
    # inference_mode False: the adapter's weights require a gradient, the base's do not,
    # as in fine-tuning, so GradNorm reads the gradient of the weights that were trained.
    return guarded(lambda: peft.LoraConfig(**{**fields, "init_lora_weights": False,
                                              "inference_mode": False}),
                   f"{_FUNC}: peft cannot read {path}")


def _regex_parser() -> Any:
    """The standard library's parser of regular expressions (``re._parser``)."""
    try:
        from re import _parser  # type: ignore[attr-defined]  # Python >= 3.11
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_parse as _parser
    return _parser


def pattern_problem(pattern: str) -> str | None:
    """Why matching ``pattern`` might not end in bounded time; None when it will.

    Backtracking matchers (Python's ``re``, which peft uses) take exponential time on a
    repeat nested in a repeat (``(a+)+``) or an alternation under a repeat (``(a|ab)*``)
    and on back-references, and time growing as L^k with k unbounded repeats in sequence
    (``.*.*.*x``); Davis et al., "The Impact of Regular Expression Denial of Service
    (ReDoS) in Practice", ESEC/FSE 2018.

    Returns
    -------
    str or None
        ``"a repeat inside a repeat"``, ``"an alternation inside a repeat"``, ``"a
        back-reference"``, ``"N unbounded repeats (at most 4)"``, too long, or not a
        regular expression.
    """
    parser = _regex_parser()
    if len(pattern) > MAX_PATTERN_LENGTH:
        return f"more than {MAX_PATTERN_LENGTH} characters"
    try:
        items = parser.parse(pattern)
    except re.error as exc:
        return f"not a regular expression ({exc})"
    repeats = {parser.MAX_REPEAT, parser.MIN_REPEAT, getattr(parser, "POSSESSIVE_REPEAT", None)}
    nested = {parser.SUBPATTERN: -1, parser.ASSERT: 1, parser.ASSERT_NOT: 1}
    unbounded, stack = 0, [(list(items), False)]
    while stack:
        sequence, in_repeat = stack.pop()
        for op, av in sequence:
            if op in (parser.GROUPREF, parser.GROUPREF_EXISTS):
                return "a back-reference"
            if op in repeats:
                _low, high, body = av
                if in_repeat and high > 1:
                    return "a repeat inside a repeat"
                unbounded += high == parser.MAXREPEAT
                stack.append((list(body), in_repeat or high > 1))
            elif op == parser.BRANCH:
                if in_repeat:
                    return "an alternation inside a repeat"
                stack.extend((list(alternative), False) for alternative in av[1])
            elif op in nested:
                stack.append((list(av[nested[op]]), in_repeat))
            elif op == getattr(parser, "ATOMIC_GROUP", None):
                stack.append((list(av), in_repeat))
    if unbounded > MAX_PATTERN_REPEATS:
        return f"{unbounded} unbounded repeats (at most {MAX_PATTERN_REPEATS})"
    return None


def _check_patterns(doc: dict[str, Any], path: Path) -> None:
    """The configuration's regular expressions match in bounded time; its names are names."""
    for key in _PATTERN_KEYS:
        value = doc.get(key)
        # rank/alpha keys are matched as peft wraps them; a list of targets is compared
        # name by name (no pattern)
        patterns = ([rf"(.*\.)?({k})$" for k in value] if isinstance(value, dict)
                    else [value] if isinstance(value, str) else [])
        for pattern in patterns:
            problem = pattern_problem(pattern) if isinstance(pattern, str) else "not text"
            if problem:
                raise FolderError(
                    f"The {key!r} key of {path} must hold regular expressions that match in "
                    f"bounded time; {pattern[:80]!r} has {problem}. List the module names "
                    "instead.")
    for key in _NAME_KEYS:
        value = doc.get(key)
        names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        bad = [name for name in names if not (isinstance(name, str) and len(name) <= 200
                                              and _MODULE_NAME.fullmatch(name))]
        if bad:
            raise FolderError(f"The {key!r} key of {path} must list module names (letters, "
                              "digits, '_' and '-', joined by dots): peft puts them into "
                              f"regular expressions as they are. Got {str(bad[0])[:80]!r}.")


def _adapter_weights(folder: Path) -> dict[str, Any]:
    """The tensors of ``adapter_model.safetensors`` (a pickled ``.bin`` is refused)."""
    path = folder / _ADAPTER_WEIGHTS
    if not path.is_file():
        pickled = sorted(p.name for p in folder.iterdir() if p.suffix in (".bin", ".pt", ".pth"))
        extra = (f"; it holds {', '.join(pickled)}, pickled weights privaudit never loads "
                 "(unpickling can run code): save the adapter with safe_serialization=True"
                 if pickled else "")
        raise FolderError(f"The adapter folder {folder} has no {_ADAPTER_WEIGHTS}{extra}.")
    check_inside(path, folder, what=_ADAPTER_WEIGHTS)
    _safetensors_keys(path, _ADAPTER_WEIGHTS)  # the header, checked with its name
    safetensors_torch = import_optional("safetensors.torch", extra="llm",
                                        purpose="Reading a LoRA adapter's weights")
    return guarded(lambda: safetensors_torch.load_file(os.fspath(path)),
                   f"{_FUNC}: {_ADAPTER_WEIGHTS} in {folder} does not load")


def _base_folder(folder: Path, config: Any, base: Any, base_root: Any) -> Path:
    """The base model's local folder: ``base``, or the configuration's inside the root."""
    if base is not None:
        given = Path(base).expanduser()
        if not given.is_dir():
            raise FileNotFoundError(f"{_FUNC}: the 'base' folder {str(base)!r} does not "
                                    "exist (the adapter's base model, saved locally).")
        return given
    named = config.base_model_name_or_path
    if not isinstance(named, str) or not named:
        raise FolderError(f"{folder / ADAPTER_CONFIG} names no base model "
                          "('base_model_name_or_path'): give its folder as base=.")
    root = Path(base_root).expanduser() if base_root is not None else folder.parent
    path = folder / Path(named).expanduser()  # an absolute path stays as it is
    what = (f"the base model {named!r} named by {ADAPTER_CONFIG} "
            "('base_model_name_or_path'); give its folder as base= or widen base_root=")
    if not path.is_dir():
        raise FileNotFoundError(f"{_FUNC}: {what}: no folder {path} (a hub id? privaudit "
                                "never downloads).")
    # The resolved folder is loaded: a link swapped after this check is not followed.
    return Path(os.path.realpath(check_inside(path, root, what=what)))


def _with_adapter(model: Any, config: Any, weights: dict[str, Any], folder: Path,
                  peft: Any) -> Any:
    """``model`` wrapped by peft with the adapter's weights, all of them from the file."""
    _check_targets(model, config, folder)
    with warnings.catch_warnings():
        # transformers deprecates a name peft still calls; nothing the user can act on.
        warnings.filterwarnings("ignore", "`is_gradient_checkpointing`", FutureWarning)
        peft_model = guarded(lambda: peft.get_peft_model(model, config),
                             f"{_FUNC}: peft cannot put the adapter of {folder} on its base")
    result = guarded(lambda: peft.set_peft_model_state_dict(peft_model, weights),
                     f"{_FUNC}: the weights in {folder / _ADAPTER_WEIGHTS} do not fit "
                     "the adapter its configuration describes")
    # strict=False: the base weights are "missing" from the adapter's file by design.
    missing = sorted(k for k in result.missing_keys if ".default" in k)
    problems = [f"{len(keys)} {what}: {', '.join(keys[:5])}" for keys, what in (
        (missing, "adapter weights missing (they would be random)"),
        (sorted(result.unexpected_keys), "weights the adapter does not have")) if keys]
    if problems:
        raise FolderError(f"{_FUNC}: {folder / _ADAPTER_WEIGHTS} does not match "
                          f"{ADAPTER_CONFIG}; " + "; ".join(problems) + ".")
    return peft_model


def _check_targets(model: Any, config: Any, folder: Path) -> None:
    """Every ``target_modules`` entry names a module of the base (peft may skip some)."""
    names = [name for name, _ in model.named_modules()]
    targets = config.target_modules
    what = f"The 'target_modules' key of {folder / ADAPTER_CONFIG}"
    if isinstance(targets, str):
        if targets != "all-linear" and not any(re.fullmatch(targets, name) for name in names):
            raise FolderError(f"{what} ({targets[:60]!r}) matches no module of the base "
                              f"model ({type(model).__name__}).")
        return
    absent = sorted(t for t in targets or () if not any(
        name == t or name.endswith(f".{t}") for name in names))
    if absent:
        raise FolderError(f"{what} names modules the base model ({type(model).__name__}) "
                          f"does not have: {', '.join(absent[:5])}.")
