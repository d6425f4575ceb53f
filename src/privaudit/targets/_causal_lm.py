"""A causal language model as an audited artefact: model, tokenizer, fingerprint, queries.

:class:`CausalLMTarget` holds a Hugging Face causal LM and its tokenizer and follows
:class:`~privaudit.targets.AuditedArtifact` (``task="causal-lm"``). It does not score texts
itself: :func:`privaudit.llm.score_texts` reads ``model`` and ``tokenizer`` and the LLM
audit counts the texts scored with :meth:`CausalLMTarget.count_queries`. Keeping the
scoring out of the target keeps the layering: targets sit below the LLM engine.

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
from privaudit._validation import param_error
from privaudit.targets._fingerprint import module_fingerprint

__all__ = ["CausalLMTarget", "load_causal_lm"]

_FUNC = "load_causal_lm"


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

    Attributes
    ----------
    task : str
        ``"causal-lm"``.
    n_queries : int
        Texts scored so far.
    reveals_probabilities : bool
        True: the statistics read token probabilities.
    """

    task = "causal-lm"
    reveals_probabilities = True

    def __init__(self, model: Any, tokenizer: Any, *, name: str = "") -> None:
        if not callable(model) or not hasattr(model, "parameters"):
            raise param_error("model", "CausalLMTarget", "a torch causal language model",
                              f"<{type(model).__name__}>", error=TypeError)
        if not callable(tokenizer):
            raise param_error("tokenizer", "CausalLMTarget", "a transformers tokenizer",
                              f"<{type(tokenizer).__name__}>", error=TypeError)
        if not isinstance(name, str):
            raise param_error("name", "CausalLMTarget", "a string", name, error=TypeError)
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
    """No hub access while loading, whatever the environment says."""
    keys = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    before = {k: os.environ.get(k) for k in keys}
    os.environ.update(dict.fromkeys(keys, "1"))
    try:
        yield
    finally:
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
    folder = Path(path)
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
    if not any(folder.glob("*.safetensors")):
        pickled = [p.name for p in folder.glob("*.bin")] + [p.name for p in folder.glob("*.pt")]
        extra = (f" It holds only pickled weights ({', '.join(sorted(pickled))}), which "
                 "privaudit never loads: convert them to safetensors first "
                 "(model.save_pretrained(folder, safe_serialization=True))."
                 if pickled else "")
        raise param_error("path", _FUNC, "a folder with weights in *.safetensors." + extra,
                          str(folder))
    return folder


def load_causal_lm(path: str | os.PathLike[str], *, name: str = "",
                   torch_dtype: Any = None) -> CausalLMTarget:
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

    Raises
    ------
    FileNotFoundError
        If the folder does not exist (a hub id is named as such).
    ValueError
        If it holds no safetensors weights (pickled ``pytorch_model.bin`` only is refused:
        unpickling can run code), or the configuration needs remote code.
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
                              "remote code or downloads", f"{folder} ({first[:200]})") from None
    model.eval()
    return CausalLMTarget(model, tokenizer, name=name or folder.name)
