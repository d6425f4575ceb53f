"""flair's sequence taggers as the named-entity recogniser of the text checks.

flair's own loader (``SequenceTagger.load``) reads a model file with torch's full unpickler
(weights-only mode off; privaudit never calls that loader, its own reads only through an
allow-listed weights-only unpickler, below): it rebuilds whatever the file names, so a
crafted ``.pt`` file runs code when loaded. :func:`load_flair_tagger` is written by hand instead:

1. **Only an allow-listed unpickler reads the file.** flair saves with pickle protocol 4,
   which torch's ``weights_only`` unpickler does not read (it implements protocol 2's
   opcodes only). The pickle inside the checkpoint is therefore re-encoded, opcode by
   opcode, into protocol 2 (frames dropped, short strings widened, ``STACK_GLOBAL`` written
   as ``GLOBAL``, bytes as ``_codecs.encode``), building no object, and the rewritten
   checkpoint is read by ``torch.load(weights_only=True)`` under
   ``torch.serialization.safe_globals`` with exactly :data:`FLAIR_SAFE_GLOBALS` added to
   torch's own tensor types: ``flair.data.Dictionary`` (the tag, vocabulary and character
   dictionaries), ``torch.torch_version.TorchVersion`` (in the model card), and
   ``collections.defaultdict`` with ``builtins.int``, its factory: a dictionary's lookup
   cache (``item2idx_not_encoded``), read as a plain ``dict`` and then dropped so that
   flair rebuilds it from the dictionary's items (torch's unpickler cannot fill a
   ``defaultdict``). The re-encoder is not a security boundary: whatever it writes is read
   by torch's ``weights_only`` unpickler, which refuses any other global and any opcode it
   lacks.
2. **Only embeddings built from the file's data are accepted.** flair rebuilds the
   embeddings from parameters saved in the file, and some of its embedding classes read
   further files or models named there (``CharacterEmbeddings`` unpickles a dictionary
   file given by path, or downloads one when none is stored; ``FastTextEmbeddings`` and
   the transformer embeddings load or download models). The embeddings must be among
   :data:`FLAIR_EMBEDDINGS` (one-hot, character, hash, word and flair embeddings and stacks
   of them), with their dictionaries stored in the file, never a path.
3. The tagger is built with flair's ``SequenceTagger._init_model_with_state_dict``, as
   flair's loader does once it has the state.

Checkpoints written by flair 0.12 or later (a state dict plus parameters) load this way.
Older ones pickle whole modules and are refused; load such a model once with flair in a
disposable environment and ``save`` it again to convert it. Models whose embeddings are
transformers are refused too.

References
----------
.. [1] Akbik, A. et al. "FLAIR: An Easy-to-Use Framework for State-of-the-Art NLP."
   NAACL 2019 (demonstrations).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickletools
import re
import shutil
import struct
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from privaudit._digest import file_sha256
from privaudit._optional import import_optional

__all__ = ["FLAIR_EMBEDDINGS", "FLAIR_SAFE_GLOBALS", "FlairCheckpointError", "FlairNER",
           "flair_ner", "load_flair_tagger"]

#: The globals a flair SequenceTagger checkpoint may name, besides torch's tensor types.
FLAIR_SAFE_GLOBALS = ("flair.data.Dictionary", "torch.torch_version.TorchVersion",
                      "collections.defaultdict", "builtins.int")
#: The embedding classes a checkpoint may use: built from data stored in the file only.
FLAIR_EMBEDDINGS = ("OneHotEmbeddings", "CharacterEmbeddings", "HashEmbeddings",
                    "WordEmbeddings", "FlairEmbeddings", "StackedEmbeddings")
_PURPOSE = "The flair NER backend"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_STRINGS = frozenset({"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"})
_BYTES = frozenset({"SHORT_BINBYTES", "BINBYTES", "BINBYTES8"})


class FlairCheckpointError(ValueError):
    """A flair model file that the safe loader refuses (it names the file)."""


# --------------------------------------------------------------------------- pickle


def _text(value: str) -> bytes:
    raw = value.encode("utf-8", "surrogatepass")
    return b"X" + struct.pack("<I", len(raw)) + raw  # BINUNICODE


def _slot(opcode: bytes, slot: int) -> bytes:
    return opcode + struct.pack("<I", slot)  # LONG_BINPUT "r" / LONG_BINGET "j"


class _Protocol2:
    """Re-encodes a pickle in protocol 2's opcodes; builds no object (see the module).

    Strings are held back while they sit on top of the stack, so that a ``STACK_GLOBAL``
    can take its module and name from them; a string stored in the memo is written out
    again wherever the memo is read.
    """

    def __init__(self) -> None:
        self.out = bytearray(b"\x80\x02")
        self.pending: list[str] = []
        self.strings: dict[int, str] = {}
        self.slots: set[int] = set()

    def flush(self) -> None:
        for value in self.pending:
            self.out += _text(value)
        self.pending.clear()

    def put(self, slot: int) -> None:
        self.slots.add(slot)
        if self.pending:
            self.strings[slot] = self.pending[-1]
        else:
            self.strings.pop(slot, None)
            self.out += _slot(b"r", slot)

    def get(self, slot: int) -> None:
        if slot in self.strings:
            self.pending.append(self.strings[slot])
        else:
            self.flush()
            self.out += _slot(b"j", slot)

    def stack_global(self) -> None:
        if len(self.pending) < 2 or not all(_NAME.fullmatch(s) for s in self.pending[-2:]):
            raise ValueError("a STACK_GLOBAL without a module and a name")
        module, name = self.pending[-2:]
        del self.pending[-2:]
        self.flush()
        self.out += f"c{module}\n{name}\n".encode()

    def raw_bytes(self, value: bytes) -> None:
        self.flush()
        self.out += b"c_codecs\nencode\n" + _text(value.decode("latin-1"))
        self.out += _text("latin1") + b"\x86R"  # TUPLE2, REDUCE

    def convert(self, data: bytes) -> bytes:
        ops = list(pickletools.genops(data))  # parses only; ValueError when damaged
        for i, (op, arg, pos) in enumerate(ops):
            end = ops[i + 1][2] if i + 1 < len(ops) else len(data)
            self.step(op.name, arg, data[pos:end])
        return bytes(self.out)

    def step(self, name: str, arg: Any, raw: bytes) -> None:
        if name in ("PROTO", "FRAME"):
            return
        if name in _STRINGS:
            self.pending.append(arg)
        elif name in ("MEMOIZE", "BINPUT", "LONG_BINPUT"):
            self.put(len(self.slots) if name == "MEMOIZE" else arg)
        elif name in ("BINGET", "LONG_BINGET"):
            self.get(arg)
        elif name == "STACK_GLOBAL":
            self.stack_global()
        elif name in _BYTES:
            self.raw_bytes(arg)
        else:  # written as it is: torch's unpickler refuses what it does not know
            self.flush()
            self.out += raw


def _rewrite_checkpoint(path: Path, target: IO[bytes]) -> None:
    """Copy the zip checkpoint ``path`` to ``target``, its pickle in protocol 2.

    The tensors' records are streamed (a large model is not held twice in memory).
    """
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(target, "w") as dest:
        pickles = [n for n in source.namelist() if n.endswith("/data.pkl")]
        if len(pickles) != 1:
            raise ValueError(f"{len(pickles)} data.pkl records (one expected)")
        for info in source.infolist():
            if info.filename == pickles[0]:
                dest.writestr(info.filename, _Protocol2().convert(source.read(info)))
                continue
            with source.open(info) as src, dest.open(info.filename, "w",
                                                     force_zip64=True) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)


def _plain_dict(*_: Any) -> dict[Any, Any]:
    """Stands for ``collections.defaultdict(int)``: a dict, whatever the factory."""
    return {}


def _safe_globals(flair: Any, torch: Any) -> list[Any]:
    found = {"flair.data.Dictionary": flair.data.Dictionary,
             "torch.torch_version.TorchVersion": torch.torch_version.TorchVersion,
             "collections.defaultdict": (_plain_dict, "collections.defaultdict"),
             "builtins.int": int}
    return [found[name] for name in FLAIR_SAFE_GLOBALS]


def _drop_lookup_caches(obj: Any, dictionary: type, depth: int = 0) -> None:
    """Remove the lookup caches of the flair dictionaries in ``obj`` (flair remakes them)."""
    if depth > 20:
        return
    if isinstance(obj, dictionary):
        vars(obj).pop("item2idx_not_encoded", None)
    elif isinstance(obj, dict):
        for value in obj.values():
            _drop_lookup_caches(value, dictionary, depth + 1)
    elif isinstance(obj, list):
        for value in obj:
            _drop_lookup_caches(value, dictionary, depth + 1)


def _reason(exc: Exception) -> str:
    """The useful line of an unpickling error (torch's follows a long preamble)."""
    text = str(exc)
    if "WeightsUnpickler error:" in text:
        text = text.split("WeightsUnpickler error:", 1)[1]
    line = next((x.strip() for x in text.splitlines() if x.strip()), "")
    line = line.split(" was not an allowed global")[0]  # not torch's advice to allow it
    return f"{exc.__class__.__name__}: {line[:200]}"


def _read_state(path: Path, flair: Any, torch: Any) -> dict[str, Any]:
    """The checkpoint's state, read by torch's ``weights_only`` unpickler (see the module)."""
    try:
        with tempfile.TemporaryFile() as handle:
            _rewrite_checkpoint(path, handle)
            handle.seek(0)
            with torch.serialization.safe_globals(_safe_globals(flair, torch)):
                state = torch.load(handle, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise FlairCheckpointError(
            f"Refusing to load the flair model {str(path)!r}: it holds something else "
            "than tensors and the few flair types of a SequenceTagger checkpoint "
            "(FLAIR_SAFE_GLOBALS), and reading that could run code stored in the file "
            f"({_reason(exc)}). Checkpoints of flair < 0.12 pickle whole modules and are "
            "refused too.") from None
    if not isinstance(state, dict):
        raise FlairCheckpointError(f"{str(path)!r} does not hold a flair model's state "
                                   f"(a {type(state).__name__}).")
    return state


# --------------------------------------------------------------------------- state


def _check_embeddings(params: Any, dictionary: type, where: str) -> None:
    """Refuse embeddings that flair would build from anything but the file's data."""
    kind = params.get("__cls__") if isinstance(params, dict) else None
    if kind not in FLAIR_EMBEDDINGS:
        raise FlairCheckpointError(
            f"{where}: embeddings of type {kind!r} are not supported by the safe loader "
            f"(allowed: {', '.join(FLAIR_EMBEDDINGS)}); others load further files or "
            "models named in the file.")
    if kind == "StackedEmbeddings":
        inner = params.get("embeddings")
        if not isinstance(inner, list) or not inner:
            raise FlairCheckpointError(f"{where}: a stack of embeddings without a list.")
        for item in inner:
            _check_embeddings(item, dictionary, where)
        return
    needed = {"CharacterEmbeddings": lambda p: p.get("path_to_char_dict"),
              "OneHotEmbeddings": lambda p: p.get("vocab_dictionary"),
              "FlairEmbeddings": lambda p: (p.get("model_params") or {}).get("dictionary")}
    if kind in needed and not isinstance(needed[kind](params), dictionary):
        raise FlairCheckpointError(f"{where}: the {kind} must hold their dictionary "
                                   "(a path or a name would be loaded from elsewhere).")


def _check_state(state: dict[str, Any], dictionary: type, where: str) -> None:
    if state.get("__cls__", "SequenceTagger") != "SequenceTagger":
        raise FlairCheckpointError(f"{where} holds a flair {state.get('__cls__')!r}, "
                                   "not a SequenceTagger.")
    if not isinstance(state.get("state_dict"), dict) or not isinstance(
            state.get("tag_dictionary"), dictionary):
        raise FlairCheckpointError(f"{where} lacks a SequenceTagger's weights or tags.")
    _check_embeddings(state.get("embeddings"), dictionary, where)
    _drop_lookup_caches(state, dictionary)


@contextlib.contextmanager
def _quiet_flair() -> Iterator[None]:
    logger = logging.getLogger("flair")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def load_flair_tagger(path: str | os.PathLike[str]) -> Any:
    """A flair ``SequenceTagger`` read from ``path`` without unpickling code.

    Hand-written because flair's ``SequenceTagger.load`` uses torch's full unpickler (weights-
    only mode off) and so runs any code a crafted file holds; this loader never does: it
    reads only through torch's weights-only unpickler with an allow-list (see the module).

    Parameters
    ----------
    path : path-like
        A SequenceTagger saved by flair >= 0.12 (``tagger.save(path)``, the trainer's
        ``final-model.pt`` or ``best-model.pt``). A name of flair's model hub is not
        accepted: nothing is downloaded.

    Returns
    -------
    flair.models.SequenceTagger
        The tagger, in evaluation mode.

    Raises
    ------
    ImportError
        When flair is not installed (``pip install 'privaudit[flair]'``).
    FileNotFoundError
        When ``path`` is not a file.
    FlairCheckpointError
        A ``ValueError`` naming the file, when it names a global outside
        :data:`FLAIR_SAFE_GLOBALS`, holds a pickled module or other embeddings than
        :data:`FLAIR_EMBEDDINGS`, or is not a SequenceTagger.
    """
    flair = import_optional("flair", extra="flair", purpose=_PURPOSE)
    import_optional("flair.models", extra="flair", purpose=_PURPOSE)
    torch = import_optional("torch", extra="flair", purpose=_PURPOSE)
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No flair model file at {str(path)!r}.")
    state = _read_state(path, flair, torch)
    where = f"The flair model {str(path)!r}"
    _check_state(state, flair.data.Dictionary, where)
    state.pop("__cls__", None)
    try:
        with _quiet_flair():  # flair logs whole vocabularies at INFO while building
            tagger = flair.models.SequenceTagger._init_model_with_state_dict(state)
    except Exception as exc:
        raise FlairCheckpointError(f"{where} could not be built: {exc}") from exc
    if "model_card" in state:
        tagger.model_card = state["model_card"]
    return tagger.eval()


# --------------------------------------------------------------------------- the adapter


class FlairNER:
    """A spaCy pipeline whose named entities come from a flair tagger.

    Accepted as ``nlp=`` by :func:`~privaudit.synthetic.annotate_texts` and
    :func:`~privaudit.synthetic.text_privacy`: spaCy still splits the tokens and finds the
    nominal mentions (so token counts do not depend on the recogniser), and each document's
    entities are flair's spans (flair's own tokenisation, ``tagger.predict``), set on
    spaCy's tokens that cover them.

    Parameters
    ----------
    tagger : flair.models.SequenceTagger
        The recogniser, e.g. from :func:`load_flair_tagger`.
    nlp : spacy.Language
        The spaCy pipeline for tokens, parts of speech and dependencies; its own entity
        recogniser is not run.
    model_id : str, optional
        An identity of the tagger (the file's SHA-256 with :func:`flair_ner`): the key of
        the annotation cache. Without it nothing is cached.
    """

    def __init__(self, tagger: Any, nlp: Any, *, model_id: str | None = None) -> None:
        if isinstance(nlp, FlairNER):
            nlp = nlp.nlp  # its spaCy pipeline, not its recogniser
        self.tagger, self.nlp, self.model_id = tagger, nlp, model_id
        flair = import_optional("flair", extra="flair", purpose=_PURPOSE)
        base = f"{nlp.meta.get('name', '?')}@{nlp.meta.get('version', '?')}"
        self.meta = {"name": f"{base}+flair-{model_id}" if model_id else None,
                     "version": f"flair {flair.__version__}"}

    def entities(self, texts: Sequence[str], batch_size: int = 64
                 ) -> list[list[tuple[int, int, str]]]:
        """The entities flair finds in each text: ``(start, end, label)`` (characters)."""
        from flair.data import Sentence

        sentences = [Sentence(text) if text.strip() else None for text in texts]
        ready = [s for s in sentences if s is not None and len(s)]
        if ready:
            self.tagger.predict(ready, mini_batch_size=batch_size)
        label = self.tagger.label_type
        return [[] if s is None or not len(s) else
                [(sp.start_position, sp.end_position, sp.get_label(label).value)
                 for sp in s.get_spans(label)] for s in sentences]

    def pipe(self, texts: Sequence[str], batch_size: int = 64) -> Iterator[Any]:
        """The spaCy documents of ``texts``, their entities set from flair's."""
        from spacy.util import filter_spans

        texts = list(texts)
        found = self.entities(texts, batch_size)
        skip = [name for name in ("ner",) if name in self.nlp.pipe_names]
        docs = self.nlp.pipe(texts, batch_size=batch_size, disable=skip)
        for doc, spans in zip(docs, found, strict=True):
            ents = [doc.char_span(a, b, label=lab, alignment_mode="expand")
                    for a, b, lab in spans]
            doc.ents = filter_spans([e for e in ents if e is not None])
            yield doc


def flair_ner(path: str | os.PathLike[str], nlp: Any = None) -> FlairNER:
    """:class:`FlairNER` for the tagger saved at ``path`` (read by :func:`load_flair_tagger`).

    Parameters
    ----------
    path : path-like
        The flair SequenceTagger file.
    nlp : spacy.Language, optional
        The spaCy pipeline for tokens and nominal mentions (default: the packaged English
        one).

    Returns
    -------
    FlairNER
        Keyed for the annotation cache by the file's SHA-256.
    """
    tagger = load_flair_tagger(path)
    if nlp is None:
        from privaudit.synthetic._text_models import load_spacy

        nlp = load_spacy()
    return FlairNER(tagger, nlp, model_id=file_sha256(path)[:32])
