"""A causal language model as an audited artefact: model, tokenizer, fingerprint, queries.

:class:`CausalLMTarget` holds a Hugging Face causal LM and its tokenizer and follows
:class:`~privaudit.targets.AuditedArtifact` (``task="causal-lm"``). It does not score texts
itself: :func:`privaudit.llm.score_texts` reads ``model`` and ``tokenizer`` and the LLM
audit counts the texts scored with :meth:`CausalLMTarget.count_queries`. Keeping the
scoring out of the target keeps the layering (``tests/test_layering.py``): targets sit
below the LLM engine and may not import it, not even lazily inside a method, and a scorer
injected into a ``score_texts`` method would only move the same call into the target.
``max_length`` and ``batch_size`` travel with the target as the scoring defaults.

:func:`load_causal_lm` reads a local folder only, weights from safetensors only: no hub
access, no pickle, no remote code, no file outside the folder
(:func:`~privaudit.targets.check_model_folder`), and no weight left at its random
initialisation: a model whose weights do not all come from the folder is refused. It
also reads a LoRA adapter folder over a local base (:mod:`privaudit.targets._adapters`),
and runs the loaded model once, so that a dtype the machine cannot run (a bfloat16 folder
on a CPU without bfloat16 kernels) is an error naming ``torch_dtype`` at loading.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from privaudit._digest import DIGITS, Hasher
from privaudit._optional import import_optional
from privaudit._validation import check_int, param_error
from privaudit.targets._adapters import ADAPTER_CONFIG, is_adapter_folder, load_adapter_model
from privaudit.targets._fingerprint import module_fingerprint
from privaudit.targets._hf_folder import FolderError, check_model_folder, guarded

__all__ = ["CausalLMTarget", "load_causal_lm"]

_FUNC = "load_causal_lm"
#: What ``from_pretrained(use_safetensors=True)`` reads: one file, or an index of shards.
_SAFE_WEIGHTS = ("model.safetensors", "model.safetensors.index.json")
_PICKLED = {".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle"}


class CausalLMTarget:
    """A causal language model and its tokenizer, audited on texts.

    Parameters
    ----------
    model : transformers causal LM (torch module)
        Scored in evaluation mode.
    tokenizer : transformers tokenizer
        The model's tokenizer (never modified).
    name : str
        Name in results and reports (default: the model's ``name_or_path`` or class).
    max_length : int, default=512
        Tokens scored per text (longer texts are truncated), for scorers reading the target.
    batch_size : int, default=8
        Texts per forward pass, for scorers reading the target.

    Attributes
    ----------
    task : str
        ``"causal-lm"``.
    n_queries : int
        Texts scored so far.
    reveals_probabilities : bool
        True: the statistics read token probabilities.

    Notes
    -----
    A plain holder: :func:`privaudit.llm.score_texts` (``target.model``,
    ``target.tokenizer``) scores, and whoever scores calls :meth:`count_queries`. The
    fingerprint digests the weights' bytes, not where they were loaded from.
    """

    task = "causal-lm"
    reveals_probabilities = True

    def __init__(self, model: Any, tokenizer: Any, *, name: str = "", max_length: int = 512,
                 batch_size: int = 8) -> None:
        if not callable(model) or not hasattr(model, "parameters"):
            raise param_error("model", "CausalLMTarget", "a torch causal language model",
                              f"<{type(model).__name__}>", error=TypeError)
        if not callable(tokenizer):
            raise param_error("tokenizer", "CausalLMTarget", "a transformers tokenizer",
                              f"<{type(tokenizer).__name__}>", error=TypeError)
        if not isinstance(name, str):
            raise param_error("name", "CausalLMTarget", "a string", name, error=TypeError)
        self.max_length = check_int(max_length, param="max_length", func="CausalLMTarget",
                                    low=2)
        self.batch_size = check_int(batch_size, param="batch_size", func="CausalLMTarget",
                                    low=1)
        self.model, self.tokenizer = model, tokenizer
        default = getattr(getattr(model, "config", None), "name_or_path", "") or ""
        self.name = name or Path(str(default)).name or type(model).__name__
        self.n_queries = 0
        self._fingerprint: str | None = None

    def __repr__(self) -> str:
        return f"CausalLMTarget(name={self.name!r})"

    def count_queries(self, n: int) -> None:
        """Add ``n`` texts to :attr:`n_queries`."""
        self.n_queries += int(n)

    def fingerprint(self) -> str | None:
        """Digest of the weights, the architecture and the tokenizer's vocabulary.

        Every tensor of the state dict (name, dtype, shape, bytes: see
        :func:`~privaudit.targets.module_fingerprint`), the model's configuration and the
        tokenizer's vocabulary and special tokens. Stable across loads and processes;
        computed once per target. None when a tensor cannot be read.
        """
        if self._fingerprint is None:
            state = module_fingerprint(self.model)
            if state is None:
                return None
            config = getattr(self.model, "config", None)
            config_part = config.to_json_string(use_diff=False) if hasattr(
                config, "to_json_string") else repr(config)
            vocab = sorted(self.tokenizer.get_vocab().items())
            special = sorted((k, str(v)) for k, v in getattr(
                self.tokenizer, "special_tokens_map", {}).items())
            self._fingerprint = Hasher().feed(
                ("causal-lm", state, _without_paths(config_part), vocab, special,
                 getattr(self.tokenizer, "padding_side", "right"))).hexdigest(DIGITS)
        return self._fingerprint


def _without_paths(config_json: str) -> str:
    """The configuration without where the model was loaded from (not what it is)."""
    import json

    try:
        doc = json.loads(config_json)
    except ValueError:
        return config_json
    doc.pop("_name_or_path", None)
    doc.pop("transformers_version", None)
    return json.dumps(doc, sort_keys=True)


@contextmanager
def _offline() -> Any:
    """No hub access while loading, whatever the environment says.

    ``huggingface_hub`` reads ``HF_HUB_OFFLINE`` once, at import: setting the variable now
    would change nothing, so its module constant (which every hub request checks) is set
    for the block as well, and both are restored after it.
    """
    hub_constants = import_optional("huggingface_hub.constants", extra="llm",
                                    purpose="Loading a causal language model offline")
    keys = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    before = {k: os.environ.get(k) for k in keys}
    was_offline = hub_constants.HF_HUB_OFFLINE
    os.environ.update(dict.fromkeys(keys, "1"))
    hub_constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        hub_constants.HF_HUB_OFFLINE = was_offline
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def _quiet(transformers: Any) -> Any:
    """No loading bars or load reports from transformers (privaudit says what is wrong)."""
    logging = transformers.utils.logging
    shown, verbosity = logging.is_progress_bar_enabled(), logging.get_verbosity()
    logging.disable_progress_bar()
    logging.set_verbosity_error()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        if shown:
            logging.enable_progress_bar()


def _check_folder(path: Any) -> Path:
    folder = Path(path).expanduser()
    if not folder.exists():
        text = str(path)
        hub_like = (not text.startswith((".", "/", "~")) and text.count("/") <= 1
                    and "\\" not in text)
        hint = (" It looks like a hub model id: privaudit never downloads. Save the model "
                "locally (save_pretrained with safe_serialization=True) and give its folder."
                if hub_like else "")
        raise FileNotFoundError(f"{_FUNC}: the model folder {str(path)!r} does not exist."
                                + hint)
    if not folder.is_dir():
        raise param_error("path", _FUNC, "a local model folder", str(path))
    if not any((folder / name).is_file() for name in _SAFE_WEIGHTS):
        pickled = sorted(p.name for p in folder.iterdir() if p.suffix in _PICKLED)
        extra = (f"; it holds only pickled weights ({', '.join(pickled)}), which privaudit "
                 "never loads (unpickling can run code): convert them to safetensors first "
                 "with model.save_pretrained(folder, safe_serialization=True)"
                 if pickled else "")
        raise param_error("path", _FUNC, f"a folder with its weights in {_SAFE_WEIGHTS[0]} "
                          f"(or shards listed in {_SAFE_WEIGHTS[1]})" + extra, str(folder))
    return folder



def load_causal_lm(path: str | os.PathLike[str], *, name: str = "", torch_dtype: Any = None,
                   max_length: int = 512, batch_size: int = 8, adapter: Any = None,
                   base: Any = None, base_root: Any = None,
                   merge: bool = False) -> CausalLMTarget:
    """Load a causal LM and its tokenizer from a local folder, safely and faithfully.

    Parameters
    ----------
    path : path-like
        A folder written by ``save_pretrained`` (``config.json``, ``*.safetensors``, the
        tokenizer's files), or a peft LoRA adapter folder (``adapter_config.json``,
        ``adapter_model.safetensors``) over a local base model. Never a hub id: nothing
        is downloaded.
    name : str
        Name in results (default: the folder's name).
    torch_dtype : torch.dtype, optional
        Load the weights in this dtype (e.g. ``torch.bfloat16``). Default: the folder's.
    max_length, batch_size : int
        The target's scoring defaults (:class:`CausalLMTarget`).
    adapter : path-like, optional
        A LoRA adapter folder to put on the model of ``path`` (then the base).
    base : path-like, optional
        With an adapter folder as ``path``: its base model's folder. Default: the
        adapter's ``base_model_name_or_path``, which must be a local folder inside
        ``base_root``.
    base_root : path-like, optional
        Where a base named by the adapter may lie (links followed). Default: the folder
        holding the adapter folder.
    merge : bool, default=False
        Fold the adapter into the base weights (a plain transformers model).

    Returns
    -------
    CausalLMTarget
        The model in evaluation mode and its tokenizer.

    Raises
    ------
    FileNotFoundError
        If the folder does not exist (a hub id is named as such).
    privaudit.exceptions.OutsideFolderError
        If a file transformers would read lies outside the folder: a symbolic link leading
        out, a shard or tokenizer file named by absolute path or with ``..``.
    ValueError
        If it holds no safetensors weights (pickled ``pytorch_model.bin`` only is refused:
        unpickling can run code), the configuration needs remote code or is not a causal
        language model, a weight is missing or unexpected (it would be random), or the
        tokenizer is absent, does not load or does not fit the model. The message names
        the file, the key or the weights.

    Notes
    -----
    Before transformers reads anything, every file it will open is checked
    (:mod:`privaudit.targets._hf_folder`). ``from_pretrained`` then runs with
    ``local_files_only=True``, ``use_safetensors=True`` and ``trust_remote_code=False``,
    inside a block where the hub is offline: no request is made, no pickle is read
    (transformers' fallback to ``pytorch_model.bin`` is off), and a configuration's
    ``auto_map`` pointing at custom code is never imported, nor a hub kernel named by
    ``attn_implementation``. Its loading report (``output_loading_info=True``, with
    ``ignore_mismatched_sizes=True`` so that a reshaped tensor is listed, not raised
    without its name) must be clean: no weight missing (randomly initialised), unexpected
    or of another shape; weights transformers ties (GPT-2's ``lm_head`` to the
    embeddings) are not missing. The tokenizer must turn a sentence into tokens the model
    has embeddings for.
    """
    options = {"name": name, "torch_dtype": torch_dtype, "max_length": max_length,
               "batch_size": batch_size}
    if adapter is not None or is_adapter_folder(path):
        return _load_with_adapter(path, adapter, base=base, base_root=base_root, merge=merge,
                                  options=options)
    for key, value in (("base", base), ("base_root", base_root), ("merge", merge or None)):
        if value is not None:
            raise param_error(key, _FUNC, "given only with a LoRA adapter (an adapter folder "
                              "as path, or adapter=)", value)
    transformers = import_optional("transformers", extra="llm",
                                   purpose="Loading a causal language model")
    folder = _check_folder(path)
    _check_config(check_model_folder(folder), folder, transformers)
    options = {"local_files_only": True, "trust_remote_code": False}
    with _offline(), _quiet(transformers):
        tokenizer = _loaded(folder, "tokenizer", lambda: transformers.AutoTokenizer
                            .from_pretrained(folder, **options))
        model, info = _loaded(folder, "model", lambda: transformers.AutoModelForCausalLM
                              .from_pretrained(folder, use_safetensors=True, dtype=torch_dtype,
                                               ignore_mismatched_sizes=True,
                                               output_loading_info=True, **options))
    _check_loading_info(info, folder, type(model).__name__)
    _check_runs(model, _check_tokenizer_fits(tokenizer, model, folder), folder, torch_dtype)
    model.eval()
    return CausalLMTarget(model, tokenizer, name=name or folder.name, max_length=max_length,
                          batch_size=batch_size)


def _loaded(folder: Path, what: str, load: Any) -> Any:
    """``load()``, any failure (a Rust panic included) as one error naming the folder."""
    return guarded(load, f"{_FUNC}: transformers (local files only, no remote code) "
                         f"cannot load the {what} in {folder}")


def _check_config(config: dict[str, Any], folder: Path, transformers: Any) -> None:
    """Refuse a configuration that is not a causal LM's, before building the model."""
    _check_dtypes(config, folder)
    _check_no_hub_kernel(config, folder)
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise FolderError(f"The 'model_type' key of {folder / 'config.json'} must be a "
                          f"model type such as 'gpt2' or 'llama'. Got {model_type!r} instead.")
    auto = transformers.models.auto.modeling_auto
    causal = auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    if model_type not in causal:
        if model_type in auto.CONFIG_MAPPING_NAMES:  # unknown types: remote code, refused
            raise FolderError(f"{folder / 'config.json'} describes a {model_type!r} model, "
                              "which is not a causal language model (transformers has no "
                              "causal-LM class for it).")
        return
    if model_type in _ENCODERS_WITH_LM_HEAD and not config.get("is_decoder"):
        raise FolderError(f"{folder / 'config.json'} describes a {model_type!r} encoder (a "
                          "masked language model, 'is_decoder' not true), not a causal "
                          "language model.")
    _check_architectures(config, folder, auto, model_type)


#: Encoders whose causal-LM class works only with ``is_decoder: true`` in the configuration.
_ENCODERS_WITH_LM_HEAD = frozenset({
    "bart", "bert", "big_bird", "camembert", "data2vec-text", "electra", "ernie", "mbart",
    "megatron-bert", "mvp", "reformer", "rembert", "roberta", "roberta-prelayernorm",
    "roc_bert", "roformer", "xlm-roberta", "xlm-roberta-xl", "xmod"})


def _class_names(mapping: dict[str, Any]) -> set[str]:
    out: set[str] = set()
    for value in mapping.values():
        out.update([value] if isinstance(value, str) else value)
    return out


def _check_architectures(config: dict[str, Any], folder: Path, auto: Any,
                         model_type: str) -> None:
    """``architectures`` must name the class ``model_type`` loads (or its base model)."""
    listed = config.get("architectures") or []
    if not isinstance(listed, list):
        return
    known_classes = set().union(*(_class_names(getattr(auto, n)) for n in dir(auto)
                                  if n.endswith("_MAPPING_NAMES") and n != "CONFIG_MAPPING_NAMES"))
    known = [a for a in listed if isinstance(a, str) and a in known_classes]
    loads = auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[model_type]
    fits = _class_names({0: loads}) | _class_names(
        {0: auto.MODEL_MAPPING_NAMES.get(model_type, ())})
    if known and not fits.intersection(known):
        raise FolderError(
            f"{folder / 'config.json'} says the model is {', '.join(known)} but its "
            f"model_type {model_type!r} loads {loads}: the configuration does not describe "
            "these weights (or the model is not a causal language model).")


def _sections(config: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The configuration and its nested ones (``text_config``), with their key prefix."""
    return [("", config)] + [(f"{k}.", v) for k, v in config.items() if isinstance(v, dict)]


def _check_dtypes(config: dict[str, Any], folder: Path) -> None:
    """``dtype`` / ``torch_dtype`` keys (nested configurations too) name torch dtypes."""
    torch = import_optional("torch", extra="llm", purpose="Loading a causal language model")
    for prefix, doc in _sections(config):
        for key in ("dtype", "torch_dtype"):
            value = doc.get(key)
            if value is None or value == "auto":
                continue
            name = value.removeprefix("torch.") if isinstance(value, str) else None
            if not name or not isinstance(getattr(torch, name, None), torch.dtype):
                raise FolderError(f"The {prefix + key!r} key of {folder / 'config.json'} must "
                                  "be a torch dtype such as 'float32' or 'bfloat16'. Got "
                                  f"{str(value)[:60]!r} instead.")


def _check_no_hub_kernel(config: dict[str, Any], folder: Path) -> None:
    """No ``*_implementation`` key naming a hub kernel (compiled code, fetched or cached).

    transformers honours ``attn_implementation: "org/repo"`` in ``config.json`` and loads
    that kernel through the ``kernels`` package when it is installed.
    """
    for prefix, doc in _sections(config):
        for key, value in doc.items():
            values = value.values() if isinstance(value, dict) else [value]
            if key.endswith("_implementation") and any(
                    isinstance(v, str) and ("/" in v or ":" in v) for v in values):
                raise FolderError(
                    f"The {prefix + key!r} key of {folder / 'config.json'} must name a "
                    "transformers implementation such as 'sdpa' or 'eager'. Got "
                    f"{str(value)[:60]!r} instead: privaudit runs no kernel from the hub.")


def _check_loading_info(info: dict[str, Any], folder: Path, model_class: str) -> None:
    """Refuse a model whose weights did not all come from the folder's files."""
    said = {"missing_keys": "missing from the weight files (they would be random)",
            "unexpected_keys": "in the weight files but not in the model",
            "mismatched_keys": "of another shape than the model's",
            "error_msgs": "loading errors"}
    problems = []
    for key, what in said.items():
        items = sorted(str(k if isinstance(k, str) else k[0]) for k in info.get(key) or ())
        if items:
            more = f" and {len(items) - 5} more" if len(items) > 5 else ""
            problems.append(f"{len(items)} {what}: {', '.join(items[:5])}{more}")
    if problems:
        raise FolderError(
            f"{_FUNC}: the weights in {folder} do not match its config.json ({model_class}); "
            + "; ".join(problems) + ". privaudit audits only the weights the folder holds.")


def _check_tokenizer_fits(tokenizer: Any, model: Any, folder: Path) -> None:
    """The tokenizer turns text into tokens the model has embeddings for."""
    ids = guarded(lambda: tokenizer("A privacy audit of a language model.")["input_ids"],
                  f"{_FUNC}: the tokenizer in {folder} fails on a plain sentence")
    if not ids:
        raise FolderError(f"{_FUNC}: the tokenizer in {folder} turns text into no tokens "
                          f"(its vocabulary has {len(tokenizer)} entries): it is damaged or "
                          "not this model's tokenizer.")
    rows = model.get_input_embeddings().num_embeddings
    if len(tokenizer) > rows:
        raise FolderError(f"{_FUNC}: the tokenizer in {folder} has {len(tokenizer)} tokens but "
                          f"the model only {rows} embeddings: they do not belong together.")
    return list(ids)


def _check_runs(model: Any, ids: list[int], folder: Path, torch_dtype: Any) -> None:
    """One forward pass on the sentence: a dtype this machine cannot run is named.

    A folder saved in bfloat16 loads in bfloat16; a CPU without bfloat16 kernels (or a GPU
    without float16 ones) fails at the first layer norm or matrix product, which would
    otherwise surface mid-audit as a kernel error.
    """
    torch = import_optional("torch", extra="llm", purpose="Loading a causal language model")
    dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), None)
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    try:
        with torch.no_grad():
            model(input_ids=torch.tensor([ids], device=device))
    except (RuntimeError, NotImplementedError, TypeError) as exc:
        source = "as given" if torch_dtype is not None else "as the folder stores it"
        reason = " ".join(str(exc).split())[:200]
        raise param_error("torch_dtype", _FUNC, f"a dtype the device {device} runs the model "
                          f"in {folder} in; in {dtype} ({source}) it fails ({reason}); pass "
                          "torch_dtype=torch.float32", str(torch_dtype)) from None


def _load_with_adapter(path: Any, adapter: Any, *, base: Any, base_root: Any, merge: bool,
                       options: dict[str, Any]) -> CausalLMTarget:
    """:func:`load_causal_lm` of an adapter folder (``path``) or of ``path`` + ``adapter``."""
    if not isinstance(merge, bool):
        raise param_error("merge", _FUNC, "True or False", merge, error=TypeError)
    if adapter is not None:
        if base is not None:
            raise param_error("base", _FUNC, "None when 'adapter' is given (path is the "
                              "base)", base)
        base, folder = path, adapter
    else:
        folder = path
    if not is_adapter_folder(folder):
        raise param_error("adapter", _FUNC, f"a LoRA adapter folder (with {ADAPTER_CONFIG})",
                          str(folder))
    name = options.pop("name")

    def load_base(base_folder: Path) -> CausalLMTarget:
        return load_causal_lm(base_folder, **options)

    model, tokenizer, _ = load_adapter_model(folder, base=base, base_root=base_root,
                                             merge=merge, load_base=load_base)
    return CausalLMTarget(model, tokenizer, name=name or Path(folder).name,
                          max_length=options["max_length"], batch_size=options["batch_size"])
