"""``PrivacyEvaluator``: the synthetic-data evaluator of the source document, on the spine.

The source's evaluator takes a synthetic and an original table, metadata and the metrics to
compute, and returns one dict in documented shapes (``exact_matches``,
``membership_inference``, ``tabular_privacy``, ``text_privacy``, ``anonymeter``). This one
returns the same shapes computed by :func:`privaudit.audit_synthetic` (so every number is
also a saved, reportable result) and adds what the source asks readers to check: each
number's interval, and its baseline beside it (the holdout for the closeness checks, the
control set and the random-guess attacker for anonymeter's risks). Risk levels come from
thresholds the caller can override; every level is printed next to its baseline.

Where the source and the established definitions differ, the established ones are used
(see :mod:`privaudit.synthetic`): NNDR is ``d1 / d2``; the closeness checks' baseline is a
holdout of unseen real records, not the training data compared with itself (reported too,
as ``train_train_5pct``, for reference).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privaudit._validation import canonical_names, param_error
from privaudit.audits._synthetic import audit_synthetic, check_tables
from privaudit.audits._synthetic_risks import CheckResult, SyntheticTables
from privaudit.metrics import Estimate
from privaudit.results import AttackResult, ProximityResult, RiskResult

if TYPE_CHECKING:  # pandas (and pyarrow behind it) load when an audit runs
    import pandas as pd

    from privaudit.synthetic import TableMetadata

#: The synthetic-data checks' results by name.
_ByName = dict[str, CheckResult]

__all__ = ["DEFAULT_THRESHOLDS", "PRIVACY_METRICS", "PrivacyEvaluator"]

_FUNC = "PrivacyEvaluator"

#: The source's metric names and the checks of audit_synthetic behind each.
PRIVACY_METRICS: dict[str, tuple[str, ...]] = {
    "exact_matches": ("exact-matches",),
    "membership_inference": ("distinguishability",),
    "tabular_privacy": ("ims", "dcr", "nndr"),
    "text_privacy": (),
    "anonymeter": ("singling-out-univariate", "singling-out-multivariate", "linkability",
                   "inference"),
}
#: The source's keys of the anonymeter risks (its shapes, kept) and the checks behind.
_ANONYMETER_KEYS = {"singling_out_univariate": "singling-out-univariate",
                    "singling_out_multivariate": "singling-out-multivariate",
                    "linkability": "linkability"}

#: The source's default alert levels (all configurable).
DEFAULT_THRESHOLDS: dict[str, float] = {
    "mia_auc": 0.70,                 # distinguishability AUC at or above: high risk
    "exact_match_percentage": 5.0,   # exact matches' interval above (percent): high risk
    "anonymeter_high": 0.5,          # a risk above: high
    "anonymeter_medium": 0.3,        # a risk at or above: medium
}


def _ci(e: Estimate | None, scale: float = 1.0) -> list[float] | None:
    return None if e is None else [e.low * scale, e.high * scale]


class PrivacyEvaluator:
    """The source document's privacy evaluator of synthetic data.

    Parameters
    ----------
    synthetic_data, original_data : DataFrame
        The synthetic table and the records its generator was trained on.
    metadata : TableMetadata, dict (SDV single-table form) or path, optional
        Column kinds; inferred from ``original_data`` when None.
    selected_metrics : sequence of str, optional
        Among :data:`PRIVACY_METRICS` (default: all that apply; ``text_privacy`` only
        with text columns).
    holdout_data : DataFrame, optional
        Real records the generator never saw: the baseline of the closeness checks and
        anonymeter's control set. Without it those checks are undecided.
    thresholds : mapping, optional
        Overrides of :data:`DEFAULT_THRESHOLDS` (and of the text checks' thresholds, under
        ``"text"``).
    random_state : int, optional
        Seeds every check (default 0).
    results_dir : path, optional
        Where the results are saved (a rerun reuses them).
    **audit
        Passed to :func:`privaudit.audit_synthetic` (``check_params``, ``name``,
        ``executor``, ``n_jobs``, ``progress``...).

    Examples
    --------
    >>> from privaudit import PrivacyEvaluator                       # doctest: +SKIP
    >>> out = PrivacyEvaluator(syn, ori, None, ["exact_matches"],     # doctest: +SKIP
    ...                        holdout_data=held).evaluate()
    >>> out["exact_matches"]["exact_match_percentage"]                # doctest: +SKIP
    """

    def __init__(self, synthetic_data: pd.DataFrame, original_data: pd.DataFrame,
                 metadata: TableMetadata | Mapping[str, Any] | str | os.PathLike[str]
                 | None = None, selected_metrics: Sequence[str] | None = None,
                 holdout_data: pd.DataFrame | None = None,
                 thresholds: Mapping[str, Any] | None = None, random_state: int | None = None,
                 results_dir: str | Path | None = None, **audit: Any) -> None:
        self.synthetic_data, self.original_data = synthetic_data, original_data
        self.metadata, self.holdout_data = metadata, holdout_data
        self.selected_metrics = selected_metrics
        self.thresholds = thresholds
        self.random_state = 0 if random_state is None else random_state
        self.results_dir, self.audit = results_dir, _canonical_check_params(audit)
        self.results_: Sequence[CheckResult] = []

    def _metrics(self, metadata: TableMetadata) -> list[str]:
        if self.selected_metrics is None:
            return [m for m in PRIVACY_METRICS if m != "text_privacy" or metadata.text]
        names = [self.selected_metrics] if isinstance(self.selected_metrics, str) else list(
            self.selected_metrics)
        for name in names:
            if name not in PRIVACY_METRICS:
                raise param_error("selected_metrics", _FUNC,
                                  f"names among {list(PRIVACY_METRICS)}", name)
        return names

    def _thresholds(self) -> dict[str, Any]:
        given = dict(self.thresholds or {})
        unknown = set(given) - set(DEFAULT_THRESHOLDS) - {"text"}
        if unknown:
            raise param_error("thresholds", _FUNC, f"keys among {sorted(DEFAULT_THRESHOLDS)} "
                              "or 'text'", sorted(unknown))
        return {**DEFAULT_THRESHOLDS, **given}

    def evaluate(self) -> dict[str, Any]:
        """Run the selected metrics; return the source's dict, intervals and baselines added."""
        thresholds = self._thresholds()
        tables = check_tables(self.synthetic_data, self.original_data, self.holdout_data, None,
                        self.metadata)
        metrics = self._metrics(tables.metadata)
        checks = [c for m in metrics for c in PRIVACY_METRICS[m]]
        self.results_ = audit_synthetic(
            tables.synthetic, tables.original, holdout=tables.holdout,
            metadata=tables.metadata, checks=checks, random_state=self.random_state,
            results_dir=self.results_dir, **self.audit) if checks else []
        by_name: _ByName = {r.attack: r for r in self.results_}
        out: dict[str, Any] = {}
        for metric in metrics:
            out[metric] = _SHAPES[metric](self, by_name, thresholds, tables)
        return out

    # ------------------------------------------------------------------ the shapes
    def _exact(self, by: _ByName, th: dict[str, Any], tables: SyntheticTables) -> dict[str, Any]:
        r: ProximityResult = by["exact-matches"]
        pct, base = r.value().value * 100, r.baseline_value()
        dup = r.original_duplication_rate
        return {"exact_match_percentage": pct, "ci": _ci(r.value(), 100),
                "holdout_match_percentage": None if base is None else base.value * 100,
                "holdout_ci": _ci(base, 100),
                "original_duplication_percentage": None if dup is None else 100 * dup,
                "passed": r.passed, "risk_level": _level(r.value(), th[
                    "exact_match_percentage"] / 100)}

    def _mia(self, by: _ByName, th: dict[str, Any], tables: SyntheticTables) -> dict[str, Any]:
        r: AttackResult = by["distinguishability"]
        auc = r.metrics(n_bootstrap=1000, random_state=self.random_state)["auc"]
        return {"distinguishability_auc": auc["value"], "auc_ci": [auc["low"], auc["high"]],
                "synthetic_confidence": r.synthetic_confidence,
                "original_confidence": r.original_confidence,
                "fidelity_score": r.extra["fidelity_score"],
                "risk_level": "high" if auc["value"] >= th["mia_auc"] else "low",
                "interpretation": "Values near 1.0 indicate synthetic data is easily "
                "separable from the original distribution (poor fidelity). Values near 0.5 "
                "indicate high similarity. Values clearly below 0.5 (the interval under "
                "0.5) mean the classifier is systematically wrong, which usually means the "
                "synthetic rows copy the original ones: see the closeness checks."}

    def _tabular(self, by: _ByName, th: dict[str, Any], tables: SyntheticTables) -> dict[str, Any]:
        return {"structured_privacy_metrics": {
            "IMS": _closeness(by["ims"], "Identical Match Share (IMS)", "ims_syn_train",
                              "train_test_ims"),
            "DCR": _closeness(by["dcr"], "Distance to Closest Records (DCR)",
                              "syn_train_5pct", "holdout_train_5pct"),
            "NNDR": _closeness(by["nndr"], "Nearest Neighbor Distance Ratio (NNDR)",
                               "syn_train_5pct", "holdout_train_5pct")}}

    def _text(self, by: _ByName, th: dict[str, Any], tables: SyntheticTables) -> dict[str, Any]:
        from privaudit.synthetic import text_privacy

        out = {}
        for column in tables.metadata.text:
            out[column] = text_privacy(
                tables.synthetic[column], tables.original[column],
                holdout=None if tables.holdout is None else tables.holdout[column],
                thresholds=th.get("text"))
        return out

    def _anonymeter(self, by: _ByName, th: dict[str, Any], tables: SyntheticTables
                    ) -> dict[str, Any]:
        out: dict[str, Any] = {key: _risk_entry(by[check])
                               for key, check in _ANONYMETER_KEYS.items()}
        inference = [r for name, r in by.items() if name.startswith("inference:")]
        out["inference"] = [{"secret_column": r.extra.get("secret_column"),
                             **_risk_entry(r)} for r in inference]
        risks = [out[key]["risk"] for key in _ANONYMETER_KEYS]
        risks += [e["risk"] for e in out["inference"]]
        score = max((x for x in risks if not math.isnan(x)), default=math.nan)
        level = ("high" if score > th["anonymeter_high"] else "medium"
                 if score >= th["anonymeter_medium"] else "low")
        out["overall_risk"] = {"risk_score": score, "risk_level": level,
                               "explanation": "Overall risk is determined by the highest risk "
                               "score among all attacks."}
        return out


def _canonical_check_params(audit: dict[str, Any]) -> dict[str, Any]:
    """``audit`` with ``check_params`` keyed by kebab-case check names (old: a warning)."""
    given = audit.get("check_params")
    if not isinstance(given, Mapping):
        return audit  # absent, or refused by audit_synthetic naming it
    keys = canonical_names(list(given), param="check_params", func=_FUNC, stacklevel=4)
    return {**audit, "check_params": dict(zip(keys, given.values(), strict=True))}


def _closeness(r: ProximityResult, method: str, ours: str, theirs: str) -> dict[str, Any]:
    value, base = r.value(), r.baseline_value()
    share = r.statistic == "share"
    entry: dict[str, Any] = {ours: value.value, theirs: None if base is None else base.value,
                             "ci": _ci(value), "baseline_ci": _ci(base), "passed": r.passed,
                             "method": method}
    if "train_train_quantile" in r.extra:
        entry["train_train_5pct"] = r.extra["train_train_quantile"]
    if r.closer_to_train_share is not None:
        entry["closer_to_train_share"] = r.closer_to_train_share
    shown = "n/a" if base is None else f"{base.value:.4f}"
    verdict = {"no holdout": "Undecided (no holdout)", "not closer": "Yes", "closer": "No",
               "overlap": "Undecided (the intervals overlap)"}[r.verdict]
    label = "share" if share else f"{r.quantile:.0%}"
    entry["desc"] = (f"Synthetic-Train {label}: {value.value:.4f}, Holdout-Train {label}: "
                     f"{shown}, Passed: {verdict}")
    return entry


def _level(share: Estimate, threshold: float) -> str:
    """The risk level of a share: its interval above, at or below, or across ``threshold``."""
    if share.low > threshold:
        return "high"
    return "low" if share.high <= threshold else "undecided"


def _risk_entry(r: RiskResult) -> dict[str, Any]:
    risk = r.risk()
    control = r.control_rate
    return {"attack_rate": r.attack_rate.value, "baseline_rate": r.baseline_rate.value,
            "control_rate": None if control is None else control.value,
            "risk": risk.value, "error": (risk.high - risk.low) / 2,
            "ci": [risk.low, risk.high], "n_attacks": r.n_attacks}


_SHAPES = {"exact_matches": PrivacyEvaluator._exact,
           "membership_inference": PrivacyEvaluator._mia,
           "tabular_privacy": PrivacyEvaluator._tabular,
           "text_privacy": PrivacyEvaluator._text,
           "anonymeter": PrivacyEvaluator._anonymeter}
