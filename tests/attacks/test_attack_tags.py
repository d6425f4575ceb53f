"""Every registered attack declares what it needs (AttackTags), as the audit's old name sets
said (issue 7, section 2)."""

import dataclasses
import inspect

import pytest

from privaudit.attacks import AttackTags, available_attacks, get_attack, get_tags
from privaudit.attacks.membership import LiRAAttack

# The name sets privaudit/_audit.py planned from before the tags (issue 7).
REFERENCE_ATTACKS = {"shadow", "lira-online", "lira-offline", "rmia"}
CROSS_FITTED_ATTACKS = {"trained-lr", "trained-mlp", "trained-rf", "trained-knn", "trained-gb"}
# The quantile screen (issue 24) needs the target's answers on the population, no pool.
POPULATION_ATTACKS = {"shadow", "rmia", "quantile"}
LIRA_ATTACKS = {"lira-online", "lira-offline"}
PROBABILITY_ATTACKS = {"confidence", "entropy", "modified-entropy", "quantile"} | (
    REFERENCE_ATTACKS | CROSS_FITTED_ATTACKS
)
REGRESSION_ATTACKS = {"loss", "gaussian-threshold", "gradient-norm", "quantile"}

FIELDS = (
    "tasks", "needs_probabilities", "needs_white_box", "needs_reference_models",
    "needs_population", "needs_online_pool", "cross_fitted", "fits_on_audited",
    "queries_target", "augmented_queries", "uses_population_features",
)


def test_attack_tags_has_exactly_the_agreed_fields() -> None:
    assert tuple(f.name for f in dataclasses.fields(AttackTags)) == FIELDS
    with pytest.raises(dataclasses.FrozenInstanceError):
        AttackTags().needs_white_box = True  # type: ignore[misc]


@pytest.mark.parametrize("name", available_attacks())
def test_tags_match_the_old_name_sets(name: str) -> None:
    tags = get_tags(get_attack(name))
    assert isinstance(tags, AttackTags)
    assert tags == get_tags(name)
    assert tags.needs_reference_models == (name in REFERENCE_ATTACKS)
    assert tags.cross_fitted == (name in CROSS_FITTED_ATTACKS)
    assert tags.needs_population == (name in POPULATION_ATTACKS)
    assert tags.needs_online_pool == (name == "lira-online")
    assert tags.augmented_queries == (name in LIRA_ATTACKS)
    assert tags.fits_on_audited == (name == "gaussian-threshold")
    assert tags.queries_target == (name in {"gradient-norm", "colluding"})
    assert tags.needs_white_box == (name == "gradient-norm")
    assert tags.needs_probabilities == (name in PROBABILITY_ATTACKS)
    assert tags.uses_population_features == (name == "label-only")
    assert ("regression" in tags.tasks) == (name in REGRESSION_ATTACKS)
    assert ("classification" in tags.tasks) == (name != "gaussian-threshold")


def test_tags_are_per_instance_for_lira() -> None:
    assert get_tags(LiRAAttack(online=True)).needs_online_pool
    assert not get_tags(LiRAAttack(online=False)).needs_online_pool
    assert LiRAAttack(online=False).name == "lira-offline"
    assert LiRAAttack().name == "lira-online"


@pytest.mark.parametrize(
    "name", sorted(n for n in available_attacks() if get_tags(n).needs_reference_models)
)
def test_reference_attacks_share_one_fit_signature(name: str) -> None:
    params = list(inspect.signature(get_attack(name).fit).parameters.values())
    assert [p.name for p in params] == ["reference", "population_outputs"]
    assert params[1].default is None
    assert callable(get_attack(name).min_reference_models)


def test_get_tags_refuses_an_object_without_tags() -> None:
    with pytest.raises(TypeError, match="'attack' parameter of get_tags"):
        get_tags(object())
    with pytest.raises(ValueError, match="'name' parameter of get_attack"):
        get_tags("no-such-attack")


def test_old_class_level_flags_are_gone() -> None:
    # One source of truth: the tags (no leftover tasks / needs_* / requires_fit ClassVars).
    for name in available_attacks():
        attack = get_attack(name)
        for old in ("tasks", "needs_probabilities", "needs_white_box", "requires_fit"):
            assert not hasattr(attack, old), (name, old)
