"""``audit_llm``: membership inference and unlearning evaluation of a causal language model.

validate -> plan (which statistics, which models) -> loop on the shared
:class:`~privaudit.audits.AuditRun`. Every statistic of one model comes from one scoring
pass (:func:`privaudit.llm.score_texts`), which is skipped entirely when the store already
holds every result of that model under the same run key.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privaudit._digest import sha256_hex
from privaudit._validation import check_fraction, param_error
from privaudit.audits._llm_checks import (
    BlindBaselineCheck,
    check_red_flag_inputs,
    privleak,
    red_flags,
)
from privaudit.audits._run import AuditRun
from privaudit.exceptions import DegenerateInputWarning
from privaudit.results import AttackResult, Finding, SliceSummary

__all__ = ["DEFAULT_LLM_STATISTICS", "LLM_STATISTICS", "audit_llm", "guide_output"]

_FUNC = "audit_llm"

#: Every statistic :func:`privaudit.llm.score_texts` computes ("higher = less likely member").
LLM_STATISTICS = ("loss", "min_k", "min_k_plus_plus", "zlib", "reference", "gradnorm",
                  "dc_pdd", "recall")

#: Computed when ``attacks`` is not given (each needs only the target's forward pass).
DEFAULT_LLM_STATISTICS = ("loss", "min_k", "min_k_plus_plus", "zlib")

# What each optional statistic needs, by the audit_llm parameter that gives it.
_NEEDS = {"reference": "reference_model", "dc_pdd": "token_frequencies",
          "recall": "recall_prefix"}


@dataclass
class _AuditedTexts:
    """The audited texts, their membership labels (1 = member / forget) and ids."""

    texts: list[Any]
    labels: np.ndarray
    record_ids: np.ndarray
    names: tuple[str, str]     # ("members", "non-members") or ("forget", "holdout")

    def digest(self) -> str:
        """One digest of every text, in order, for the run key."""
        joined = "\x1e".join(_text_key(t) for t in self.texts)
        return sha256_hex(joined.encode("utf-8", "surrogatepass"))


def audit_llm(
    target: Any,
    members: Sequence[Any] | None = None,
    non_members: Sequence[Any] | None = None,
    *,
    forget: Sequence[Any] | None = None,
    holdout: Sequence[Any] | None = None,
    tokenizer: Any = None,
    attacks: Sequence[str] | None = None,
    k: float = 0.2,
    p: float = 2,
    reference_model: Any = None,
    token_frequencies: Mapping[int, float] | Sequence[float] | None = None,
    recall_prefix: str | None = None,
    compare: Mapping[str, Any] | None = None,
    retrained: Any = None,
    forget_accuracy: float | None = None,
    retain_accuracy: float | None = None,
    red_flag_thresholds: Mapping[str, float] | None = None,
    blind_baseline: bool = True,
    subgroups: bool = True,
    record_ids: Sequence[Any] | None = None,
    dataset: str = "",
    batch_size: int = 8,
    max_length: int = 512,
    compat: str | None = None,
    results_dir: str | Path | None = None,
    random_state: int = 0,
    progress: Any = None,
    executor: Any = None,
    n_jobs: int | None = None,
    cache_dir: str | Path | None = None,
) -> list[AttackResult]:
    """Was this text in training? Did unlearning forget it? One result per statistic.

    Parameters
    ----------
    target : CausalLMTarget, (model, tokenizer), model or str
        The audited causal language model: a :class:`privaudit.targets.CausalLMTarget`, a
        ``(model, tokenizer)`` pair, a Hugging Face model with ``tokenizer=``, or a local
        directory (:func:`privaudit.targets.load_causal_lm`: safetensors only, no hub).
    members, non_members : sequence of str or (prompt, answer) pairs
        Texts the model trained on, and texts it did not (from the same distribution: the
        blind baseline checks). For a pair, only the answer's tokens are scored.
    forget, holdout : sequence of str or pairs
        The unlearning form, instead of ``members``/``non_members``: the forget set (label
        1) and held-out texts never trained on (label 0), as open-unlearning's
        ``mia_auc`` pairs them.
    tokenizer : tokenizer, optional
        When ``target`` is a bare model.
    attacks : sequence of str, optional
        Statistics among :data:`LLM_STATISTICS`. Default: :data:`DEFAULT_LLM_STATISTICS`,
        plus ``reference`` / ``dc_pdd`` / ``recall`` when ``reference_model`` /
        ``token_frequencies`` / ``recall_prefix`` is given.
    k, p : float
        Min-K / Min-K++ fraction of tokens, GradNorm's norm.
    reference_model : model or CausalLMTarget, optional
        For ``reference`` (same tokenizer as the target).
    token_frequencies : mapping or sequence, optional
        Token frequencies of a reference corpus, for ``dc_pdd`` (and the rare / common
        token subgroups); never downloaded.
    recall_prefix : str, optional
        Known non-member text prefixed for ``recall`` (ReCaLL); never fetched.
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
        cross-fitted) and compare every statistic with it (its result is returned too).
    subgroups : bool, default=True
        Add each result's metrics on long vs short texts and rare vs common tokens
        (``result.audit.slices``).
    record_ids : sequence, optional
        Ids of the texts, members (or forget) first.
    dataset : str
        Dataset name for provenance.
    batch_size, max_length, compat
        Passed to :func:`privaudit.llm.score_texts`.
    results_dir : path, optional
        Finished results are saved there and reused by a rerun (the scoring pass is then
        skipped).
    random_state : int, default=0
        Seeds the blind baseline's folds and every bootstrap.
    progress : None, callable(str) or Progress
        Where progress goes.
    executor, n_jobs, cache_dir
        Shard the scoring over worker processes or Ray, and keep finished shards on disk
        (see :func:`privaudit.llm.score_texts`); the numbers do not change.

    Returns
    -------
    list of AttackResult
        The target's statistics (``attack`` = the statistic, ``raw_statistic`` = its value,
        higher = less likely member; ``scores`` = its negation), then the blind baseline,
        then ``compare`` and ``retrained`` models' statistics (``target`` = their name).
        Texts whose statistic is undefined (no scored token) are left out of that result,
        with a :class:`~privaudit.exceptions.DegenerateInputWarning`.

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
    texts = _audited_texts(members, non_members, forget, holdout, record_ids)
    lm = _as_lm(target, tokenizer, "target")
    statistics = _plan_statistics(attacks, reference_model=reference_model,
                                  token_frequencies=token_frequencies,
                                  recall_prefix=recall_prefix)
    reference = (None if reference_model is None
                 else _as_lm(reference_model, lm.tokenizer, "reference_model"))
    scoring = _scoring_settings(k=k, p=p, reference_model=reference,
                                token_frequencies=token_frequencies,
                                recall_prefix=recall_prefix, batch_size=batch_size,
                                max_length=max_length, compat=compat)
    scoring["parallel"] = {"executor": executor, "n_jobs": n_jobs, "cache_dir": cache_dir}
    findings = _UnlearningFindings(forget_accuracy=forget_accuracy,
                                   retain_accuracy=retain_accuracy,
                                   thresholds=red_flag_thresholds,
                                   unlearning=texts.names[0] == "forget")
    # Compared models share the target's tokenizer (the statistics read the same tokens).
    others = {name: _as_lm(model, lm.tokenizer, f"compare[{name!r}]", name=name)
              for name, model in _other_models(compare, retrained).items()}
    context = _Context(texts=texts, scoring=scoring, store=_store(results_dir),
                       dataset=dataset, random_state=_seed(random_state), progress=progress)
    if blind_baseline:
        _check_blind_baseline_sides(texts)
    # Validated above; the work starts here.
    blind = context.blind_result() if blind_baseline else None
    other_results = {name: context.score(other, statistics, baseline=None)
                     for name, other in others.items()}
    findings.retrained = {r.attack: r for r in other_results.get("retrained", ())}
    enrichers = [_TextSubgroups(lm, texts, token_frequencies)] if subgroups else []
    results = context.score(lm, statistics, enrichers=[*enrichers, findings],
                            baseline=BlindBaselineCheck(blind) if blind else None)
    return [*results, *([blind] if blind else []),
            *(r for rs in other_results.values() for r in rs)]


# --- validation -------------------------------------------------------------------------

def _audited_texts(members: Any, non_members: Any, forget: Any, holdout: Any,
                   record_ids: Any) -> _AuditedTexts:
    """The two text sets, from exactly one of the two forms, checked."""
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
    _check_no_shared_text(first, second, names)
    labels = np.r_[np.ones(len(first), np.int8), np.zeros(len(second), np.int8)]
    n = len(labels)
    ids = np.arange(n, dtype=np.int64) if record_ids is None else np.asarray(record_ids)
    if ids.shape != (n,):
        raise param_error("record_ids", _FUNC, f"one id per text ({n})",
                          f"<{ids.shape[0] if ids.ndim else 0} ids>")
    return _AuditedTexts(first + second, labels, ids, names)


def _check_no_shared_text(first: list[Any], second: list[Any], names: tuple[str, str]
                          ) -> None:
    """A text on both sides is both trained on and not: the audit would be meaningless."""
    keys = {_text_key(t) for t in first}
    both = [t for t in second if _text_key(t) in keys]
    if both:
        raise param_error(names[1].replace("-", "_"), _FUNC, f"texts not in {names[0]}",
                          f"<{len(both)} text(s) also in {names[0]}, e.g. "
                          f"{str(both[0])[:60]!r}>")


#: Folds of the blind baseline's out-of-fold classifier (fewer when a side is smaller).
_BLIND_FOLDS = 5


def _check_blind_baseline_sides(texts: _AuditedTexts) -> None:
    """The blind baseline cross-fits: each side needs a text in at least two folds."""
    for label, name in zip((1, 0), texts.names, strict=True):
        count = int(np.sum(texts.labels == label))
        if count < 2:
            raise param_error(
                "blind_baseline", _FUNC, f"False when {name} has fewer than 2 texts (the "
                "blind baseline trains on some texts of each side and scores the others)",
                f"True with {count} {name} text")


def _blind_folds(labels: np.ndarray) -> int:
    """As many folds as the smaller side allows, at most :data:`_BLIND_FOLDS`."""
    fewest = int(min(labels.sum(), len(labels) - labels.sum()))
    return max(2, min(_BLIND_FOLDS, fewest))


def _check_texts(texts: Any, param: str) -> list[Any]:
    if texts is None or isinstance(texts, (str, bytes)):
        raise param_error(param, _FUNC, "a sequence of texts", texts, error=TypeError)
    out = list(texts)
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


def _text_key(text: Any) -> str:
    return text if isinstance(text, str) else "\x1f".join(text)


def _as_lm(model: Any, tokenizer: Any, param: str, name: str = "") -> Any:
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


def _plan_statistics(attacks: Any, *, reference_model: Any, token_frequencies: Any,
                     recall_prefix: Any) -> tuple[str, ...]:
    given = {"reference_model": reference_model, "token_frequencies": token_frequencies,
             "recall_prefix": recall_prefix}
    if attacks is None:
        extra = tuple(s for s, need in _NEEDS.items() if given[need] is not None)
        return DEFAULT_LLM_STATISTICS + extra
    if isinstance(attacks, str):
        attacks = [attacks]
    names = tuple(dict.fromkeys(attacks))
    for name in names:
        if name not in LLM_STATISTICS:
            raise param_error("attacks", _FUNC, f"names among {list(LLM_STATISTICS)}", name)
        if name in _NEEDS and given[_NEEDS[name]] is None:
            raise param_error(_NEEDS[name], _FUNC, f"given for the {name!r} statistic",
                              None)
    if not names:
        raise param_error("attacks", _FUNC, "at least one statistic", "an empty list")
    return names


def _scoring_settings(**settings: Any) -> dict[str, Any]:
    k = check_fraction(settings["k"], param="k", func=_FUNC, high_inclusive=True)
    if settings["p"] not in (1, 2, math.inf, "inf"):
        raise param_error("p", _FUNC, "1, 2 or inf", settings["p"])
    for name in ("batch_size", "max_length"):
        value = settings[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise param_error(name, _FUNC, "a positive integer", value)
    if settings["compat"] not in (None, "open-unlearning"):
        raise param_error("compat", _FUNC, "None or 'open-unlearning'", settings["compat"])
    return {**settings, "k": k, "p": math.inf if settings["p"] == "inf" else settings["p"]}


def _seed(random_state: Any) -> int:
    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)):
        raise param_error("random_state", _FUNC, "an integer", random_state, error=TypeError)
    return int(random_state)


def _store(results_dir: Any) -> Any:
    from privaudit.results import ResultsStore

    return None if results_dir is None else ResultsStore(results_dir)


def _other_models(compare: Any, retrained: Any) -> dict[str, Any]:
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


# --- the loop ---------------------------------------------------------------------------

@dataclass
class _Context:
    """What every model of one LLM audit is scored against: texts, settings, store."""

    texts: _AuditedTexts
    scoring: dict[str, Any]
    store: Any
    dataset: str
    random_state: int
    progress: Any

    def identity(self, fingerprint: Any) -> tuple:
        """The run key's parts: the model, the texts and every scoring setting."""
        from privaudit.llm import compat_key

        s = self.scoring
        frequencies = s["token_frequencies"]
        return (_FUNC, fingerprint, self.texts.digest(), self.texts.labels,
                self.texts.record_ids.astype(str), self.random_state, s["k"], str(s["p"]),
                s["max_length"], compat_key(s["compat"]), s["recall_prefix"],
                None if s["reference_model"] is None else s["reference_model"].fingerprint(),
                None if frequencies is None else _frequency_digest(frequencies))

    def run(self, name: str, fingerprint: Any, **kwargs: Any) -> AuditRun:
        """An :class:`AuditRun` filing results under ``name``."""
        return AuditRun(func=_FUNC, target_name=name, identity=self.identity(fingerprint),
                        random_state=self.random_state, store=self.store,
                        progress=self.progress, dataset=self.dataset, **kwargs)

    def score(self, lm: Any, statistics: Sequence[str], *, baseline: Any,
              enrichers: Sequence[Any] = ()) -> list[AttackResult]:
        """One result per statistic of ``lm``: reused, or from one scoring pass."""
        run = self.run(lm.name, lm.fingerprint(), baseline=baseline, enrichers=enrichers)
        with run.tracking(len(statistics), "Statistics"):
            saved = {s: run.reuse(s, (), self._consistent) for s in statistics}
            missing = [s for s in statistics if saved[s] is None]
            if missing:
                run.say(f"{lm.name}: scoring {len(self.texts.texts)} texts "
                        f"({', '.join(missing)})")
                frame = self._score_texts(lm, missing)
                lm.count_queries(len(self.texts.texts))
                for s in missing:
                    saved[s] = run.finish(s, (), self._result(lm, s, frame[s].to_numpy()))
        for s in statistics:
            if s not in missing:
                run.enrich(s, saved[s], save=True)
        return [saved[s] for s in statistics]

    def _score_texts(self, lm: Any, statistics: Sequence[str]) -> Any:
        from privaudit.llm import score_texts

        s = self.scoring
        reference = s["reference_model"]
        return score_texts(
            lm.model, lm.tokenizer, self.texts.texts, attacks=tuple(statistics), k=s["k"],
            p=s["p"], reference_model=None if reference is None else reference.model,
            token_frequencies=s["token_frequencies"], recall_prefix=s["recall_prefix"],
            batch_size=s["batch_size"], max_length=s["max_length"], compat=s["compat"],
            progress=self.progress, **s["parallel"])

    def _consistent(self, saved: AttackResult) -> bool:
        """Whether a saved result's records are audited texts with their labels."""
        position = {rid: i for i, rid in enumerate(self.texts.record_ids.tolist())}
        rows = [position.get(rid) for rid in saved.record_ids.tolist()]
        return None not in rows and np.array_equal(self.texts.labels[rows], saved.labels)

    def _result(self, lm: Any, statistic: str, values: np.ndarray) -> AttackResult:
        values = np.asarray(values, dtype=np.float64)
        keep = np.isfinite(values)
        if not keep.all():
            warnings.warn(
                f"{_FUNC}: {statistic} is undefined for {int((~keep).sum())} of {keep.size} "
                "texts (no token to score: empty, or one token); they are left out of its "
                "result.", DegenerateInputWarning, stacklevel=4)
        s = self.scoring
        return AttackResult(
            labels=self.texts.labels[keep], scores=-values[keep],
            record_ids=self.texts.record_ids[keep], attack=statistic, target=lm.name,
            dataset=self.dataset, raw_statistic=values[keep], raw_statistic_name=statistic,
            parameters={"k": s["k"], "p": str(s["p"]), "max_length": s["max_length"],
                        "compat": s["compat"], "sets": list(self.texts.names)})

    def blind_result(self) -> AttackResult:
        """The blind baseline's out-of-fold result on the audited texts (reused if saved)."""
        from privaudit.llm import BlindBaseline

        run = self.run("texts-only", None, baseline=None)
        saved = run.reuse("blind-baseline", (), self.texts.labels)
        if saved is not None:
            return saved
        run.say("blind baseline: a classifier on the texts alone")
        texts = [t if isinstance(t, str) else t[1] for t in self.texts.texts]
        result = BlindBaseline(n_splits=_blind_folds(self.texts.labels),
                               random_state=self.random_state).fit_score(
            texts, self.texts.labels)
        result = dataclasses.replace(result, record_ids=self.texts.record_ids,
                                     target="texts-only", dataset=self.dataset)
        result.audit.role = "baseline"
        return run.finish("blind-baseline", (), result)


def _frequency_digest(frequencies: Any) -> str:
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

    def __init__(self, lm: Any, texts: _AuditedTexts, token_frequencies: Any) -> None:
        self.lm, self.texts, self.frequencies = lm, texts, token_frequencies
        self._groups: dict[str, np.ndarray] | None = None

    def groups(self) -> dict[str, np.ndarray]:
        """``{"length": short/long, "token_rarity": common/rare}`` per audited text."""
        if self._groups is None:
            scored = [t if isinstance(t, str) else t[1] for t in self.texts.texts]
            ids = self.lm.tokenizer(scored, add_special_tokens=False)["input_ids"]
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


def _mean_log_frequency(ids: list[list[int]], frequencies: Any) -> np.ndarray:
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

    def __init__(self, *, forget_accuracy: Any, retain_accuracy: Any, thresholds: Any,
                 unlearning: bool) -> None:
        if not unlearning and (forget_accuracy is not None or retain_accuracy is not None):
            raise param_error("forget_accuracy", _FUNC,
                              "given only with forget= and holdout= (unlearning)", "members=")
        #: The retrained model's results by statistic, set once they are scored.
        self.retrained: dict[str, AttackResult] = {}
        self.forget, self.retain = forget_accuracy, retain_accuracy
        self.thresholds, self.unlearning = thresholds, unlearning
        check_red_flag_inputs(forget_accuracy, retain_accuracy, thresholds)

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
