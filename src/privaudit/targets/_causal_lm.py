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
access, no pickle, no remote code.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from privaudit._digest import DIGITS, Hasher
from privaudit._optional import import_optional
from privaudit._validation import check_int, param_error
from privaudit.targets._fingerprint import module_fingerprint

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
    """No loading bars from transformers (privaudit shows its own progress)."""
    logging = transformers.utils.logging
    shown = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
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
                   max_length: int = 512, batch_size: int = 8) -> CausalLMTarget:
    """Load a causal LM and its tokenizer from a local folder, safely.

    Parameters
    ----------
    path : path-like
        A folder written by ``save_pretrained`` (``config.json``, ``*.safetensors``, the
        tokenizer's files). Never a hub id: nothing is downloaded.
    name : str
        Name in results (default: the folder's name).
    torch_dtype : torch.dtype, optional
        Load the weights in this dtype (e.g. ``torch.bfloat16``).
    max_length, batch_size : int
        The target's scoring defaults (:class:`CausalLMTarget`).

    Returns
    -------
    CausalLMTarget
        The model in evaluation mode and its tokenizer.

    Raises
    ------
    FileNotFoundError
        If the folder does not exist (a hub id is named as such).
    ValueError
        If it holds no safetensors weights (pickled ``pytorch_model.bin`` only is refused:
        unpickling can run code), or the configuration needs remote code.

    Notes
    -----
    ``from_pretrained`` runs with ``local_files_only=True``, ``use_safetensors=True`` and
    ``trust_remote_code=False``, inside a block where the hub is offline: no request is
    made, no pickle is read (transformers' fallback to ``pytorch_model.bin`` is off), and a
    configuration's ``auto_map`` pointing at custom code is never imported.
    """
    transformers = import_optional("transformers", extra="llm",
                                   purpose="Loading a causal language model")
    folder = _check_folder(path)
    options = {"local_files_only": True, "trust_remote_code": False}
    with _offline(), _quiet(transformers):
        try:
            model = transformers.AutoModelForCausalLM.from_pretrained(
                folder, use_safetensors=True, dtype=torch_dtype, **options)
            tokenizer = transformers.AutoTokenizer.from_pretrained(folder, **options)
        except (OSError, ValueError, KeyError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            raise param_error("path", _FUNC, "a folder transformers can load without "
                              "remote code or downloads", f"<{folder}: {first[:300]}>") from None
    model.eval()
    return CausalLMTarget(model, tokenizer, name=name or folder.name, max_length=max_length,
                          batch_size=batch_size)
