"""Every attack the issue names is registered, and its results carry that name."""

import pytest

from privaudit.attacks import available_attacks, get_attack

ISSUE_NAMES = (
    "loss", "confidence", "entropy", "modified-entropy", "shadow", "trained-lr",
    "lira-offline", "lira-online", "rmia", "label-only", "gradient-norm",
)


@pytest.mark.parametrize("name", sorted(set(ISSUE_NAMES) | set(available_attacks())))
def test_registered_attack_names_itself(name):
    assert name in available_attacks()
    attack = get_attack(name)
    assert attack.name == name
    # Estimator contract: __init__ stores parameters, learns nothing.
    assert not [k for k in vars(attack) if k.endswith("_") and not k.startswith("_")]


def test_unknown_attack_is_named():
    with pytest.raises(ValueError, match="'name' parameter of get_attack"):
        get_attack("lira-squared")
