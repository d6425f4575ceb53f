"""The gate's policy file: every budget checked against its metric, errors naming the key."""

from __future__ import annotations

import math

import pytest

from privaudit.policy import METRICS, Policy, PolicyError, load_policy

GOOD = """\
basis: point
unmeasurable: fail
rules:
  - name: models
    kind: model
    target: "digits-*"
    tpr_at_fpr:
      - {fpr: 0.01, max: 0.05}
      - {fpr: 0.001, max: 0.01, basis: lower}
    auc: {max: 0.6}
  - kind: dp
    epsilon_lower_bound: {max: claim}
"""


def test_a_policy_file_is_read_with_its_rules_budgets_and_defaults(tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text(GOOD)
    policy = load_policy(path)
    assert (policy.basis, policy.unmeasurable) == ("point", "fail")
    models, dp = policy.rules
    assert (models.name, models.kind, models.target, models.attack) == (
        "models", "model", "digits-*", "*")
    assert [(m, b.max, getattr(b, "fpr", None), b.basis) for m, b in models.budgets()] == [
        ("auc", 0.6, None, None), ("tpr_at_fpr", 0.05, 0.01, None),
        ("tpr_at_fpr", 0.01, 0.001, "lower")]
    assert [(m, b.max) for m, b in dp.budgets()] == [("epsilon_lower_bound", "claim")]
    assert policy.fprs() == (0.001, 0.01)
    # The defaults: the lower bound, and a warning for what cannot be measured.
    default = load_policy({"rules": [{"auc": {"max": 0.6}}]})
    assert (default.basis, default.unmeasurable) == ("lower", "warn")
    assert load_policy(default) is default and isinstance(default, Policy)


@pytest.mark.parametrize(("text", "key", "expected"), [
    ("rules: [{aucc: {max: 0.6}}]", "rules[0].aucc", "not known in a rule"),
    ("rules: [{auc: {maximum: 0.6}}]", "rules[0].auc.maximum", "not known in a budget"),
    ("rules: [{auc: {max: 0.6}}]\nbasis: lower\nbudgets: 1", "budgets", "not known"),
    ("rules: [{auc: {max: 1.7}}]", "rules[0].auc.max", "a number in [0, 1]"),
    ("rules: [{advantage: {max: -0.1}}]", "rules[0].advantage.max", "in [0, 1]"),
    ("rules: [{risk: {max: 1.01}}]", "rules[0].risk.max", "in [0, 1]"),
    ("rules: [{attribute_advantage: {max: 1.5}}]", "rules[0].attribute_advantage.max",
     "in [-1, 1]"),
    ("rules: [{effective_epsilon: {max: -1}}]", "rules[0].effective_epsilon.max",
     "at least 0"),
    ("rules: [{effective_epsilon: {max: .nan}}]", "rules[0].effective_epsilon.max",
     "at least 0"),
    ("rules: [{epsilon_lower_bound: {max: claimed}}]", "rules[0].epsilon_lower_bound.max",
     "or 'claim'"),
    ("rules: [{auc: {max: claim}}]", "rules[0].auc.max", "a number"),
    ("rules: [{auc: {max: '0.6'}}]", "rules[0].auc.max", "a number"),
    ("rules: [{tpr_at_fpr: {max: 0.1}}]", "rules[0].tpr_at_fpr.fpr", "is missing"),
    ("rules: [{tpr_at_fpr: {fpr: 1.0, max: 0.1}}]", "rules[0].tpr_at_fpr.fpr", "[0, 1)"),
    ("rules: [{tpr_at_fpr: [{fpr: 0.1, max: 0.1}, {fpr: 0.1, max: 2}]}]",
     "rules[0].tpr_at_fpr[1].max", "in [0, 1]"),
    ("rules: [{auc: {max: 0.6, basis: upper}}]", "rules[0].auc.basis", "'lower' or 'point'"),
    ("unmeasurable: ignore\nrules: [{auc: {max: 0.6}}]", "unmeasurable", "'warn'"),
    ("rules: [{target: 'x*'}]", "rules[0]", "at least one budget"),
    ("rules: [{target: 3, auc: {max: 0.6}}]", "rules[0].target", "a string"),
    ("rules: []", "rules", "a non-empty list"),
    ("basis: lower", "rules", "is missing"),
    ("rules: [{auc: 0.6}]", "rules[0].auc", "a mapping"),
    # The memorisation budgets: the extraction check by its name, exposure in bits.
    ("rules: [{extraction: {check: k_extractable, max: 0.01}}]", "rules[0].extraction.check",
     "one of ['k-extractability'"),
    ("rules: [{extraction: {max: 1.5}}]", "rules[0].extraction.max",
     "in [-1, 1] for the check 'k-extractability'"),
    ("rules: [{extraction: [{max: 0.1}, {check: verbmem, max: -2}]}]",
     "rules[0].extraction[1].max", "in [-1, 1] for the check 'verbmem'"),
    ("rules: [{extraction: {check: verbmem, max: .nan}}]", "rules[0].extraction.max",
     "in [-1, 1]"),
    ("rules: [{exposure: {max: -0.5}}]", "rules[0].exposure.max", "a number at least 0"),
    ("rules: [{exposure: {max: 10, repetitions: 0}}]", "rules[0].exposure.repetitions",
     "a repetition count at least 1"),
    ("rules: [{exposure: {max: 10, repetitions: 2.5}}]", "rules[0].exposure.repetitions",
     "integer"),
    ("rules: [{exposure: {max: 10, fpr: 0.1}}]", "rules[0].exposure.fpr",
     "repetitions (exposure)"),
])
def test_a_bad_key_is_one_error_naming_the_key_and_the_file(tmp_path, text, key, expected):
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    message = str(info.value)
    assert f"'{key}' key of {path}" in message and expected in message
    assert "\n" not in message


@pytest.mark.parametrize(("text", "expected"), [
    ("rules:\n  - auc: {max: 0.6}\n    auc: {max: 0.7}\n",
     "The 'rules[0].auc' key of {path} is given twice (lines 2 and 3)"),
    ("rules: [{auc: {max: 0.6}\n", "is not valid YAML"),
    ("- auc: 0.6\n", "must be a YAML mapping"),
    ("", "must be a YAML mapping"),
])
def test_a_file_that_is_not_a_policy_is_refused_naming_the_file(tmp_path, text, expected):
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    with pytest.raises(PolicyError, match="policy") as info:
        load_policy(path)
    assert expected.format(path=path) in str(info.value)


def test_the_memorisation_budgets_are_read_with_their_defaults_and_lists():
    policy = load_policy({"rules": [{"kind": "llm", "extraction": [
        {"max": 0.01}, {"check": "longest-common-prefix", "max": 12.0}],
        "exposure": [{"max": 8.0}, {"max": 4.0, "repetitions": 16}]}]})
    budgets = [(m, b.max, getattr(b, "check", None), getattr(b, "repetitions", None))
               for m, b in policy.rules[0].budgets()]
    # k-extractability by default; a difference in tokens may pass 1.
    assert budgets == [("extraction", 0.01, "k-extractability", None),
                       ("extraction", 12.0, "longest-common-prefix", None),
                       ("exposure", 8.0, None, None), ("exposure", 4.0, None, 16)]


def test_missing_files_folders_and_other_types_are_refused(tmp_path):
    with pytest.raises(PolicyError, match="does not exist"):
        load_policy(tmp_path / "nope.yaml")
    with pytest.raises(PolicyError, match="is a directory"):
        load_policy(tmp_path)
    (tmp_path / "latin1.yaml").write_bytes("rules: [{name: caf\xe9}]".encode("latin-1"))
    with pytest.raises(PolicyError, match="not a text"):
        load_policy(tmp_path / "latin1.yaml")
    with pytest.raises(TypeError, match="'policy' parameter of load_policy"):
        load_policy(3)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_every_metric_accepts_its_whole_range_and_nothing_outside(name):
    spec = METRICS[name]
    extra = {"fpr": 0.01} if name == "tpr_at_fpr" else {}

    def policy(value: float) -> Policy:
        return load_policy({"rules": [{name: {"max": value, **extra}}]})

    for value in (spec.low, spec.high if math.isfinite(spec.high) else 1e9):
        assert policy(value).rules[0].budgets()[0][1].max == value
    for value in (spec.low - 1e-9, spec.high + 1e-9 if math.isfinite(spec.high) else math.nan):
        with pytest.raises(PolicyError, match=f"rules\\[0\\].{name}.max"):
            policy(value)
