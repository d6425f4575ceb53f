"""The checks of an LLM audit: blind baseline, MUSE's PrivLeak, the guide's red flags."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privaudit.audits._llm_checks import (
    RED_FLAG_THRESHOLDS,
    BlindBaselineCheck,
    BlindBaselineWarning,
    privleak,
    red_flags,
)
from privaudit.exceptions import BaselineWarning
from privaudit.results import AttackResult, BaselineCheck


def _result(shift: float, seed: int = 0, n: int = 200) -> AttackResult:
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n, np.int8), np.zeros(n, np.int8)]
    return AttackResult(labels=labels, scores=rng.normal(size=2 * n) + shift * labels,
                        attack="loss", target="lm")


def test_privleak_is_relative_to_the_retrained_auc():
    assert privleak(0.6, 0.5) == pytest.approx(0.2)
    assert privleak(0.5, 0.5) == 0.0
    assert privleak(0.4, 0.5) == pytest.approx(-0.2)  # over-unlearning is negative


@pytest.mark.parametrize("missing", [None, math.nan])
def test_privleak_refuses_a_missing_retrained_model(missing):
    with pytest.raises(ValueError, match="retrained"):
        privleak(0.6, missing)


@given(st.floats(0, 1), st.floats(0.01, 1))
def test_privleak_sign_follows_the_auc_difference(unlearned, retrained):
    leak = privleak(unlearned, retrained)
    assert np.sign(leak) == np.sign(unlearned - retrained)
    assert leak * retrained == pytest.approx(unlearned - retrained, abs=1e-12)


@pytest.mark.parametrize("auc,forget,retain,expected", [
    (0.9, 0.1, None, {"red-flag:mode-collapse"}),
    (0.9, 0.9, None, set()),
    (0.52, None, 0.1, {"red-flag:over-unlearning-utility"}),
    (0.52, 0.9, 0.9, {"red-flag:superficial-unlearning"}),
    (0.52, 0.1, 0.9, set()),
    (0.7, 0.9, 0.1, set()),  # AUC neither high nor near 0.5: no rule applies
])
def test_red_flags_follow_the_guide(auc, forget, retain, expected):
    found = red_flags({"value": auc, "low": auc - 0.02, "high": auc + 0.02},
                      forget_accuracy=forget, retain_accuracy=retain)
    assert {f.code for f in found} == expected
    assert all(f.severity == "warning" and f.value == auc for f in found)


def test_auc_far_below_half_is_over_unlearning_only_with_its_interval_below():
    assert [f.code for f in red_flags({"value": 0.3, "low": 0.25, "high": 0.35})] == [
        "over-unlearning"]
    assert red_flags({"value": 0.3, "low": 0.1, "high": 0.55}) == []  # could be 0.5


def test_red_flag_thresholds_can_be_overridden_and_are_checked():
    auc = {"value": 0.75, "low": 0.7, "high": 0.8}
    assert red_flags(auc, forget_accuracy=0.1) == []
    found = red_flags(auc, forget_accuracy=0.1, thresholds={"auc_high": 0.7})
    assert [f.code for f in found] == ["red-flag:mode-collapse"]
    with pytest.raises(ValueError, match="auc_hi"):
        red_flags(auc, thresholds={"auc_hi": 0.7})
    with pytest.raises(ValueError, match="forget_accuracy"):
        red_flags(auc, forget_accuracy=1.5)
    assert set(RED_FLAG_THRESHOLDS) == {"auc_high", "auc_near", "auc_low", "accuracy_low",
                                        "accuracy_high"}


def test_blind_baseline_as_good_as_the_attack_is_flagged_critical():
    attack, blind = _result(0.5, seed=1), _result(1.0, seed=2)
    check = BlindBaselineCheck(blind, n_bootstrap=100)
    with pytest.warns(BlindBaselineWarning, match="differ in distribution"):
        outcome = check.check(attack, random_state=0)
    assert isinstance(outcome, BaselineCheck) and outcome.passed is False
    assert outcome.details["blind_auc"] == pytest.approx(check.blind_auc)
    (finding,) = attack.audit.findings
    assert finding.code == "blind-baseline" and finding.severity == "critical"
    assert issubclass(BlindBaselineWarning, BaselineWarning)


def test_attack_clearly_above_the_blind_baseline_passes_quietly():
    attack, blind = _result(2.0, seed=1), _result(0.0, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outcome = BlindBaselineCheck(blind, n_bootstrap=100).check(attack, random_state=0)
    assert outcome.passed is True and attack.audit.findings == []
    one_class = AttackResult(labels=np.ones(4), scores=np.arange(4.0))
    assert BlindBaselineCheck(blind).check(one_class, 0) is None
