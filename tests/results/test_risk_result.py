"""RiskResult: Wilson rates, anonymeter's residual risk (hand-worked), strict atomic save/load."""

from __future__ import annotations

import json
import math

import pytest

from privaudit.exceptions import BaselineWarning
from privaudit.results import ResultFileError, RiskResult

Z = 1.959963984540054  # the 97.5% normal quantile


def test_rates_and_residual_risk_by_hand() -> None:
    # 30 / 100 attack successes, 10 / 100 on the control, 5 / 100 for the baseline.
    risk = RiskResult(n_attacks=100, n_success=30, n_baseline=5, n_control=10,
                      target="synth", attack="singling-out")
    # Wilson, attack: centre (30 + z^2/2) / (100 + z^2) = 0.307399,
    # half-width z / (100 + z^2) * sqrt(30 * 70 / 100 + z^2 / 4) = 0.088450.
    assert risk.attack_rate.value == 0.30
    assert risk.attack_rate.low == pytest.approx(0.307399 - 0.088450, abs=1e-6)
    assert risk.attack_rate.high == pytest.approx(0.307399 + 0.088450, abs=1e-6)
    # control: centre 0.114797, half-width 0.059568
    assert risk.control_rate.value == 0.10
    assert risk.control_rate.low == pytest.approx(0.114797 - 0.059568, abs=1e-6)
    # baseline: centre 0.066647, half-width 0.045103
    assert risk.baseline_rate.high == pytest.approx(0.066647 + 0.045103, abs=1e-6)
    # residual risk on the Wilson centres (anonymeter):
    # (0.307399 - 0.114797) / (1 - 0.114797) = 0.217579
    # error sqrt((0.088450 / 0.885203)^2 + (0.059568 * (0.307399 - 1) / 0.885203^2)^2)
    #     = sqrt(0.099920^2 + 0.052657^2) = 0.112944
    value, low, high = risk.risk()
    assert value == pytest.approx(0.217579, abs=1e-6)
    assert low == pytest.approx(0.217579 - 0.112944, abs=1e-6)
    assert high == pytest.approx(0.217579 + 0.112944, abs=1e-6)
    assert risk.better_than_baseline


def test_without_control_the_risk_is_the_attack_rate_and_clipped() -> None:
    risk = RiskResult(n_attacks=10, n_success=1, n_baseline=0)
    centre = (1 + Z**2 / 2) / (10 + Z**2)
    half = Z / (10 + Z**2) * math.sqrt(1 * 9 / 10 + Z**2 / 4)
    assert risk.control_rate is None
    assert risk.risk() == pytest.approx((centre, max(centre - half, 0.0), centre + half))
    # an attack far below its control: clipped to 0, as anonymeter's bind_value
    with pytest.warns(BaselineWarning):
        low = RiskResult(n_attacks=100, n_success=2, n_baseline=5, n_control=60)
    assert low.risk().value == 0.0 and low.risk().low == 0.0
    assert not low.better_than_baseline
    every = RiskResult(n_attacks=50, n_success=50, n_baseline=1, n_control=50)
    assert all(math.isnan(x) for x in every.risk())


def test_separate_totals_and_bad_counts() -> None:
    risk = RiskResult(n_attacks=100, n_success=30, n_baseline=1, n_baseline_attacks=20,
                      n_control=5, n_control_attacks=50)
    assert risk.baseline_rate.value == 0.05 and risk.control_rate.value == 0.10
    with pytest.raises(ValueError, match=r"The 'n_success' parameter of RiskResult must be "
                                         r"at most n_attacks = 10\. Got 11 instead\."):
        RiskResult(n_attacks=10, n_success=11, n_baseline=0)
    with pytest.raises(TypeError, match="The 'n_control' parameter of RiskResult"):
        RiskResult(n_attacks=10, n_success=1, n_baseline=0, n_control=1.5)
    with pytest.raises(ValueError, match="The 'n_attacks' parameter of RiskResult must be "
                                         "a positive integer"):
        RiskResult(n_attacks=0, n_success=0, n_baseline=0)
    with pytest.raises(ValueError, match="'n_baseline_attacks' parameter"):
        RiskResult(n_attacks=10, n_success=1, n_baseline=0, n_baseline_attacks=0)
    with pytest.raises(TypeError, match="The 'n_success' parameter"):
        RiskResult(n_attacks=10, n_success=True, n_baseline=0)


def test_save_load_round_trip_strict_json(tmp_path) -> None:
    risk = RiskResult(n_attacks=100, n_success=30, n_baseline=5, n_control=100 - 1,
                      n_control_attacks=99, target="t", attack="a", kind="linkability",
                      parameters={"n_neighbors": 3}, extra={"note": "x"})
    path = risk.save(tmp_path / "r")
    assert path.name == "risk.json" and not list(tmp_path.rglob("*.tmp"))

    def refuse(token: str) -> None:
        raise AssertionError(token)

    doc = json.loads(path.read_text(), parse_constant=refuse)
    # every control attack succeeded: the risk is undefined, said so in strict JSON
    assert doc["risk"]["value"] is None and doc["risk"]["value_status"] == "undefined"
    assert doc["rates"]["attack"]["value"] == 0.3
    again = RiskResult.load(tmp_path / "r")
    assert again == risk


@pytest.mark.parametrize(("text", "match"), [
    ('{"format": "privaudit.risk/1", "n_attacks": NaN}', "not valid JSON.*token NaN"),
    ("[]", "not a privaudit risk result"),
    ('{"format": "privaudit.risk/1", "n_attacks": 5, "n_success": 9, "n_baseline": 0}',
     "invalid data"),
    ('{"format": "privaudit.risk/1", "n_attacks": 5, "n_success": 1, "n_baseline": 0, '
     '"extra": [1]}', "'extra' must be an object"),
])
def test_load_refuses_damaged_files(tmp_path, text, match) -> None:
    (tmp_path / "risk.json").write_text(text)
    with pytest.raises(ResultFileError, match=match):
        RiskResult.load(tmp_path)
    with pytest.raises(FileNotFoundError):
        RiskResult.load(tmp_path / "missing")
