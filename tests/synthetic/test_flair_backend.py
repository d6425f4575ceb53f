"""The flair NER backend of the text checks, and its safe model loader.

flair installs a torch of its own, so the end-to-end test runs in ``.venv-flair`` (``make
.venv-flair/.installed TORCH_SPEC=torch==2.13.0``: torch, ``flair==0.15.1`` and privaudit's
``text`` extra) through a subprocess, and is skipped when that environment is missing. It
trains a tiny tagger offline (one-hot and character embeddings), saves it with flair,
reads it with privaudit's loader and checks the entities against flair's own predictions;
crafted files must be refused without their payload running. The checks here without
flair (a missing flair names the extra; the pickle re-encoder feeding torch's
``weights_only`` unpickler) run everywhere.
"""

import io
import json
import os
import pickle
import pickletools
import subprocess
import sys
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privaudit.synthetic import annotate_texts, text_privacy
from privaudit.synthetic._flair import _Protocol2, _rewrite_checkpoint

ROOT = Path(__file__).resolve().parents[2]
PYTHON = Path(os.environ.get("PRIVAUDIT_FLAIR_PYTHON", ROOT / ".venv-flair" / "bin" / "python"))
HINT = ("python3 -m venv .venv-flair && .venv-flair/bin/pip install torch==2.13.0 && "
        ".venv-flair/bin/pip install flair==0.15.1 && .venv-flair/bin/pip install -e '.[text]'")


class Payload:
    """Unpickling this object writes the marker file (a __reduce__ payload)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.write_text, (self.marker, "ran"))


# --------------------------------------------------------------------------- without flair
def test_a_missing_flair_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "flair", None)  # `import flair` now fails as if absent
    model = tmp_path / "tagger.pt"
    model.write_bytes(b"not read")
    with pytest.raises(ImportError, match=r"flair NER backend needs flair: "
                                          r"pip install 'privaudit\[flair\]'"):
        annotate_texts(["Alice lives in Paris."], ner="flair", flair_model=model)
    with pytest.raises(ImportError, match=r"privaudit\[flair\]"):
        text_privacy(["a"], ["b"], ner="flair", flair_model=model, checks=["named_entities"])


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"ner": "stanza"}, ValueError, "'ner' parameter of annotate_texts"),
    ({"flair_model": "tagger.pt"}, ValueError, "'flair_model' parameter .* unless ner='flair'"),
    ({"ner": "flair"}, TypeError, "'flair_model' parameter .* SequenceTagger file"),
])
def test_backend_arguments_are_checked(kwargs, error, match):
    with pytest.raises(error, match=match):
        annotate_texts(["Alice"], **kwargs)


_LEAVES = (st.none() | st.booleans() | st.integers(-2**70, 2**70)
           | st.floats(allow_nan=False) | st.text(max_size=8) | st.binary(max_size=8)
           | st.sampled_from(["torch", "flair.data", "Dictionary", "cpu"]))
_VALUES = st.recursive(_LEAVES, lambda inner: (
    st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    | st.builds(OrderedDict, st.dictionaries(st.text(max_size=3), inner, max_size=3))),
    max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(_VALUES)
def test_the_reencoded_pickle_is_protocol_2_and_equal(value):
    shared = ["repeated", value]
    obj = {"a": shared, "b": shared, "c": OrderedDict(x=value)}  # memo references
    out = _Protocol2().convert(pickle.dumps(obj, protocol=4))
    assert max(op.proto for op, _, _ in pickletools.genops(out)) <= 2
    back = pickle.loads(out)
    assert back == obj and back["a"] is back["b"]


def _short(text: str) -> bytes:
    return b"\x8c" + bytes([len(text)]) + text.encode()  # SHORT_BINUNICODE


@pytest.mark.parametrize("body", [
    b"K\x01K\x02",                                 # two ints as module and name
    _short("builtins") + _short("exec\nc\nos\nsystem"),  # a newline smuggling a GLOBAL
    _short("builtins"),                             # one string only
])
def test_a_stack_global_without_two_names_is_refused(body):
    with pytest.raises(ValueError, match="STACK_GLOBAL"):
        _Protocol2().convert(b"\x80\x04" + body + b"\x93.")


def _rewritten(path: Path) -> io.BytesIO:
    out = io.BytesIO()
    _rewrite_checkpoint(path, out)
    out.seek(0)
    return out


def test_torch_reads_a_rewritten_protocol_4_checkpoint_weights_only(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "state.pt"
    weights = torch.arange(6.0).reshape(2, 3)
    state = {"state_dict": OrderedDict(w=weights, v=weights[0]), "names": ["a", "a", b"\x00"],
             "n": 3, "x": 0.5, "flag": True, "tuple": (1, "a")}
    torch.save(state, path, pickle_protocol=4)
    with pytest.raises(pickle.UnpicklingError, match="Unsupported operand 149"), \
            pytest.warns(UserWarning, match="protocol 4"):  # torch cannot read protocol 4
        torch.load(path, weights_only=True)
    back = torch.load(_rewritten(path), weights_only=True)
    assert torch.equal(back["state_dict"]["w"], weights)
    assert {k: v for k, v in back.items() if k != "state_dict"} == {
        k: v for k, v in state.items() if k != "state_dict"}


@pytest.mark.parametrize("protocol", [2, 4])
def test_a_payload_in_a_rewritten_checkpoint_does_not_run(tmp_path, protocol):
    torch = pytest.importorskip("torch")
    marker, path = tmp_path / "PWNED", tmp_path / "evil.pt"
    torch.save({"state_dict": {}, "model_card": Payload(marker)}, path,
               pickle_protocol=protocol)
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        torch.load(_rewritten(path), weights_only=True)
    assert not marker.exists()
    torch.load(path, weights_only=False)  # the payload is live under blind trust
    assert marker.exists()


def test_a_checkpoint_needs_one_pickle(tmp_path):
    path = tmp_path / "two.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a/data.pkl", b"")
        archive.writestr("b/data.pkl", b"")
    with pytest.raises(ValueError, match=r"2 data\.pkl"):
        _rewritten(path)


# --------------------------------------------------------------------------- with flair
SCRIPT = r"""
import json, logging, os, pickle, random, sys
from pathlib import Path

import torch
torch.set_num_threads(1)  # a tiny LSTM: threads only compete with the other test worker
import flair
from flair.data import Corpus, Dictionary, Sentence
from flair.embeddings import (CharacterEmbeddings, FlairEmbeddings, HashEmbeddings,
                              OneHotEmbeddings, StackedEmbeddings, WordEmbeddings)
from flair.models import LanguageModel, SequenceTagger
from flair.trainers import ModelTrainer

from privaudit.synthetic import annotate_texts, text_privacy
from privaudit.synthetic._flair import FlairNER, load_flair_tagger
from privaudit.synthetic._text_models import load_spacy
from privaudit.synthetic._text_privacy import _keep_entity

logging.getLogger("flair").setLevel(logging.ERROR)
work = Path(sys.argv[1])
out = {}

# A tiny tagger, trained offline on sentences written here (no embedding is downloaded);
# 8 epochs tag 13 entities of the texts below (the test needs 4): 20 cost 2.5 s more.
PER = ["Alice Martin", "Bob", "Carla", "David Smith", "Emma", "Frank Jones", "Grace"]
LOC = ["Paris", "London", "Berlin", "New York", "Madrid", "Rome"]
TEMPLATES = ["{p} lives in {l} .", "{p} moved to {l} last year .", "Yesterday {p} visited {l} .",
             "In {l} , {p} met a friend .", "{p} works near {l} ."]

def sentences(n, seed):
    rng, made = random.Random(seed), []
    for _ in range(n):
        p, l = rng.choice(PER), rng.choice(LOC)
        words = rng.choice(TEMPLATES).format(p=p, l=l).split()
        s = Sentence(words)
        for name, tag in ((p, "PER"), (l, "LOC")):
            k = len(name.split())
            i = next(i for i in range(len(words)) if words[i:i + k] == name.split())
            s[i:i + k].add_label("ner", tag)
        made.append(s)
    return made

flair.set_seed(0)
corpus = Corpus(train=sentences(40, 0), dev=sentences(8, 1), test=sentences(8, 2),
                sample_missing_splits=False)
chars = Dictionary()
for c in sorted({c for s in corpus.train for t in s for c in t.text}):
    chars.add_item(c)
# Characters first: flair 0.15 saves no name for one-hot embeddings, so a stack's "0-one-hot"
# comes back as "one-hot" and, sorted by name, after "1-Char" (flair's own loader too).
embeddings = StackedEmbeddings([
    CharacterEmbeddings(path_to_char_dict=chars, char_embedding_dim=8, hidden_size_char=8),
    OneHotEmbeddings.from_corpus(corpus, min_freq=1, embedding_length=16)])
tagger = SequenceTagger(hidden_size=16, embeddings=embeddings, tag_type="ner",
                        tag_dictionary=corpus.make_label_dictionary("ner"))
ModelTrainer(tagger, corpus).train(work / "run", max_epochs=8, mini_batch_size=8,
                                   learning_rate=0.1, save_final_model=False,
                                   create_file_logs=False, create_loss_file=False)
model = work / "tagger.pt"
tagger.save(model)  # the trainer's model card included

ours = load_flair_tagger(model)
theirs = SequenceTagger.load(model)  # flair's own loader: this file is ours
a, b = ours.state_dict(), theirs.state_dict()
out["same_weights"] = a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
out["model_card_kept"] = ours.model_card["flair_version"] == flair.__version__

# The entities privaudit finds are flair's own predictions (the tagger as trained, and as
# flair's loader reads it).
texts = ["Alice Martin lives in Paris.", "  Yesterday Grace visited Rome and Berlin.", "",
         "Frank Jones moved to New York last year.", "Nobody went anywhere today.",
         "In Madrid, Carla met a friend. Bob works near London."]

def predicted(model):
    own = [Sentence(t) for t in texts]
    model.predict([s for s in own if len(s)], mini_batch_size=64)
    return [[[sp.text.strip().lower(), sp.tag] for sp in s.get_spans("ner")
             if _keep_entity(sp.text)] for s in own]

out["flair_entities"], out["flair_loaded_entities"] = predicted(tagger), predicted(theirs)
flair_ann = annotate_texts(texts, ner="flair", flair_model=model)
spacy_ann = annotate_texts(texts)
out["privaudit_entities"] = [a["entities"] for a in flair_ann]
out["same_tokens_and_nominals"] = ([(a["tokens"], a["nominals"]) for a in flair_ann]
                                   == [(a["tokens"], a["nominals"]) for a in spacy_ann])

# Cached under the file's digest; an adapter without an identity is not cached.
cache = work / "cache"
first = annotate_texts(texts, ner="flair", flair_model=model, cache_dir=cache)
out["cache_files"] = len(list(cache.glob("*.json")))
out["cached_equal"] = annotate_texts(texts, ner="flair", flair_model=model,
                                     cache_dir=cache) == first == flair_ann
adapter = FlairNER(ours, load_spacy())
out["adapter_equal"] = annotate_texts(texts, nlp=adapter, cache_dir=work / "nocache") == flair_ann
out["adapter_cache_files"] = len(list(work.glob("nocache/*")))

report = text_privacy(texts[:3], texts[3:], ner="flair", flair_model=model,
                      checks=["named_entities"])
out["text_privacy_total"] = report["named_entities"]["synthetic"]["total_entities"]
out["expected_total"] = sum(len(a["entities"]) for a in flair_ann[:3])

# Every accepted embedding class round-trips (an untrained tagger: the weights are random).
words = Dictionary()
for w in "Alice lives in Paris .".split():
    words.add_item(w)
stack = StackedEmbeddings([
    OneHotEmbeddings(words, embedding_length=4), CharacterEmbeddings(chars, 4, 4),
    HashEmbeddings(50, 4),
    WordEmbeddings(None, vocab={"alice": 0, "paris": 1}, embedding_length=6, name="words"),
    FlairEmbeddings(LanguageModel(chars, True, hidden_size=8, nlayers=1, embedding_size=4))])
untrained = SequenceTagger(hidden_size=8, embeddings=stack, tag_type="ner",
                           tag_dictionary=corpus.make_label_dictionary("ner"))
untrained.save(work / "all.pt")
mine, flairs = load_flair_tagger(work / "all.pt"), SequenceTagger.load(work / "all.pt")
agree = []
for text in ["Alice lives in Paris .", "Zoë wrote ünknown wörds ☃"]:
    s1, s2 = Sentence(text), Sentence(text)
    mine.embeddings.embed(s1)
    flairs.embeddings.embed(s2)
    e1 = torch.stack([t.get_embedding() for t in s1])
    e2 = torch.stack([t.get_embedding() for t in s2])
    mine.predict(s1)
    flairs.predict(s2)
    agree.append(torch.allclose(e1, e2) and [(x.text, x.tag) for x in s1.get_spans("ner")]
                 == [(x.text, x.tag) for x in s2.get_spans("ner")])
out["all_embeddings_agree"] = agree

# Each allowed global is needed by one of the two files (and nothing else is allowed).
import privaudit.synthetic._flair as loader
allowed, needed = loader.FLAIR_SAFE_GLOBALS, {}
for entry in allowed:
    loader.FLAIR_SAFE_GLOBALS = tuple(x for x in allowed if x != entry)
    refused = []
    for name in ("tagger.pt", "all.pt"):
        try:
            load_flair_tagger(work / name)
        except Exception as exc:
            refused.append(f"GLOBAL {entry.removeprefix('builtins.')})" in str(exc))
    needed[entry] = any(refused)
loader.FLAIR_SAFE_GLOBALS = allowed
out["each_global_needed"] = needed

# Crafted files: refused by privaudit (no marker), the payload live under flair's loader.
class Payload:
    def __init__(self, marker):
        self.marker = marker
    def __reduce__(self):
        return (Path.write_text, (self.marker, "ran"))

def attempt(name, state=None, raw=None, protocol=4, flair_too=True):
    marker, path = work / f"PWNED-{name}", work / f"{name}.pt"
    if raw is not None:
        path.write_bytes(raw)
    else:
        torch.save(state, path, pickle_protocol=protocol)
    try:
        load_flair_tagger(path)
        error = None
    except Exception as exc:
        error = [type(exc).__name__, str(exc)]
    result = {"error": error, "ran_under_privaudit": marker.exists()}
    if flair_too:
        try:
            SequenceTagger.load(path)
        except Exception:
            pass
        result["ran_under_flair"] = marker.exists()
    return result

clean = torch.load(model, weights_only=False)  # our own file
attacks = {}
for protocol in (2, 4):
    attacks[f"card-{protocol}"] = attempt(
        f"card-{protocol}", {**clean, "model_card": Payload(work / f"PWNED-card-{protocol}")},
        protocol=protocol)
tags = pickle.loads(pickle.dumps(clean["tag_dictionary"]))
tags.idx2item = [Payload(work / "PWNED-tags")]
attacks["tags"] = attempt("tags", {**clean, "tag_dictionary": tags})
evil_dict = work / "chars.pkl"
evil_dict.write_bytes(pickle.dumps(Payload(work / "PWNED-chardict")))
by_path = pickle.loads(pickle.dumps(clean))
by_path["embeddings"]["embeddings"][0]["path_to_char_dict"] = str(evil_dict)
attacks["chardict"] = attempt("chardict", by_path)
fasttext = {**clean, "embeddings": {"__cls__": "FastTextEmbeddings", "embeddings": str(evil_dict)}}
attacks["fasttext"] = attempt("fasttext", fasttext, flair_too=False)
attacks["plain-pickle"] = attempt("plain-pickle",
                                  raw=pickle.dumps(Payload(work / "PWNED-plain-pickle")))
out["attacks"] = attacks
try:
    annotate_texts(["x"], ner="flair", flair_model=work / "missing.pt")
except FileNotFoundError as exc:
    out["missing"] = str(exc)
print(json.dumps(out))
"""


@pytest.mark.slow
def test_flair_tagger_in_the_flair_environment(tmp_path):
    if not PYTHON.exists():
        pytest.skip(f"flair's environment is missing ({PYTHON}; flair brings its own torch): "
                    + HINT)
    done = subprocess.run([str(PYTHON), "-c", SCRIPT, str(tmp_path)], capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["same_weights"] and out["model_card_kept"]
    assert out["privaudit_entities"] == out["flair_entities"] == out["flair_loaded_entities"]
    assert sum(map(len, out["flair_entities"])) >= 4, out["flair_entities"]
    assert out["flair_entities"][2] == []  # the empty text
    assert out["same_tokens_and_nominals"]
    assert out["cache_files"] == 1 and out["cached_equal"]
    assert out["adapter_equal"] and out["adapter_cache_files"] == 0
    assert out["text_privacy_total"] == out["expected_total"]
    assert out["all_embeddings_agree"] == [True, True]
    assert out["each_global_needed"] == {
        "flair.data.Dictionary": True, "torch.torch_version.TorchVersion": True,
        "collections.defaultdict": True, "builtins.int": True}
    for name, attack in out["attacks"].items():
        assert attack["error"] is not None, name
        kind, message = attack["error"]
        assert kind == "FlairCheckpointError" and f"{name}.pt" in message, (name, message)
        assert not attack["ran_under_privaudit"], name
        assert attack.get("ran_under_flair", True), name  # the payload is live
    assert "Path.write_text" in out["attacks"]["card-4"]["error"][1]
    assert "must hold their dictionary" in out["attacks"]["chardict"]["error"][1]
    assert "'FastTextEmbeddings' are not supported" in out["attacks"]["fasttext"]["error"][1]
    assert "missing.pt" in out["missing"]
