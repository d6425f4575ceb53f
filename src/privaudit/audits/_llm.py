"""``audit_llm``: membership inference and unlearning evaluation of a causal language model.

On the audit template (:mod:`privaudit.audits._template`): one :class:`LLMAudit` per scored
model (the target, each ``compare=`` model, the ``retrained=`` model) and one
:class:`BlindBaselineAudit` for the texts alone, each driven through the shared run key,
reuse and finish. Every statistic of one model comes from one scoring pass
(:func:`privaudit.llm.score_texts`), so a model's statistics are jobs that share their
work (a :class:`~privaudit.audits._template.SharedPassKind`): the pass is skipped entirely when
the store already holds every result of that model under the same run key, and scores
only the missing statistics otherwise.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

import numpy as np
from numpy.typing import NDArray

from privaudit._digest import sha256_hex
from privaudit._validation import (
    BOOL,
    MAPPING,
    NAMES,
    NONE,
    STR,
    ChoiceRule,
    IntRule,
    PredicateRule,
    RealRule,
    canonical_names,
    param_error,
)
from privaudit.audits._baselines import Baseline
from privaudit.audits._llm_checks import (
    BlindBaselineCheck,
    check_red_flag_inputs,
    privleak,
    red_flags,
)
from privaudit.audits._llm_memorisation import (
    CanaryCheck,
    MemorisationAudit,
    MemorisationSettings,
    memorisation_checks,
)
from privaudit.audits._run import AuditRun, Enricher
from privaudit.audits._template import (
    AuditKind,
    AuditSettings,
    Job,
    RunOptions,
    SharedPassKind,
    drive,
)
from privaudit.exceptions import DegenerateInputWarning
from privaudit.llm import COMPAT_REVISIONS as COMPAT_MODES
from privaudit.results import AttackResult, Finding, SliceSummary

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from privaudit._progress import Progress
    from privaudit.report import AuditReport
    from privaudit.targets import CausalLMTarget
    from privaudit.training import Executor

__all__ = ["DEFAULT_LLM_STATISTICS", "LLM_STATISTICS", "LLM_STATISTIC_REGISTRY",
           "BlindBaselineAudit", "LLMAudit", "LLMSettings", "LLMStatistic",
           "audit_llm", "guide_output"]

_FUNC = "audit_llm"

#: One audited text: a string, or a (prompt, answer) pair whose answer alone is scored.
Text: TypeAlias = "str | tuple[str, str]"
#: Token frequencies of a reference corpus: by token id, or one per id.
TokenFrequencies: TypeAlias = "Mapping[int, float] | Sequence[float] | NDArray[np.float64]"
#: Where progress goes: nowhere, a callable taking each message, or a Progress.
ProgressLike: TypeAlias = "Progress | Callable[[str], None] | None"


@dataclass(frozen=True)
class LLMStatistic:
    """One statistic of the LLM audit, as the kind's registry declares it.

    Attributes
    ----------
    name : str
        Its name in the one vocabulary (kebab-case): the results' ``attack``, and the
        name :func:`privaudit.llm.score_texts` computes it by.
    needs : str, optional
        The :func:`audit_llm` parameter that gives its input (refused without it).
    default : bool
        Computed when ``attacks`` is not given (and its input is).
    """

    name: str
    needs: str | None = None
    default: bool = True


#: The LLM audit's registry, in the order results are returned. References: LOSS (Yeom
#: et al. 2018), Min-K% (Shi et al. 2024), Min-K%++ (Zhang et al. 2024), zlib and the
#: reference model's (Carlini et al. 2021), GradNorm (open-unlearning), DC-PDD (Zhang et
#: al. 2024), ReCaLL (Xie et al. 2024).
LLM_STATISTIC_REGISTRY: dict[str, LLMStatistic] = {s.name: s for s in (
    LLMStatistic("loss"),
    LLMStatistic("min-k"),
    LLMStatistic("min-k-plus-plus"),
    LLMStatistic("zlib"),
    LLMStatistic("reference", needs="reference_model"),
    LLMStatistic("gradnorm", default=False),
    LLMStatistic("dc-pdd", needs="token_frequencies"),
    LLMStatistic("recall", needs="recall_prefix"),
)}

#: Every statistic :func:`audit_llm` computes ("higher = less likely member").
LLM_STATISTICS: tuple[str, ...] = tuple(LLM_STATISTIC_REGISTRY)

#: Computed when ``attacks`` is not given (each needs only the target's forward pass).
DEFAULT_LLM_STATISTICS: tuple[str, ...] = tuple(
    s.name for s in LLM_STATISTIC_REGISTRY.values() if s.default and s.needs is None)


def _known_statistics(names: object) -> bool:
    # A tuple: _attack_names made one of every sequence of names it was given.
    return (isinstance(names, tuple) and len(names) > 0
            and all(isinstance(n, str) and n in LLM_STATISTIC_REGISTRY for n in names))


def _p_ok(value: object) -> bool:
    return not isinstance(value, (bool, np.bool_)) and value in (1, 2, math.inf, "inf")


@dataclass(frozen=True)
class LLMSettings(AuditSettings):
    """What an LLM audit computes, checked before any model is read.

    The statistics' settings (``k``, ``p``, ``max_length``, ``compat``,
    ``recall_prefix``) enter the run key. ``NOT_IN_KEY``: ``attacks`` (each statistic's
    result has its own key), ``batch_size`` (a text's statistics do not depend on its
    batch: checked against a one-text-at-a-time reference in the tests),
    ``device`` and ``devices`` (where the model runs; ``dtype``, which changes the
    numbers, is in the key),
    ``blind_baseline`` (its own run), ``subgroups`` and the red-flag inputs
    (``forget_accuracy``, ``retain_accuracy``, ``red_flag_thresholds``: enrichers, redone
    on results reused from the store, so changing them never rescores a model).
    """

    attacks: tuple[str, ...] | None = None
    k: float = 0.2
    p: float | str = 2
    batch_size: int = 8
    max_length: int = 512
    compat: str | None = None
    recall_prefix: str | tuple[str, ...] | None = None
    device: str | None = None
    dtype: str | None = None
    devices: str | tuple[str, ...] | None = None
    stride: int | None = None
    window: int | None = None
    chat_template: bool = False
    system_prompt: str | None = None
    blind_baseline: bool = True
    subgroups: bool = True
    forget_accuracy: float | None = None
    retain_accuracy: float | None = None
    red_flag_thresholds: Mapping[str, float] | None = None

    CONSTRAINTS: ClassVar[Mapping[str, Sequence[Any]]] = {
        "attacks": [NONE, PredicateRule(_known_statistics,
                                        f"a non-empty list of names among {list(LLM_STATISTICS)}")],
        "k": [RealRule(0.0, 1.0, closed="right")],
        "p": [PredicateRule(_p_ok, "1, 2 or inf")],
        "batch_size": [IntRule(low=1)],
        "max_length": [IntRule(low=1)],
        "compat": [NONE, ChoiceRule(tuple(COMPAT_MODES))],
        "recall_prefix": [NONE, STR, NAMES],
        "device": [NONE, STR],
        "dtype": [NONE, ChoiceRule(("float32", "bfloat16", "float16"))],
        "devices": [NONE, ChoiceRule(("auto",)), NAMES],
        "stride": [NONE, IntRule(low=1)],
        "window": [NONE, IntRule(low=2)],
        "chat_template": [BOOL],
        "system_prompt": [NONE, STR],
        "blind_baseline": [BOOL],
        "subgroups": [BOOL],
        "forget_accuracy": [NONE, RealRule(0.0, 1.0, closed="both")],
        "retain_accuracy": [NONE, RealRule(0.0, 1.0, closed="both")],
        "red_flag_thresholds": [NONE, MAPPING],
    }
    NOT_IN_KEY: ClassVar[frozenset[str]] = frozenset({
        "attacks", "batch_size", "blind_baseline", "subgroups", "forget_accuracy",
        "retain_accuracy", "red_flag_thresholds", "device", "devices"})

    #: Options added after results were saved with this kind: in the run key only when
    #: given, so a result saved before them is still reused at their defaults.
    KEY_WHEN_GIVEN: ClassVar[Mapping[str, Any]] = {
        "stride": None, "window": None, "chat_template": False, "system_prompt": None}

    def key_items(self) -> list[tuple[str, Any]]:
        return [(name, value) for name, value in super().key_items()
                if name not in self.KEY_WHEN_GIVEN
                or getattr(self, name) != self.KEY_WHEN_GIVEN[name]]

    @property
    def norm(self) -> float:
        """GradNorm's norm as a number (``"inf"`` is :data:`math.inf`)."""
        return math.inf if self.p == "inf" else float(self.p)

    def key_value(self, name: str, value: Any) -> Any:
        if name == "p":  # 2 and 2.0, "inf" and math.inf are the same norm
            return str(self.norm)
        if name == "k":
            return float(value)
        if name == "compat":  # the compatibility mode's revision, not only its name
            from privaudit.llm import compat_key

            return compat_key(value)
        return super().key_value(name, value)


@dataclass(frozen=True)
class BlindSettings(AuditSettings):
    """The blind baseline's settings: none (it reads the texts, their labels and the seed)."""


@dataclass
class _AuditedTexts:
    """The audited texts, their membership labels (1 = member / forget) and ids."""

    texts: list[Text]
    labels: NDArray[np.int8]
    record_ids: NDArray[Any]
    names: tuple[str, str]     # ("members", "non-members") or ("forget", "holdout")

    def digest(self) -> str:
        """One digest of every text, in order, for the run key."""
        joined = "\x1e".join(_text_key(t) for t in self.texts)
        return sha256_hex(joined.encode("utf-8", "surrogatepass"))

    def identity(self) -> tuple[Any, ...]:
        """What identifies the texts in a run key: their digest, labels and ids."""
        return (self.digest(), self.labels, self.record_ids.astype(str))

    def consistent(self, saved: AttackResult) -> bool:
        """Whether a saved result's records are audited texts with their labels."""
        position = {rid: i for i, rid in enumerate(self.record_ids.tolist())}
        rows = [position.get(rid) for rid in saved.record_ids.tolist()]
        return None not in rows and np.array_equal(self.labels[rows], saved.labels)

    def scored(self) -> list[str]:
        """The scored part of each text: itself, or a pair's answer."""
        return [t if isinstance(t, str) else t[1] for t in self.texts]


@dataclass(frozen=True)
class _Corpus:
    """What every model of one LLM audit is scored against, beside the settings."""

    texts: _AuditedTexts
    reference: CausalLMTarget | None
    token_frequencies: TokenFrequencies | None

    def identity(self) -> tuple[Any, ...]:
        """The texts', the reference model's and the frequencies' identities."""
        frequencies = self.token_frequencies
        return (*self.texts.identity(),
                None if self.reference is None else self.reference.fingerprint(),
                None if frequencies is None else _frequency_digest(frequencies))


# --- the template's extension: jobs that share one pass of work -------------------------

# --- the kinds --------------------------------------------------------------------------

class LLMAudit(SharedPassKind):
    """One scored model of an LLM audit: one result per statistic, from one scoring pass.

    The target carries the blind baseline's check (:meth:`compare_with`), the subgroups
    and the unlearning findings; a compared model carries none of them.
    """

    kind = "llm"
    func = _FUNC
    Settings = LLMSettings
    description = "Statistics"

    def __init__(self, lm: CausalLMTarget, corpus: _Corpus, settings: LLMSettings,
                 options: RunOptions, *, enrichers: Sequence[Enricher] = ()) -> None:
        super().__init__(settings, options)
        self.lm, self.corpus, self.llm_settings = lm, corpus, settings
        self.statistics = planned_statistics(settings.attacks, _given(settings, corpus))
        self._enrichers = list(enrichers)
        self._baseline: Baseline | None = None

    def compare_with(self, blind: AttackResult | None) -> None:
        """Check every statistic against the blind baseline's result (None: no check)."""
        self._baseline = None if blind is None else BlindBaselineCheck(blind)

    @property
    def labels(self) -> NDArray[np.int8]:
        return self.corpus.texts.labels

    def target_name(self) -> str:
        return str(self.lm.name)

    def identity(self) -> tuple[Any, ...]:
        return (self.lm.fingerprint(), *self.corpus.identity())

    def baseline(self) -> Baseline | None:
        return self._baseline

    def enrichers(self) -> list[Enricher]:
        return list(self._enrichers)

    def consistent(self, job: Job) -> Callable[[AttackResult], bool]:
        # A statistic undefined on some texts leaves them out: a subset of the records.
        return self.corpus.texts.consistent

    def plan(self) -> list[Job]:
        from privaudit.llm import statistic_key

        # A revised statistic (ReCaLL now scores the first token after the prefix) enters
        # its result's key, so a result saved before the revision is recomputed; the others
        # keep their keys and are reused.
        return [Job(name, key_parts=() if statistic_key(name) == name else (statistic_key(name),),
                    order=order) for order, name in enumerate(self.statistics)]

    def run_jobs(self, jobs: list[Job], run: AuditRun) -> dict[str, AttackResult]:
        texts = self.corpus.texts.texts
        names = [j.name for j in jobs]
        run.say(f"{self.lm.name}: scoring {len(texts)} texts ({', '.join(names)})")
        frame = self._score_texts(names)
        self.lm.count_queries(len(texts))
        return {n: self._result(n, frame[n].to_numpy()) for n in names}

    def _score_texts(self, names: Sequence[str]) -> pd.DataFrame:
        from privaudit.llm import score_texts

        s, c = self.llm_settings, self.corpus
        return score_texts(
            self.lm.model, self.lm.tokenizer, c.texts.texts,
            attacks=tuple(names), k=float(s.k),
            p=s.norm, reference_model=None if c.reference is None else c.reference.model,
            token_frequencies=c.token_frequencies, recall_prefix=s.recall_prefix,
            batch_size=s.batch_size, max_length=s.max_length, compat=s.compat,
            device=s.device, dtype=s.dtype, stride=s.stride, window=s.window,
            chat_template=s.chat_template, system_prompt=s.system_prompt,
            progress=self.options.progress, **self._parallel())

    def _parallel(self) -> dict[str, Any]:
        """How :func:`~privaudit.llm.score_texts` shards: in this process unless asked."""
        o = self.options
        if self.llm_settings.devices is not None:  # one worker per device, local or Ray
            return {"devices": self.llm_settings.devices, "cache_dir": o.cache_dir,
                    **({"executor": "ray"} if o.executor == "ray" else {})}
        if o.executor == "local" and o.n_jobs is None and o.cache_dir is None:
            return {}
        return {"executor": o.resolved_executor, "cache_dir": o.cache_dir}

    def _result(self, statistic: str, values: NDArray[np.float64]) -> AttackResult:
        """The result of ``statistic`` on the texts it is defined for.

        A text with no token to score is left out (with a warning). When no text is left,
        the result has no information: see :meth:`_no_information`.
        """
        values = np.asarray(values, dtype=np.float64)
        keep = np.isfinite(values)
        if not keep.any():
            return self._no_information(statistic, values)
        if not keep.all():
            warnings.warn(
                f"{_FUNC}: {statistic} is undefined for {int((~keep).sum())} of {keep.size} "
                "texts (no token to score: empty, or one token); they are left out of its "
                "result.", DegenerateInputWarning, stacklevel=5)
        return self._attack_result(statistic, -values[keep], values[keep], keep)

    def _no_information(self, statistic: str, values: NDArray[np.float64]) -> AttackResult:
        """Every text unscorable: a result with no information, not a failed audit.

        As the membership attacks do with a statistic undefined on every record
        (``MembershipAttack._package``): every text kept with the score 0 (AUC 0.5),
        ``raw_statistic`` NaN, ``extra["degenerate"]`` saying why, and a warning. Leaving
        the texts out as above would leave no record, and an empty result cannot be
        built. An error before scoring would not fit either: whether a text has a token
        to score depends on its form (a pair's one-token answer is scored after its
        prompt), the tokenizer's special tokens and ``compat`` (MIMIR's DC-PDD scores a
        text's first token), so one statistic may be undefined where another is not, and
        the defined ones, the blind baseline and the compared models would be lost with it.
        """
        warnings.warn(
            f"{_FUNC}: {statistic} is undefined for every one of the {values.size} texts "
            "(no token to score: empty, or one token), so it has no information on this "
            "model: its result keeps every text with the score 0 (AUC 0.5), which says "
            "nothing of what the model memorised; audit longer texts.",
            DegenerateInputWarning, stacklevel=6)
        keep = np.ones(values.size, dtype=bool)
        return self._attack_result(
            statistic, np.zeros(values.size), values, keep,
            extra={"degenerate": f"{statistic} is undefined for every text (no token to "
                                 "score): no information, every score 0"})

    def _attack_result(self, statistic: str, scores: NDArray[np.float64],
                       raw: NDArray[np.float64], keep: NDArray[np.bool_],
                       extra: dict[str, Any] | None = None) -> AttackResult:
        """The kept texts' result of ``statistic``: ``scores`` and ``raw`` are theirs."""
        s, t = self.llm_settings, self.corpus.texts
        return AttackResult(
            labels=t.labels[keep], scores=scores, record_ids=t.record_ids[keep],
            attack=statistic, target=self.lm.name, dataset=self.options.dataset,
            raw_statistic=raw, raw_statistic_name=statistic,
            parameters={"k": float(s.k), "p": str(s.norm), "max_length": s.max_length,
                        "compat": s.compat, "sets": list(t.names)},
            extra=dict(extra or {}))


#: Folds of the blind baseline's out-of-fold classifier (fewer when a side is smaller).
_BLIND_FOLDS = 5


class BlindBaselineAudit(AuditKind):
    """The blind baseline (Das, Zhang and Tramèr 2024): a classifier on the texts alone.

    Filed under the target ``"texts-only"``: it never sees a model, so it is evidence
    about the split of the texts, kept among the report's baselines.
    """

    kind = "llm"
    func = _FUNC
    Settings = BlindSettings
    description = "Blind baseline"

    def __init__(self, texts: _AuditedTexts, options: RunOptions) -> None:
        super().__init__(BlindSettings(), options)
        _check_blind_baseline_sides(texts)
        self.texts = texts

    @property
    def labels(self) -> NDArray[np.int8]:
        return self.texts.labels

    def target_name(self) -> str:
        return "texts-only"

    def identity(self) -> tuple[Any, ...]:
        return self.texts.identity()

    def baseline(self) -> Baseline | None:
        return None

    def plan(self) -> list[Job]:
        return [Job("blind-baseline")]

    def run_job(self, job: Job, run: AuditRun) -> AttackResult:
        from privaudit.llm import BlindBaseline

        run.say("blind baseline: a classifier on the texts alone")
        t = self.texts
        result = BlindBaseline(n_splits=_blind_folds(t.labels),
                               random_state=self.options.random_state).fit_score(
            t.scored(), t.labels)
        result = dataclasses.replace(result, record_ids=t.record_ids, target="texts-only",
                                     dataset=self.options.dataset)
        result.audit.role = "baseline"
        return result

    def report(self, results: list[Any]) -> AuditReport:
        from privaudit.report import AuditReport

        return AuditReport((), baselines=results, kind=self.kind, func=self.func)


def audit_llm(
    target: Any,
    members: Sequence[Text] | None = None,
    non_members: Sequence[Text] | None = None,
    *,
    forget: Sequence[Text] | None = None,
    holdout: Sequence[Text] | None = None,
    tokenizer: Any = None,
    attacks: Sequence[str] | str | None = None,
    k: float = 0.2,
    p: float | str = 2,
    reference_model: Any = None,
    token_frequencies: TokenFrequencies | None = None,
    recall_prefix: str | Sequence[str] | None = None,
    compare: Mapping[str, Any] | None = None,
    retrained: Any = None,
    forget_accuracy: float | None = None,
    retain_accuracy: float | None = None,
    red_flag_thresholds: Mapping[str, float] | None = None,
    blind_baseline: bool = True,
    subgroups: bool = True,
    record_ids: Sequence[Any] | NDArray[Any] | None = None,
    dataset: str = "",
    batch_size: int = 8,
    max_length: int = 512,
    compat: str | None = None,
    device: str | None = None,
    dtype: str | None = None,
    devices: str | Sequence[str] | None = None,
    stride: int | None = None,
    window: int | None = None,
    chat_template: bool = False,
    system_prompt: str | None = None,
    checks: Sequence[str] | str | None = None,
    prefix_length: int = 32,
    suffix_length: int = 50,
    canaries: CanaryCheck | None = None,
    results_dir: str | Path | None = None,
    random_state: int = 0,
    progress: ProgressLike = None,
    executor: str | Executor = "local",
    n_jobs: int | None = None,
    address: str | None = None,
    cache_dir: str | Path | None = None,
) -> AuditReport:
    """Was this text in training? Did unlearning forget it? One result per statistic.

    Parameters
    ----------
    target : CausalLMTarget, (model, tokenizer), model or str
        The audited causal language model: a :class:`privaudit.targets.CausalLMTarget`, a
        ``(model, tokenizer)`` pair, a Hugging Face model with ``tokenizer=``, or a local
        directory (:func:`privaudit.targets.load_causal_lm`: safetensors only, no hub).
    members, non_members : sequence of str or (prompt, answer) pairs
        Texts the model trained on, and texts it did not (from the same distribution: the
        blind baseline checks). For a pair, only the answer's tokens are scored. A text
        in both is refused, unless it has nothing to score (empty, or a pair's empty
        answer): such texts are left out of the results anyway.
    forget, holdout : sequence of str or pairs
        The unlearning form, instead of ``members``/``non_members``: the forget set (label
        1) and held-out texts never trained on (label 0), as open-unlearning's
        ``mia_auc`` pairs them.
    tokenizer : tokenizer, optional
        When ``target`` is a bare model.
    attacks : sequence of str, optional
        Statistics among :data:`LLM_STATISTICS` (kebab-case: ``min-k``,
        ``min-k-plus-plus``, ``dc-pdd``; the old ``min_k``, ``min_k_plus_plus`` and
        ``dc_pdd``, and MIMIR's ``min_k++`` and ``ref``, are accepted with a
        :class:`FutureWarning`). Default:
        :data:`DEFAULT_LLM_STATISTICS`, plus ``reference`` / ``dc-pdd`` / ``recall`` when
        ``reference_model`` / ``token_frequencies`` / ``recall_prefix`` is given.
    k, p : float
        Min-K / Min-K++ fraction of tokens, GradNorm's norm.
    reference_model : model or CausalLMTarget, optional
        For ``reference`` (same tokenizer as the target).
    token_frequencies : mapping or sequence, optional
        Token frequencies of a reference corpus, for ``dc-pdd`` (and the rare / common
        token subgroups); never downloaded.
    recall_prefix : str or list of str, optional
        Known non-member text prefixed for ``recall`` (ReCaLL), or a list of shots (joined
        with nothing between them, as the authors' code does); never fetched.
    compare : mapping of str to model, optional
        Models scored the same way on the same texts and reported side by side, as the
        guide's best practice asks: e.g. ``{"original": model_before_unlearning,
        "random-init": untrained_model}``.
    retrained : model, optional
        A model retrained without the forget set: scored too, and each statistic's MUSE
        PrivLeak (relative to its AUC) is added to the target's results as a finding.
    forget_accuracy, retain_accuracy : float in [0, 1], optional
        The unlearned model's accuracy on the forget and retain sets: enables the guide's
        red-flag rules (:func:`privaudit.audits.red_flags`).
    red_flag_thresholds : mapping, optional
        Overrides of :data:`privaudit.audits.RED_FLAG_THRESHOLDS`.
    blind_baseline : bool, default=True
        Run :class:`privaudit.llm.BlindBaseline` (a classifier on the texts alone,
        cross-fitted) and compare every statistic with it (its result is among the
        report's ``baselines``).
    subgroups : bool, default=True
        Add each result's metrics on long vs short texts and rare vs common tokens
        (``result.audit.slices``).
    record_ids : sequence, optional
        Ids of the texts, members (or forget) first.
    batch_size, max_length, compat, device, dtype
        Passed to :func:`privaudit.llm.score_texts` (``compat``: None for the papers'
        definitions, ``"open-unlearning"`` or ``"mimir"`` for those tools' numbers;
        ``device``: where the models are
        moved, e.g. ``"cuda:0"``; ``dtype``: ``"float32"``, ``"bfloat16"`` or
        ``"float16"``, the models cast in place).
    devices : "auto" or list of str, optional
        Score on several devices, one worker per device (``["cuda:0", "cuda:1"]``;
        ``"auto"``: every visible CUDA device; with ``executor="ray"``, one task per GPU
        of the cluster): :func:`privaudit.llm.score_texts`'s ``devices``. Not with
        ``device`` or ``n_jobs``.
    stride, window : int, optional
        Score texts longer than the window (default ``max_length``) whole, by Hugging
        Face's sliding window: :func:`privaudit.llm.score_texts`'s options. Without
        ``stride`` a longer text is cut at ``max_length`` (with a warning).
    chat_template : bool, default=False
        Render ``(prompt, answer)`` pairs with the tokenizer's chat template and score the
        answer's tokens (open-unlearning's chat models).
    system_prompt : str, optional
        A system turn before each prompt, with ``chat_template``.
    checks : sequence of str, optional
        Memorisation checks of the target (:data:`~privaudit.audits.MEMORISATION_CHECKS`),
        each reported in one :class:`~privaudit.results.MemorisationResult`. The
        extraction checks (``"k-extractability"``, ``"longest-common-prefix"``,
        ``"extraction-strength"``, ``"exact-memorization"``, ``"verbmem"``; Carlini et
        al. 2023, open-unlearning, MUSE) continue each text's first ``prefix_length``
        tokens greedily and compare the continuation with its next ``suffix_length``
        tokens, members against non-members (rates with Wilson intervals, the
        difference's Newcombe interval, each check's AUC as a membership score).
        ``"exposure"`` trains a model with secret-sharer canaries (``canaries``) and
        measures each canary's exposure (Carlini et al. 2019), with the one-run epsilon
        lower bound when the canaries are included at random.
    prefix_length, suffix_length : int, default=32 and 50
        The extraction checks' prefix (every text must be longer) and suffix, in tokens.
    canaries : CanaryCheck, optional
        The ``"exposure"`` check's canaries and training: the user's
        ``train(texts, *, random_state) -> model`` or the built-in fine-tuning of a copy
        of the target (:class:`~privaudit.audits.CanaryCheck`; default: four-digit
        secrets repeated 1, 4 and 16 times in the members).
    random_state, executor, n_jobs, address, cache_dir, results_dir, dataset, progress
        The run options every audit takes (:class:`~privaudit.audits.RunOptions`): the
        seed of the blind baseline's folds and every bootstrap; where the scoring is
        sharded (worker processes or Ray; by default this process) and where finished
        shards are kept; where results are saved and reused by a rerun (the scoring pass
        is then skipped); the dataset's name; where progress goes. The numbers never
        depend on the executor.

    Returns
    -------
    AuditReport
        ``results``: the target's statistics (``attack`` = the statistic,
        ``raw_statistic`` = its value, higher = less likely member; ``scores`` = its
        negation); ``baselines``: the blind baseline (target ``"texts-only"``);
        ``compared``: the ``compare`` and ``retrained`` models' statistics (``target`` =
        their name); with ``checks``, the memorisation results follow the target's
        statistics in ``results``. Iterated as a list, in that order. Texts whose statistic is
        undefined (no scored token) are left out of that result, with a
        :class:`~privaudit.exceptions.DegenerateInputWarning`; when it is undefined on
        every text, its result has no information (every text with the score 0, AUC 0.5,
        ``extra["degenerate"]``), with the same warning.

    References
    ----------
    .. [1] Shi, W., et al. "Detecting Pretraining Data from Large Language Models." ICLR
       2024 (Min-K%).
    .. [2] Zhang, J., et al. "Min-K%++: Improved Baseline for Detecting Pre-Training Data
       from Large Language Models." 2024.
    .. [3] Carlini, N., et al. "Extracting Training Data from Large Language Models."
       USENIX Security 2021 (zlib, reference model).
    .. [4] Das, D., Zhang, J. and Tramèr, F. "Blind Baselines Beat Membership Inference
       Attacks for Foundation Models." 2024.
    .. [5] Shi, W., et al. "MUSE: Machine Unlearning Six-Way Evaluation for Language
       Models." 2024 (PrivLeak).
    """
    options = RunOptions.checked(
        _FUNC, random_state=random_state, executor=executor, n_jobs=n_jobs,
        address=address, cache_dir=cache_dir, results_dir=results_dir, progress=progress,
        dataset=dataset)
    settings = LLMSettings(
        attacks=_attack_names(attacks), k=k, p=p, batch_size=batch_size,
        max_length=max_length, compat=compat,
        recall_prefix=(tuple(recall_prefix) if isinstance(recall_prefix, (list, tuple))
                       else recall_prefix),
        device=device, dtype=dtype,
        devices=tuple(devices) if isinstance(devices, (list, tuple)) else devices,
        stride=stride, window=window, chat_template=chat_template, system_prompt=system_prompt,
        blind_baseline=blind_baseline, subgroups=subgroups,
        forget_accuracy=forget_accuracy, retain_accuracy=retain_accuracy,
        red_flag_thresholds=red_flag_thresholds)
    settings.check(_FUNC)
    texts = _audited_texts(members, non_members, forget, holdout, record_ids,
                           chat_template=settings.chat_template)
    lm = _as_lm(target, tokenizer, "target")
    corpus = _Corpus(texts, None if reference_model is None
                     else _as_lm(reference_model, lm.tokenizer, "reference_model"),
                     token_frequencies)
    findings = _UnlearningFindings(settings, unlearning=texts.names[0] == "forget")
    enrichers: list[Enricher] = [_TextSubgroups(lm, texts, token_frequencies)] \
        if subgroups else []
    main = LLMAudit(lm, corpus, settings, options, enrichers=[*enrichers, findings])
    # Compared models share the target's tokenizer (the statistics read the same tokens).
    others = [LLMAudit(_as_lm(model, lm.tokenizer, f"compare[{name!r}]", name=name),
                       corpus, settings, options)
              for name, model in _other_models(compare, retrained).items()]
    blind = BlindBaselineAudit(texts, options) if blind_baseline else None
    memorisation = _memorisation_audit(lm, texts, options, checks=checks,
                                       prefix_length=prefix_length,
                                       suffix_length=suffix_length, canaries=canaries,
                                       batch_size=batch_size, device=device)
    # Validated above; the work starts here.
    return _run_llm_audit(main, others, blind, findings, memorisation)


def _memorisation_audit(lm: CausalLMTarget, texts: _AuditedTexts, options: RunOptions, *,
                        checks: Any, prefix_length: Any, suffix_length: Any,
                        canaries: Any, batch_size: int, device: str | None
                        ) -> MemorisationAudit | None:
    """The memorisation checks' audit (None without ``checks``), checked before any work."""
    names = memorisation_checks(checks)
    if names is None:
        if canaries is not None:
            raise param_error("canaries", _FUNC, "given only with checks=['exposure']",
                              "<canaries without the exposure check>")
        return None
    settings = MemorisationSettings(checks=names, prefix_length=prefix_length,
                                    suffix_length=suffix_length, canaries=canaries,
                                    batch_size=batch_size, device=device)
    return MemorisationAudit(lm, texts, settings, options)


def _run_llm_audit(main: LLMAudit, others: list[LLMAudit], blind: BlindBaselineAudit | None,
                   findings: _UnlearningFindings,
                   memorisation: MemorisationAudit | None = None) -> AuditReport:
    """Blind baseline, compared models, then the target (its checks read both)."""
    from privaudit.report import AuditReport

    baselines = () if blind is None else drive(blind).baselines
    compared = {other.target_name(): drive(other).results for other in others}
    findings.retrained = {r.attack: r for r in compared.get("retrained", ())}
    main.compare_with(baselines[0] if baselines else None)
    results = drive(main).results
    if memorisation is not None:
        results = (*results, *drive(memorisation).results)
    others_results = [r for rs in compared.values() for r in rs]
    for result in others_results:  # saved with the report, so a rebuild knows them too
        result.audit.role = "compared"
    return AuditReport(results, baselines=baselines, compared=others_results, kind="llm",
                       func=_FUNC, flat=[*results, *baselines, *others_results])


# --- validation -------------------------------------------------------------------------

def _attack_names(attacks: Sequence[str] | str | None) -> tuple[str, ...] | None:
    """The requested statistics, old names replaced (one FutureWarning), repeats dropped."""
    if attacks is None:
        return None
    try:
        names = [attacks] if isinstance(attacks, str) else list(attacks)
        names = canonical_names(names, param="attacks", func=_FUNC, stacklevel=4)
        return tuple(dict.fromkeys(names))
    except TypeError:  # not names: the settings' check refuses it, naming 'attacks'
        return attacks  # type: ignore[return-value]


def _given(settings: LLMSettings, corpus: _Corpus) -> dict[str, object]:
    """The inputs a statistic may need, by the audit_llm parameter that gives each."""
    return {"reference_model": corpus.reference,
            "token_frequencies": corpus.token_frequencies,
            "recall_prefix": settings.recall_prefix}


def planned_statistics(attacks: tuple[str, ...] | None,
                       given: Mapping[str, object]) -> tuple[str, ...]:
    """The statistics to compute, each with its input, from the registry's declarations.

    Default: those marked ``default`` whose input is given.
    """
    if attacks is None:
        return tuple(s.name for s in LLM_STATISTIC_REGISTRY.values()
                     if s.default and (s.needs is None or given[s.needs] is not None))
    for name in attacks:
        needs = LLM_STATISTIC_REGISTRY[name].needs
        if needs is not None and given[needs] is None:
            raise param_error(needs, _FUNC, f"given for the {name!r} statistic", None)
    return attacks


def _audited_texts(members: Sequence[Text] | None, non_members: Sequence[Text] | None,
                   forget: Sequence[Text] | None, holdout: Sequence[Text] | None,
                   record_ids: Sequence[Any] | NDArray[Any] | None, *,
                   chat_template: bool = False) -> _AuditedTexts:
    """The two text sets, from exactly one of the two forms, checked.

    ``chat_template``: pairs are rendered by the chat template, whose end of turn is
    scored even after an empty answer (see :func:`_check_no_shared_text`).
    """
    pair_given = members is not None or non_members is not None
    unlearn_given = forget is not None or holdout is not None
    if pair_given == unlearn_given:
        raise param_error(
            "members", _FUNC, "either members= and non_members=, or forget= and holdout=",
            "both forms" if pair_given else "neither")
    names = ("members", "non-members") if pair_given else ("forget", "holdout")
    one, zero = (members, non_members) if pair_given else (forget, holdout)
    first = _check_texts(one, names[0].replace("-", "_"))
    second = _check_texts(zero, names[1].replace("-", "_"))
    _check_no_shared_text(first, second, names, chat_template=chat_template)
    labels = np.r_[np.ones(len(first), np.int8), np.zeros(len(second), np.int8)]
    n = len(labels)
    ids = np.arange(n, dtype=np.int64) if record_ids is None else np.asarray(record_ids)
    if ids.shape != (n,):
        raise param_error("record_ids", _FUNC, f"one id per text ({n})",
                          f"<{ids.shape[0] if ids.ndim else 0} ids>")
    return _AuditedTexts(first + second, labels, ids, names)


def _check_no_shared_text(first: list[Text], second: list[Text], names: tuple[str, str], *,
                          chat_template: bool = False) -> None:
    """A text on both sides is both trained on and not: the audit would be meaningless.

    A text with nothing of its own to score (:func:`_nothing_to_score`) is not checked:
    it is left out of every statistic's result anyway, with a DegenerateInputWarning,
    as it is when it is on one side only (an empty line in both lists of a corpus).
    """
    keys = {_text_key(t) for t in first if not _nothing_to_score(t, chat_template)}
    both = [t for t in second if _text_key(t) in keys]
    if both:
        raise param_error(names[1].replace("-", "_"), _FUNC, f"texts not in {names[0]}",
                          f"<{len(both)} text(s) also in {names[0]}, e.g. "
                          f"{str(both[0])[:60]!r}>")


def _check_blind_baseline_sides(texts: _AuditedTexts) -> None:
    """The blind baseline cross-fits: each side needs a text in at least two folds."""
    for label, name in zip((1, 0), texts.names, strict=True):
        count = int(np.sum(texts.labels == label))
        if count < 2:
            raise param_error(
                "blind_baseline", _FUNC, f"False when {name} has fewer than 2 texts (the "
                "blind baseline trains on some texts of each side and scores the others)",
                f"True with {count} {name} text")


def _blind_folds(labels: NDArray[np.int8]) -> int:
    """As many folds as the smaller side allows, at most :data:`_BLIND_FOLDS`."""
    fewest = int(min(labels.sum(), len(labels) - labels.sum()))
    return max(2, min(_BLIND_FOLDS, fewest))


def _check_texts(texts: object, param: str) -> list[Text]:
    if texts is None or isinstance(texts, (str, bytes)):
        raise param_error(param, _FUNC, "a sequence of texts", texts, error=TypeError)
    out = list(texts)  # type: ignore[call-overload]
    if not out:
        raise param_error(param, _FUNC, "at least one text", "an empty sequence")
    for i, text in enumerate(out):
        if isinstance(text, str):
            continue
        if (isinstance(text, (tuple, list)) and len(text) == 2
                and all(isinstance(part, str) for part in text)):
            continue
        raise param_error(param, _FUNC, "texts (str) or (prompt, answer) pairs of str",
                          f"<{type(text).__name__} at position {i}>", error=TypeError)
    return out


def _nothing_to_score(text: Text, chat_template: bool) -> bool:
    """Whether ``text`` has no token of its own to score: empty, or a pair's empty answer.

    Such a text gets no scored token (NaN, left out of every result) whatever the
    statistic; a tokenizer that adds an end-of-text token would score that token alone,
    the same on both sides, which is still no text trained on and not. A pair's empty
    answer in a chat template is not such a text: the template's end of turn is scored.
    A one-token text is checked: a pair's prompt or MIMIR's DC-PDD scores its token.
    """
    if isinstance(text, str):
        return text == ""
    return text[1] == "" and not chat_template


def _text_key(text: Text) -> str:
    return text if isinstance(text, str) else "\x1f".join(text)


def _as_lm(model: Any, tokenizer: Any, param: str, name: str = "") -> CausalLMTarget:
    """``model`` as a :class:`~privaudit.targets.CausalLMTarget`."""
    from privaudit.targets import CausalLMTarget, load_causal_lm

    if isinstance(model, CausalLMTarget):
        return model
    if isinstance(model, (str, Path)):
        return load_causal_lm(model, name=name)
    if isinstance(model, tuple) and len(model) == 2:
        model, tokenizer = model
    if tokenizer is None:
        raise param_error(param, _FUNC, "a CausalLMTarget, a (model, tokenizer) pair, a "
                          "local model directory, or a model with tokenizer=",
                          f"<{type(model).__name__} without a tokenizer>", error=TypeError)
    return CausalLMTarget(model, tokenizer, name=name)


def _other_models(compare: Mapping[str, Any] | None, retrained: Any) -> dict[str, Any]:
    if compare is not None and not isinstance(compare, Mapping):
        raise param_error("compare", _FUNC, "a mapping of name to model", compare,
                          error=TypeError)
    others = dict(compare or {})
    if retrained is not None:
        if "retrained" in others:
            raise param_error("compare", _FUNC, "no 'retrained' key when retrained= is given",
                              "both")
        others["retrained"] = retrained
    for name in others:
        if not isinstance(name, str) or not name:
            raise param_error("compare", _FUNC, "non-empty string names", name)
    return others


def _frequency_digest(frequencies: TokenFrequencies) -> str:
    if isinstance(frequencies, Mapping):
        items = sorted((int(k), float(v)) for k, v in frequencies.items())
        return sha256_hex(repr(items).encode())
    return sha256_hex(np.asarray(frequencies, dtype=np.float64).tobytes())


# --- enrichers --------------------------------------------------------------------------

class _TextSubgroups:
    """Adds each result's metrics on long vs short texts and rare vs common tokens.

    The guide's subgroup analysis: the split points are medians over all audited texts,
    members and non-members together, so the slicing uses no membership information.
    Token rarity is the mean log-frequency of a text's tokens, under ``token_frequencies``
    when given, else under the audited texts themselves.
    """

    def __init__(self, lm: CausalLMTarget, texts: _AuditedTexts,
                 token_frequencies: TokenFrequencies | None) -> None:
        self.lm, self.texts, self.frequencies = lm, texts, token_frequencies
        self._groups: dict[str, np.ndarray] | None = None

    def groups(self) -> dict[str, np.ndarray]:
        """``{"length": short/long, "token_rarity": common/rare}`` per audited text."""
        if self._groups is None:
            ids = self.lm.tokenizer(self.texts.scored(), add_special_tokens=False)["input_ids"]
            lengths = np.array([len(t) for t in ids], dtype=np.float64)
            rarity = _mean_log_frequency(ids, self.frequencies)
            self._groups = {"length": _halves(lengths, ("short", "long")),
                            "token_rarity": _halves(-rarity, ("common", "rare"))}
        return self._groups

    def __call__(self, result: AttackResult) -> bool:
        """Slice ``result`` by the groups; return whether it changed."""
        from privaudit.audits._slices import SLICE_SETTINGS
        from privaudit.results import slice_metrics, to_jsonable

        if result.audit.slices is not None:
            return False
        position = {rid: i for i, rid in enumerate(self.texts.record_ids.tolist())}
        rows = [position[rid] for rid in result.record_ids.tolist()]
        groups = {name: values[rows] for name, values in self.groups().items()}
        settings = {k: SLICE_SETTINGS[k] for k in ("fprs", "n_bootstrap", "confidence",
                                                   "min_slice_size")}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateInputWarning)
            frame = slice_metrics(result, groups=groups, **settings, random_state=0)
        result.audit.slices = SliceSummary(
            rows=to_jsonable(frame.to_dict("records"), where="slices"),
            settings=to_jsonable({**settings, "fprs": list(settings["fprs"]),
                                  "groups": sorted(groups)}, where="slice_settings"))
        return True


def _halves(values: np.ndarray, names: tuple[str, str]) -> np.ndarray:
    """``names[1]`` above the median of ``values``, ``names[0]`` at or below it."""
    return np.where(values > np.median(values), names[1], names[0]).astype(object)


def _mean_log_frequency(ids: list[list[int]], frequencies: TokenFrequencies | None
                        ) -> NDArray[np.float64]:
    if frequencies is None:
        flat = np.concatenate([np.asarray(t, dtype=np.int64) for t in ids] or [[]])
        counts = np.bincount(flat) if flat.size else np.zeros(1)
        table = counts / max(counts.sum(), 1)
    elif isinstance(frequencies, Mapping):
        size = max(int(k) for k in frequencies) + 1 if frequencies else 1
        table = np.zeros(size)
        table[[int(k) for k in frequencies]] = [float(v) for v in frequencies.values()]
    else:
        table = np.asarray(frequencies, dtype=np.float64)
    floor = np.min(table[table > 0]) / 2 if np.any(table > 0) else 1.0
    out = np.empty(len(ids))
    for i, tokens in enumerate(ids):
        tokens = np.asarray(tokens, dtype=np.int64)
        seen = table[np.clip(tokens, 0, table.size - 1)] if tokens.size else np.array([floor])
        out[i] = np.mean(np.log(np.maximum(seen, floor)))
    return out


class _UnlearningFindings:
    """Adds MUSE's PrivLeak and the guide's red flags to each of the target's results.

    Recomputed on every run (also on results reused from the store), since the retrained
    model and the accuracies are not part of the run key: the scoring pass is not redone
    when only they change.
    """

    codes = ("privleak", "red-flag:", "over-unlearning")

    def __init__(self, settings: LLMSettings, *, unlearning: bool) -> None:
        self.forget, self.retain = settings.forget_accuracy, settings.retain_accuracy
        if not unlearning and (self.forget is not None or self.retain is not None):
            raise param_error("forget_accuracy", _FUNC,
                              "given only with forget= and holdout= (unlearning)", "members=")
        #: The retrained model's results by statistic, set once they are scored.
        self.retrained: dict[str, AttackResult] = {}
        self.thresholds, self.unlearning = settings.red_flag_thresholds, unlearning
        check_red_flag_inputs(self.forget, self.retain, self.thresholds)

    def findings(self, result: AttackResult) -> list[Finding]:
        """The findings for one of the target's results."""
        auc = result.metrics(fprs=(), n_bootstrap=200, random_state=0)["auc"]
        out: list[Finding] = []
        retrained = self.retrained.get(result.attack)
        if retrained is not None:
            base = retrained.metrics(fprs=(), n_bootstrap=0)["auc"]["value"]
            leak = privleak(auc["value"], base)
            out.append(Finding("privleak", "info", (
                f"PrivLeak {leak:+.1%}: AUC {auc['value']:.3f} against {base:.3f} for the model "
                "retrained without the forget set (0 is ideal; positive: under-unlearning, "
                "negative: over-unlearning)."), leak))
        if self.unlearning:
            out += red_flags(auc, forget_accuracy=self.forget, retain_accuracy=self.retain,
                             thresholds=self.thresholds)
        return out

    def __call__(self, result: AttackResult) -> bool:
        """Replace this enricher's findings on ``result``; return whether they changed."""
        kept = [f for f in result.audit.findings if not f.code.startswith(self.codes)]
        new = kept + self.findings(result)
        if new == result.audit.findings:
            return False
        result.audit.findings = new
        return True


def guide_output(result: AttackResult) -> dict[str, Any]:
    """One LLM result in the shape of the MIA metrics guide (open-unlearning's ``mia_auc``).

    Returns
    -------
    dict
        ``{"agg_value": auc, "auc": auc, "forget": {...}, "holdout": {...}}``: for each set
        (members = forget, non-members = holdout), ``agg_value`` the mean of the statistic
        and ``value_by_index`` ``{record_id: {"score": statistic}}``, the statistic in the
        guide's convention (higher = less likely member).
    """
    if result.raw_statistic is None:
        raise param_error("result", "guide_output", "an LLM result with its statistic",
                          "a result without raw_statistic", error=TypeError)
    auc = float(result.metrics(fprs=(), n_bootstrap=0)["auc"]["value"])
    out: dict[str, Any] = {"agg_value": auc, "auc": auc}
    for name, label in (("forget", 1), ("holdout", 0)):
        mask = result.labels == label
        values = result.raw_statistic[mask]
        out[name] = {
            "agg_value": float(np.mean(values)) if values.size else math.nan,
            "value_by_index": {str(rid): {"score": float(v)} for rid, v in
                               zip(result.record_ids[mask].tolist(), values, strict=True)},
        }
    return out
