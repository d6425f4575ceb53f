"""LiRA and RMIA estimators wired to ReferenceOutputs (their cores are tested apart)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

from privaudit.attacks import get_attack
from privaudit.attacks.membership import (
    LiRAAttack,
    RMIAAttack,
    collect_reference_outputs,
    lira_scores,
    rmia_scores,
)
from privaudit.exceptions import NotFittedError
from privaudit.targets import SklearnTarget


@pytest.fixture(scope="module")
def setup():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    perm = np.random.default_rng(0).permutation(len(X))
    aud, pop = perm[:400], perm[400:800]
    members = aud[:200]
    model = LogisticRegression(C=100.0, max_iter=300).fit(X[members], y[members])
    target = SklearnTarget(model, name="lr")
    recipe = LogisticRegression(C=100.0, max_iter=300)
    online = collect_reference_outputs(recipe, X[aud], y[aud], X_population=X[pop],
                                       y_population=y[pop], n_models=4, random_state=1)
    offline = collect_reference_outputs(recipe, X[aud], y[aud], X_population=X[pop],
                                        y_population=y[pop], n_models=4, mode="offline",
                                        random_state=1)
    return {
        "out": target.query(X[aud], y[aud]), "pop_out": target.query(X[pop], y[pop]),
        "online": online, "offline": offline,
        "labels": np.r_[np.ones(200, int), np.zeros(200, int)],
    }


def test_lira_equals_its_core(setup):
    ref, out = setup["online"], setup["out"]
    for online in (True, False):
        attack = LiRAAttack(online=online, fix_variance=True).fit(ref)
        expected = lira_scores(out.signal("logit_confidence"), ref.signal("logit_confidence"),
                               ref.audited_in, online=online, fix_variance=True)
        np.testing.assert_array_equal(attack.score(outputs=out), expected)


def test_lira_auto_variance_follows_the_paper(setup):
    result = LiRAAttack().fit(setup["online"]).run(outputs=setup["out"],
                                                   labels=setup["labels"])
    assert result.attack == "lira-online"
    assert result.extra["fixed_variance"] is True  # 4 models < 64
    assert result.extra["n_reference_models"] == 4


def test_registry_names(setup):
    assert get_attack("lira-offline").name == "lira-offline"
    assert get_attack("lira-online").name == "lira-online"
    assert get_attack("rmia").name == "rmia"
    with pytest.raises(TypeError, match="'online' parameter of lira_offline"):
        get_attack("lira-offline", online=True)


def test_online_lira_needs_an_online_pool(setup):
    with pytest.raises(ValueError, match=r"'reference' parameter of LiRAAttack.fit"):
        LiRAAttack(online=True).fit(setup["offline"])
    # Offline LiRA reads OUT models only: either pool works.
    LiRAAttack(online=False).fit(setup["offline"]).score(outputs=setup["out"])


def test_unfitted_and_misaligned(setup):
    with pytest.raises(NotFittedError):
        LiRAAttack().score(outputs=setup["out"])
    attack = LiRAAttack().fit(setup["online"])
    with pytest.raises(ValueError, match=r"'X' parameter of LiRAAttack.score"):
        attack.score(outputs=setup["out"].subset(np.arange(10)))
    with pytest.raises(TypeError, match="'reference' parameter"):
        LiRAAttack().fit("not reference outputs")
    with pytest.raises(ValueError, match="'fix_variance' parameter"):
        LiRAAttack(fix_variance="sometimes").fit(setup["online"])


def test_rmia_equals_its_core_and_tunes_a(setup):
    ref, out, pop_out = setup["offline"], setup["out"], setup["pop_out"]
    attack = RMIAAttack().fit(ref, pop_out)
    assert 0.0 <= attack.a_ <= 1.0
    expected = rmia_scores(
        out.signal("true_class_confidence"), ref.signal("true_class_confidence"),
        pop_out.signal("true_class_confidence"),
        ref.signal("true_class_confidence", "population"), offline_a=attack.a_,
        in_mask_x=ref.audited_in, in_mask_z=ref.population_in,
    )
    exact = RMIAAttack(break_ties=False).fit(ref, pop_out)
    np.testing.assert_array_equal(exact.score(outputs=out), expected)
    # Tie-breaking refines the ranking without reversing it and stays within half a step.
    refined = attack.score(outputs=out)
    step = 1.0 / len(pop_out)
    assert np.all((refined - expected >= 0) & (refined - expected < step / 2))
    distinct = expected[:, None] < expected[None, :]
    assert np.all((refined[:, None] < refined[None, :])[distinct])
    fixed = RMIAAttack(offline_a=0.3).fit(ref, pop_out)
    assert fixed.a_ == 0.3
    result = fixed.run(outputs=out, labels=setup["labels"])
    assert result.extra["offline_a"] == 0.3
    assert np.all((result.scores >= 0) & (result.scores <= 1))


def test_rmia_bad_input(setup):
    ref = setup["offline"]
    with pytest.raises(ValueError, match=r"'population_outputs' parameter of RMIAAttack.fit"):
        RMIAAttack().fit(ref, setup["pop_out"].subset(np.arange(5)))
    with pytest.raises(ValueError, match="'offline_a' parameter"):
        RMIAAttack(offline_a="guess").fit(ref, setup["pop_out"])
    no_pop = collect_reference_outputs(
        LogisticRegression(max_iter=100), np.random.default_rng(0).normal(size=(40, 3)),
        np.tile([0, 1], 20), n_models=2, random_state=0,
    )
    with pytest.raises(ValueError, match=r"'reference' parameter of RMIAAttack.fit"):
        RMIAAttack().fit(no_pop, setup["pop_out"])


def test_attacks_see_the_leak(setup):
    from privaudit.metrics import roc_auc

    labels = setup["labels"]
    for attack in (LiRAAttack(online=True), LiRAAttack(online=False)):
        s = attack.fit(setup["online"]).score(outputs=setup["out"])
        assert roc_auc(labels, s) > 0.55
    s = RMIAAttack().fit(setup["offline"], setup["pop_out"]).score(outputs=setup["out"])
    assert roc_auc(labels, s) > 0.55
