"""Memorisation checks of ``audit_llm(..., checks=[...])``: extraction and canaries (issue 23).

Two jobs on the audit template, each giving one
:class:`~privaudit.results.MemorisationResult` that goes through the shared run (key,
reuse, atomic save):

- ``"extraction"``: the members and the held-out texts are cut into a prefix of
  ``prefix_length`` tokens and the suffix after it; the model continues each prefix
  greedily (:func:`privaudit.llm.extraction_checks`). Per text: k-extractability and the
  longest common token prefix (Carlini et al. 2023), extraction strength and exact
  memorisation (open-unlearning), VerbMem (MUSE); per check the members-vs-held-out
  comparison with intervals.
- ``"canaries"``: secret-sharer canaries (Carlini et al. 2019), repeated 1, 4 and 16
  times by default, are inserted into a fine-tuning set, a model is trained on it through
  the user's training function or the built-in recipe (:class:`FineTuneRecipe`), and
  each canary's exposure is measured; with ``inclusion="random"`` each canary is
  inserted with probability 1/2 and the one-run epsilon lower bound of Steinke, Nasr
  and Jagielski (2023) is read from the canaries' exposures.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privaudit._digest import sha256_hex
from privaudit._validation import (
    CALLABLE,
    NONE,
    ChoiceRule,
    IntRule,
    PredicateRule,
    RealRule,
    TypeRule,
    check_declared,
    param_error,
)
from privaudit.audits._run import AuditRun
from privaudit.audits._template import AuditKind, AuditSettings, Job, RunOptions
from privaudit.llm import EXTRACTION_CHECKS, SecretSpace

__all__ = ["CANARY_CHECK", "MEMORISATION_CHECKS", "CanaryCheck", "FineTuneRecipe",
           "MemorisationAudit", "MemorisationSettings", "fine_tune_causal_lm",
           "memorisation_checks"]

_FUNC = "audit_llm"
#: The check that trains a model with canaries and measures their exposure.
CANARY_CHECK = "exposure"
#: Every memorisation check ``audit_llm(checks=...)`` takes.
MEMORISATION_CHECKS: tuple[str, ...] = (*EXTRACTION_CHECKS, CANARY_CHECK)


def _torch() -> Any:
    from privaudit._optional import import_optional

    return import_optional("torch", extra="llm", purpose="Fine-tuning a language model")


# --- the built-in training recipe -----------------------------------------------------------

def _text_batches(tokenizer: Any, texts: Sequence[str], batch_size: int, max_length: int,
                  generator: Any) -> Any:
    """Shuffled batches of ``texts`` + EOS: ids, mask, labels (-100 on the padding)."""
    torch = _torch()
    order = torch.randperm(len(texts), generator=generator).tolist()
    for start in range(0, len(texts), batch_size):
        chunk = [texts[i] + tokenizer.eos_token for i in order[start:start + batch_size]]
        enc = tokenizer(chunk, return_tensors="pt", padding=True, truncation=True,
                        max_length=max_length)
        labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
        yield enc["input_ids"], enc["attention_mask"], labels


def fine_tune_causal_lm(model: Any, tokenizer: Any, texts: Sequence[str], *,
                        epochs: int = 10, batch_size: int = 16, lr: float = 3e-3,
                        max_length: int = 64, random_state: int = 0, progress: Any = None,
                        sign: float = 1.0, retain: Sequence[str] | None = None,
                        description: str = "Training a language model") -> Any:
    """Train ``model`` in place on ``texts`` (AdamW, next-token loss); return it in eval mode.

    ``sign=-1`` ascends the loss instead (gradient-ascent unlearning); ``retain`` then adds
    the retain texts' ordinary loss to each step (GradDiff). Seeded by ``random_state``
    (the shuffling and torch's global RNG inside, restored after); ``progress`` counts the
    epochs under ``description``.
    """
    from privaudit._progress import as_progress

    torch = _torch()
    generator = torch.Generator().manual_seed(random_state)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    bar = as_progress(progress, func="fine_tune_causal_lm")
    state = torch.random.get_rng_state()
    torch.manual_seed(random_state)
    try:
        with bar.task(description, total=epochs) as step:
            for _ in range(epochs):
                retained = (_text_batches(tokenizer, retain, batch_size, max_length,
                                          generator) if retain else None)
                for ids, mask, labels in _text_batches(tokenizer, texts, batch_size,
                                                       max_length, generator):
                    loss = sign * model(input_ids=ids, attention_mask=mask,
                                        labels=labels).loss
                    r = None if retained is None else next(retained, None)
                    if r is not None:
                        loss = loss + model(input_ids=r[0], attention_mask=r[1],
                                            labels=r[2]).loss
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                step.advance()
    finally:
        torch.random.set_rng_state(state)
    model.zero_grad(set_to_none=True)
    return model.eval()


@dataclass(frozen=True)
class FineTuneRecipe:
    """The built-in training of the canary check: fine-tune a copy of a causal LM.

    ``recipe(texts, *, random_state) -> model``: a deep copy of ``model`` (the audited
    model when given to :class:`CanaryCheck` as None) trained on ``texts`` by
    :func:`fine_tune_causal_lm` (AdamW, next-token loss); ``model`` itself is unchanged.
    """

    model: Any
    tokenizer: Any
    epochs: int = 4
    batch_size: int = 16
    lr: float = 1e-3
    max_length: int = 128

    def __call__(self, texts: Sequence[str], *, random_state: int) -> Any:
        return fine_tune_causal_lm(copy.deepcopy(self.model), self.tokenizer, texts,
                                   epochs=self.epochs, batch_size=self.batch_size,
                                   lr=self.lr, max_length=self.max_length,
                                   random_state=random_state,
                                   description="Fine-tuning with canaries (epochs)")

    def fingerprint(self) -> tuple[Any, ...]:
        """The base model's weights and the hyper-parameters (the run key's part)."""
        from privaudit.targets import module_fingerprint

        return ("FineTuneRecipe", module_fingerprint(self.model), self.epochs,
                self.batch_size, self.lr, self.max_length)


#: The default secret space: 10,000 secrets of four digits (exposure up to 13.3 bits).
_FOUR_DIGITS = SecretSpace.digits(4)


# --- the canary check's settings --------------------------------------------------------------

#: The words that tell the default formats apart. Formats that differ by a number only
#: ("canary 1", "canary 2") are nearly one context to the model: their secrets compete,
#: and none is learnt (measured on the demo's tiny GPT-2: medians 1.5-1.9 bits for 1 to
#: 16 repetitions); distinct words keep each canary's context its own.
_CANARY_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
                 "india", "juliett", "kilo", "lima", "mike", "november", "oscar", "papa",
                 "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey",
                 "xray", "yankee", "zulu")


def _canary_names(n: int) -> list[str]:
    """``n`` distinct names: the words, then pairs of them ("alpha bravo"...)."""
    words = _CANARY_WORDS
    pairs = [f"{a} {b}" for a in words for b in words if a != b]
    names = [*words, *pairs]
    while len(names) < n:  # beyond 676 canaries: numbered pairs
        names += [f"{p} {len(names) + i}" for i, p in enumerate(pairs)]
    return names[:n]


def _formats_ok(value: Any) -> bool:
    return value is None or (isinstance(value, (tuple, list)) and len(value) > 0
                             and all(isinstance(f, str) for f in value))


def _repetitions_ok(value: Any) -> bool:
    return (isinstance(value, (tuple, list)) and len(value) > 0
            and all(isinstance(r, (int, np.integer)) and not isinstance(r, bool) and r >= 1
                    for r in value))


@dataclass(frozen=True)
class CanaryCheck:
    """How the ``"exposure"`` check makes, inserts and trains on its canaries.

    Parameters
    ----------
    train : callable or None
        ``train(texts, *, random_state) -> model``: trains a causal LM that reads the
        audited model's tokenizer on ``texts`` (the fine-tuning set with the canaries'
        copies). None: the built-in :class:`FineTuneRecipe` on a copy of the audited
        model.
    texts : sequence of str, optional
        The fine-tuning set the canaries are inserted into (default: the members, or
        the forget set; a (prompt, answer) pair as its two parts joined).
    formats : sequence of str, optional
        One format per canary, each with one ``{secret}`` slot (Carlini et al. 2019);
        default ``"the secret code of <name> is {secret}"``, ``<name>`` a distinct word
        per canary ("alpha", "bravo"...). Canaries of one format, or of formats that differ
        by a number only, compete in each other's ranks: give distinct formats.
    space : SecretSpace, default=SecretSpace.digits(4)
        Where secrets are drawn (uniformly, distinct).
    repetitions : sequence of int >= 1, default=(1, 4, 16)
        The repetition counts; ``per_repetition`` canaries of each.
    per_repetition : int >= 1, default=1
    inclusion : {"all", "random"}, default="all"
        ``"random"``: each canary inserted with probability 1/2 and the one-run epsilon
        lower bound computed from the exposures (needs at least 2 canaries; dozens for
        a bound above 0).
    delta : float in [0, 1), default=1e-5
        The bound's delta.
    method : {"auto", "exact", "fit"}, default="auto"
        How exposure is computed (:func:`privaudit.llm.exposure`).
    n_samples : int, default=10,000
        Candidates drawn for the distribution fit.
    batch_size : int, default=64
        Candidates per forward pass (not in the run key).
    """

    train: Callable[..., Any] | None = None
    texts: Sequence[str] | None = None
    formats: Sequence[str] | None = None
    space: SecretSpace = _FOUR_DIGITS
    repetitions: Sequence[int] = (1, 4, 16)
    per_repetition: int = 1
    inclusion: str = "all"
    delta: float = 1e-5
    method: str = "auto"
    n_samples: int = 10_000
    batch_size: int = 64

    CONSTRAINTS: ClassVar[dict[str, list[Any]]] = {
        "train": [NONE, CALLABLE],
        "texts": [NONE, PredicateRule(lambda v: _formats_ok(v) and v is not None,
                                      "a non-empty list of strings")],
        "formats": [PredicateRule(_formats_ok, "a non-empty list of strings")],
        "space": [TypeRule((SecretSpace,), "a SecretSpace")],
        "repetitions": [PredicateRule(_repetitions_ok, "a non-empty list of integers >= 1")],
        "per_repetition": [IntRule(low=1)],
        "inclusion": [ChoiceRule(("all", "random"))],
        "delta": [RealRule(0.0, 1.0, closed="left")],
        "method": [ChoiceRule(("auto", "exact", "fit"))],
        "n_samples": [IntRule(low=2)],
        "batch_size": [IntRule(low=1)],
    }

    def check(self) -> None:
        """Every field against its rule, then the formats: one slot each, one per canary."""
        for name, rules in self.CONSTRAINTS.items():
            check_declared(getattr(self, name), rules, param=f"canaries.{name}", func=_FUNC)
        n = self.n_canaries
        if self.formats is not None and len(self.formats) != n:
            raise param_error("canaries.formats", _FUNC, f"{n} formats (one per canary: "
                              f"{len(self.repetitions)} repetition counts x "
                              f"{self.per_repetition})", f"<{len(self.formats)} formats>")
        for fmt in self.canary_formats():
            if not isinstance(fmt, str) or fmt.count("{secret}") != 1:
                raise param_error("canaries.formats", _FUNC, "formats with exactly one "
                                  "'{secret}' slot each", fmt)
        if self.space.size < n:
            raise param_error("canaries.space", _FUNC, f"a space of at least {n} secrets "
                              "(one distinct secret per canary)", f"<{self.space.size}>")
        if self.inclusion == "random" and n < 2:
            raise param_error("canaries.inclusion", _FUNC, "'all' with fewer than 2 "
                              "canaries (a bound compares included and excluded ones)",
                              self.inclusion)

    @property
    def n_canaries(self) -> int:
        """Canaries made: ``per_repetition`` of each repetition count."""
        return len(self.repetitions) * self.per_repetition

    def canary_formats(self) -> list[str]:
        """The format of each canary (given, or one numbered format per canary)."""
        if self.formats is not None:
            return list(self.formats)
        return [f"the secret code of {name} is {{secret}}"
                for name in _canary_names(self.n_canaries)]

    def canary_repetitions(self) -> list[int]:
        """The repetition count of each canary, in order."""
        return [int(r) for r in self.repetitions for _ in range(self.per_repetition)]

    def key(self) -> tuple[Any, ...]:
        """What enters the run key: everything but ``batch_size``; the training's code."""
        train = None if self.train is None else _training_key(self.train)
        texts = None if self.texts is None else sha256_hex(
            "\x1e".join(self.texts).encode("utf-8", "surrogatepass"))
        return (train, texts, self.canary_formats(), repr(self.space),
                self.canary_repetitions(), self.inclusion, float(self.delta), self.method,
                int(self.n_samples))


def _training_key(train: Any) -> Any:
    """What identifies a training function: its fingerprint, or its code and state.

    As the DP-training audit reads one, except that a model the callable holds (a base
    model to fine-tune) is read by its weights' fingerprint.
    """
    from privaudit._digest import state_digest
    from privaudit.audits._dp_training import _train_fingerprint
    from privaudit.targets import module_fingerprint

    try:
        return _train_fingerprint(train)
    except TypeError:
        pass
    state = {}
    for name, value in vars(train).items():
        if name.startswith("_"):
            continue
        try:
            state[name] = (module_fingerprint(value) if hasattr(value, "state_dict")
                           else state_digest(value))
        except TypeError:
            raise param_error("canaries.train", _FUNC, "a training function whose state "
                              "privaudit can digest, or with a fingerprint() method "
                              f"(its attribute {name!r} cannot be read)", train,
                              error=TypeError) from None
    return (_train_fingerprint(type(train)), state_digest(state))


# --- the kind ---------------------------------------------------------------------------------

def memorisation_checks(checks: Any) -> tuple[str, ...] | None:
    """The requested memorisation checks, repeats dropped; an unknown name refused."""
    if checks is None:
        return None
    names = [checks] if isinstance(checks, str) else checks
    if not isinstance(names, Sequence) or not names:
        raise param_error("checks", _FUNC, f"a non-empty list of names among "
                          f"{list(MEMORISATION_CHECKS)}", checks, error=TypeError)
    for name in names:
        if name not in MEMORISATION_CHECKS:
            raise param_error("checks", _FUNC, f"names among {list(MEMORISATION_CHECKS)}",
                              name)
    return tuple(dict.fromkeys(names))


def _checks_ok(value: Any) -> bool:
    return (isinstance(value, tuple) and len(value) > 0
            and all(v in MEMORISATION_CHECKS for v in value))


@dataclass(frozen=True)
class MemorisationSettings(AuditSettings):
    """What the memorisation checks compute, checked before any model runs.

    ``batch_size`` and ``device`` stay out of the run key (a text's greedy continuation
    does not depend on its batch: checked in the extraction tests); the canaries'
    settings enter it through :meth:`CanaryCheck.key` (the training function's code, not
    its identity in memory).
    """

    checks: tuple[str, ...]
    prefix_length: int = 32
    suffix_length: int = 50
    n_bootstrap: int = 1000
    confidence: float = 0.95
    canaries: CanaryCheck | None = None
    batch_size: int = 8
    device: str | None = None

    CONSTRAINTS: ClassVar[dict[str, list[Any]]] = {
        "checks": [PredicateRule(_checks_ok, f"names among {list(MEMORISATION_CHECKS)}")],
        "prefix_length": [IntRule(low=1)],
        "suffix_length": [IntRule(low=1)],
        "n_bootstrap": [IntRule(low=0)],
        "confidence": [RealRule(0.0, 1.0)],
        "canaries": [NONE, TypeRule((CanaryCheck,), "a CanaryCheck")],
        "batch_size": [IntRule(low=1)],
        "device": [NONE, TypeRule((str,), "a str")],
    }
    NOT_IN_KEY: ClassVar[frozenset[str]] = frozenset({"batch_size", "device"})

    def check(self, func: str) -> None:
        """The declared rules, then the canaries' own (named ``canaries.<field>``)."""
        super().check(func)
        self.canary_check.check()

    @property
    def canary_check(self) -> CanaryCheck:
        """The canaries' settings (the defaults when none were given)."""
        return CanaryCheck() if self.canaries is None else self.canaries

    @property
    def extraction(self) -> tuple[str, ...]:
        """The extraction checks asked for, in the order asked."""
        return tuple(c for c in self.checks if c in EXTRACTION_CHECKS)

    def key_value(self, name: str, value: Any) -> Any:
        if name == "canaries":  # only what changes the canaries' numbers
            return repr(self.canary_check.key()) if CANARY_CHECK in self.checks else None
        return super().key_value(name, value)


def _joined(text: Any) -> str:
    """A text, or a (prompt, answer) pair's two parts joined (what the model reads)."""
    return text if isinstance(text, str) else "".join(text)


def _seed(random_state: int, stream: int) -> int:
    """An independent seed per stream of draws (never reordered: saved results use them)."""
    return int(np.random.SeedSequence([random_state, stream]).generate_state(1)[0])


_SECRETS, _INCLUSION, _PLACES, _TRAINING, _EXPOSURE, _BOUND = range(6)


class MemorisationAudit(AuditKind):
    """The memorisation checks of one model: an extraction job and a canary job."""

    kind = "llm"
    func = _FUNC
    Settings = MemorisationSettings
    description = "Memorisation checks"

    def __init__(self, lm: Any, texts: Any, settings: MemorisationSettings,
                 options: RunOptions) -> None:
        super().__init__(settings, options)
        self.lm, self.texts, self.memorisation = lm, texts, settings
        if settings.extraction:
            check_prefixes(lm.tokenizer, texts.texts, settings.prefix_length)

    @property
    def labels(self) -> Any:
        return self.texts.labels

    def target_name(self) -> str:
        return str(self.lm.name)

    def identity(self) -> tuple[Any, ...]:
        return (self.lm.fingerprint(), *self.texts.identity())

    def baseline(self) -> None:
        return None  # extraction compares members with held-out texts itself

    def consistent(self, job: Job) -> Callable[[Any], bool]:
        labels = self.texts.labels

        def same(saved: Any) -> bool:
            return (getattr(saved, "RESULT_TYPE", "") == "memorisation"
                    and saved.check == job.name
                    and (job.name == "canaries" or np.array_equal(saved.labels, labels)))
        return same

    def plan(self) -> list[Job]:
        s = self.memorisation
        jobs = [Job("extraction", key_parts=s.extraction)] if s.extraction else []
        if CANARY_CHECK in s.checks:
            jobs.append(Job("canaries", order=len(jobs)))
        return jobs

    def run_job(self, job: Job, run: AuditRun) -> Any:
        if job.name == "extraction":
            return self._extraction(run)
        return self._canaries(run)

    # ------------------------------------------------------------------ extraction
    def _extraction(self, run: AuditRun) -> Any:
        from privaudit.llm import extraction_checks
        from privaudit.results import MemorisationResult

        s, t, o = self.memorisation, self.texts, self.options
        texts = [_joined(x) for x in t.texts]
        members = [x for x, label in zip(texts, t.labels, strict=True) if label == 1]
        held_out = [x for x, label in zip(texts, t.labels, strict=True) if label == 0]
        run.say(f"{self.lm.name}: greedy continuations of {len(texts)} prefixes "
                f"({s.prefix_length} tokens) against their next {s.suffix_length}")
        # k-extractability always runs: its result carries the decoded texts.
        found = extraction_checks(
            self.lm.model, self.lm.tokenizer, members, held_out,
            checks=("k-extractability", *s.extraction), prefix_length=s.prefix_length,
            suffix_length=s.suffix_length, batch_size=s.batch_size, device=s.device,
            random_state=o.random_state, n_bootstrap=s.n_bootstrap,
            confidence=s.confidence, target=str(self.lm.name), progress=o.progress)
        shown = found["k-extractability"].extra
        order = np.r_[np.flatnonzero(t.labels == 1), np.flatnonzero(t.labels == 0)]
        back = np.argsort(order, kind="stable")  # members first there; the texts' order here
        return MemorisationResult(
            check="extraction", labels=t.labels, record_ids=t.record_ids,
            values={n: np.asarray(found[n].raw_statistic)[back] for n in s.extraction},
            comparisons={n: {k: v for k, v in found[n].extra.items() if k in _COMPARISON}
                         for n in s.extraction},
            prefixes=self._prefixes(texts),
            **{k: [shown[k][i] for i in back] for k in ("continuations", "suffixes")},
            matched_tokens=np.asarray(shown["common_prefix_length"])[back],
            suffix_tokens=np.asarray(shown["suffix_tokens"])[back],
            confidence=s.confidence, attack="extraction", target=str(self.lm.name),
            dataset=o.dataset, parameters={"prefix_length": s.prefix_length,
                                           "suffix_length": s.suffix_length,
                                           "checks": list(s.extraction),
                                           "n_bootstrap": s.n_bootstrap})

    def _prefixes(self, texts: list[str]) -> list[str]:
        """Each text's prefix, decoded (what the model was given)."""
        tok, n = self.lm.tokenizer, self.memorisation.prefix_length
        return [str(tok.decode(list(tok(x)["input_ids"])[:n], skip_special_tokens=True))
                for x in texts]

    # ------------------------------------------------------------------ canaries
    def _canaries(self, run: AuditRun) -> Any:
        from privaudit.llm import canary_exposures, insert_canaries, secret_sharer_canaries

        c, o = self.memorisation.canary_check, self.options
        seed = o.random_state
        canaries = secret_sharer_canaries(c.canary_formats(), c.space, c.canary_repetitions(),
                                          random_state=_seed(seed, _SECRETS))
        included = (np.random.default_rng(_seed(seed, _INCLUSION)).random(len(canaries)) < 0.5
                    if c.inclusion == "random" else np.ones(len(canaries), bool))
        chosen = [k for k, keep in zip(canaries, included, strict=True) if keep]
        inserted = insert_canaries(self._fine_tuning_texts(c), chosen,
                                   random_state=_seed(seed, _PLACES))
        run.say(f"{self.lm.name}: training on {len(inserted.texts)} texts with "
                f"{len(chosen)} canaries ({sum(k.repetitions for k in chosen)} copies)")
        model = self._train(c, inserted.texts, _seed(seed, _TRAINING))
        frame = canary_exposures(model, self.lm.tokenizer, canaries, c.space, method=c.method,
                                 n_samples=c.n_samples, batch_size=c.batch_size,
                                 random_state=_seed(seed, _EXPOSURE))
        return self._canary_result(c, frame, included)

    def _fine_tuning_texts(self, c: CanaryCheck) -> list[str]:
        if c.texts is not None:
            return list(c.texts)
        t = self.texts
        return [_joined(x) for x, label in zip(t.texts, t.labels, strict=True) if label == 1]

    def _train(self, c: CanaryCheck, texts: list[str], seed: int) -> Any:
        train = FineTuneRecipe(self.lm.model, self.lm.tokenizer) if c.train is None \
            else c.train
        model = train(texts, random_state=seed)
        if not callable(getattr(model, "parameters", None)):
            raise param_error("canaries.train", _FUNC, "a training function returning the "
                              "trained causal LM (a torch module)",
                              f"<it returned {type(model).__name__}>", error=TypeError)
        return model

    def _canary_result(self, c: CanaryCheck, frame: Any, included: np.ndarray) -> Any:
        from privaudit.metrics import canary_epsilon_lower_bound
        from privaudit.results import MemorisationResult

        s, o = self.memorisation, self.options
        random = c.inclusion == "random"
        rows = [{"format": r.format, "secret": r.secret, "repetitions": int(r.repetitions),
                 "exposure": float(r.exposure), "rank": float(r.rank),
                 "log_perplexity": float(r.log_perplexity), "method": str(r.method),
                 "space_size": int(r.space_size),
                 "included": bool(keep) if random else None, "score": float(r.exposure)}
                for r, keep in zip(frame.itertuples(index=False), included, strict=True)]
        bound = None
        if random:
            scores = frame["exposure"].to_numpy(dtype=np.float64)
            bound = canary_epsilon_lower_bound(
                scores[included], scores[~included], delta=c.delta, confidence=s.confidence,
                random_state=_seed(o.random_state, _BOUND))
        return MemorisationResult(
            check="canaries", canaries=rows, epsilon=bound,
            delta=c.delta if random else None, confidence=s.confidence, attack="canaries",
            target=str(self.lm.name), dataset=o.dataset,
            parameters={"space": repr(c.space), "space_size": int(c.space.size),
                        "repetitions": [int(r) for r in c.repetitions],
                        "per_repetition": c.per_repetition, "inclusion": c.inclusion,
                        "method": c.method, "recipe": "built-in fine-tuning"
                        if c.train is None else "the user's training function"})


#: The comparison's keys in an extraction check's ``extra``.
_COMPARISON = ("member_mean", "held_out_mean", "difference", "auc", "interval", "confidence")


def check_prefixes(tokenizer: Any, texts: Sequence[Any], prefix_length: int) -> None:
    """Every text longer than the prefix (a suffix left to extract), before any model runs."""
    for i, text in enumerate(texts):
        n = len(tokenizer(_joined(text))["input_ids"])
        if n <= prefix_length:
            raise param_error(
                "prefix_length", _FUNC, f"shorter than every text, leaving a suffix to "
                f"extract (text {i} has {n} tokens; give a smaller prefix_length or "
                "longer texts)", prefix_length)
