"""Attribute attacks: siblings queried once, each attack against a slow reference, theory.

Theorem 5 of Yeom et al. (Adversary 4's advantage for a binary attribute of influence tau
under Gaussian errors) is checked by simulation: a known linear model, members' labels
drawn with error sigma_S, non-members' with sigma_D.
"""

import numpy as np
import pandas as pd
import pytest

import privaudit.metrics as pm
from privaudit.attacks.attribute import (
    ATTRIBUTE_ATTACKS,
    ConfidenceAttributeAttack,
    DirectAttributeAttack,
    KnownFeaturesGuess,
    LossTargetAttributeAttack,
    MembershipAttributeAttack,
    ModelInversionAttack,
    PriorGuess,
    SensitiveAttribute,
    get_attribute_attack,
    known_features,
    make_siblings,
    query_siblings,
)
from privaudit.attacks.attribute._siblings import best_candidates
from privaudit.attacks.membership import LossAttack
from privaudit.exceptions import NotFittedError
from privaudit.results import AttributeResult
from privaudit.targets import CallableTarget


def _linear(tau):
    w = np.array([0.5, -1.0, tau])  # the last column is the attribute t in {0, 1}
    return CallableTarget(lambda X: np.asarray(X, dtype=float) @ w, task="regression",
                          name="linear", fingerprint=f"linear-{tau}")


def _classifier(n_classes=3, seed=0):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(4, n_classes))

    def proba(X):
        z = np.asarray(X, dtype=float) @ W
        e = np.exp(z - z.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    return CallableTarget(proba, classes=n_classes, name="softmax", fingerprint="sm")


# --------------------------------------------------------------------------- siblings
def test_siblings_are_one_row_per_candidate_in_order():
    X = np.array([[1.0, 9.0], [2.0, 8.0]])
    a = SensitiveAttribute(1, (0.0, 5.0, 7.0))
    np.testing.assert_array_equal(make_siblings(X, a), [[1, 0], [1, 5], [1, 7],
                                                        [2, 0], [2, 5], [2, 7]])
    frame = pd.DataFrame({"x": [1, 2], "g": ["m", "f"], "h": [1, 0]})
    group = SensitiveAttribute(["g", "h"], (("f", 0), ("m", 1)))
    sib = make_siblings(frame, group)
    assert sib["g"].tolist() == ["f", "m", "f", "m"] and sib["h"].tolist() == [0, 1, 0, 1]
    np.testing.assert_array_equal(group.truth_index(frame), [1, 0])
    assert group.label == "g,h"


def test_one_query_for_all_siblings_equals_a_query_per_record_and_candidate():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(30, 4)), rng.integers(0, 3, 30)
    a = SensitiveAttribute(3, (-1.0, 0.0, 2.0))
    target = _classifier()
    sib = query_siblings(target, X, y, a)
    assert target.n_queries == 30 * 3
    for i in range(0, 30, 7):  # slow reference: one record, one candidate at a time
        for j, value in enumerate(a.candidates):
            row = X[i:i + 1].copy()
            row[0, 3] = value
            one = _classifier().query(row, y[i:i + 1])
            assert sib.losses[i, j] == pytest.approx(one.loss[0], rel=1e-12)
            np.testing.assert_allclose(sib.probabilities[i, j], one.probabilities[0])


def test_bad_columns_and_labels_are_named():
    X = np.zeros((4, 2))
    with pytest.raises(ValueError, match="'column' parameter"):
        SensitiveAttribute(5, (0, 1)).current(X)
    with pytest.raises(ValueError, match="'column' parameter"):
        SensitiveAttribute("g", (0, 1)).current(pd.DataFrame(X, columns=["a", "b"]))
    with pytest.raises(ValueError, match="'y' parameter of query_siblings"):
        query_siblings(_classifier(), X, np.zeros(3), SensitiveAttribute(1, (0, 1)))


# --------------------------------------------------------------------------- theory
@pytest.mark.parametrize(("sigma_s", "sigma_d", "tau"), [(0.5, 2.0, 2.0), (1.0, 1.0, 1.5),
                                                          (0.2, 1.0, 0.6)])
def test_adversary_4_matches_theorem_5(sigma_s, sigma_d, tau):
    rng = np.random.default_rng(7)
    n = 20_000
    target = _linear(tau)
    X = np.c_[rng.normal(size=(2 * n, 2)), rng.integers(0, 2, 2 * n)]
    f = X @ np.array([0.5, -1.0, tau])
    members = np.r_[np.ones(n), np.zeros(n)].astype(int)
    y = f + rng.normal(size=2 * n) * np.where(members == 1, sigma_s, sigma_d)
    a = SensitiveAttribute(2, (0.0, 1.0))
    pop = np.c_[rng.normal(size=(2000, 2)), rng.integers(0, 2, 2000)]
    y_pop = pop @ np.array([0.5, -1.0, tau]) + rng.normal(size=2000) * sigma_d
    # Adversary 4 with the uniform prior of Theorem 5: the smaller error wins.
    attack = ModelInversionAttack(sigma=1.0, use_prior=False).fit(
        query_siblings(target, pop, y_pop, a), a.truth_index(pop))
    guesses = attack.predict(query_siblings(target, X, y, a))
    r = AttributeResult(candidates=[0.0, 1.0], guesses=guesses, truth=a.truth_index(X),
                        members=members)
    predicted = pm.gaussian_attribute_advantage(sigma_s, sigma_d, tau)
    se = np.sqrt(2 * 0.25 / n)
    assert r.advantage().value == pytest.approx(predicted, abs=4 * se)


# --------------------------------------------------------------------------- each attack
@pytest.fixture(scope="module")
def classification():
    rng = np.random.default_rng(3)
    target = _classifier()
    a = SensitiveAttribute(3, (-1.0, 0.0, 1.0))
    X = rng.normal(size=(60, 4))
    X[:, 3] = rng.choice([-1.0, 0.0, 1.0], 60, p=[0.5, 0.3, 0.2])
    y = np.array([rng.choice(3, p=p) for p in target.fn(X)])
    pop = rng.normal(size=(200, 4))
    pop[:, 3] = rng.choice([-1.0, 0.0, 1.0], 200, p=[0.5, 0.3, 0.2])
    y_pop = np.array([rng.choice(3, p=p) for p in target.fn(pop)])
    return dict(target=target, a=a, X=X, y=y, pop=pop, y_pop=y_pop,
                sib=query_siblings(target, X, y, a), sib_pop=query_siblings(target, pop,
                                                                            y_pop, a))


def test_model_inversion_is_prior_times_likelihood(classification):
    c = classification
    attack = ModelInversionAttack().fit(c["sib_pop"], c["a"].truth_index(c["pop"]))
    counts = np.bincount(c["a"].truth_index(c["pop"]), minlength=3) + 1.0
    prior = counts / counts.sum()
    scores = attack.score(c["sib"])
    for i in range(0, 60, 9):  # slow reference, per record and candidate
        for j, value in enumerate(c["a"].candidates):
            row = c["X"][i].copy()
            row[3] = value
            p = c["target"].fn(row[None, :])[0, c["y"][i]]
            assert scores[i, j] == pytest.approx(np.log(prior[j]) + np.log(p))
    np.testing.assert_array_equal(attack.predict(c["sib"]), scores.argmax(1))
    np.testing.assert_allclose(attack.posteriors(c["sib"]).sum(1), 1.0)


def test_confidence_ai_equals_a_membership_attack_through_the_loss(classification):
    c = classification
    truth = c["a"].truth_index(c["pop"])
    conf = ConfidenceAttributeAttack().fit(c["sib_pop"], truth)
    sib = query_siblings(c["target"], c["X"], c["y"], c["a"])  # with its flat outputs
    through = MembershipAttributeAttack(LossAttack()).fit(sib, c["a"].truth_index(c["X"]))
    np.testing.assert_array_equal(conf.predict(sib), through.predict(sib))


def test_loss_ai_picks_the_sibling_closest_to_the_training_loss(classification):
    c = classification
    truth = c["a"].truth_index(c["pop"])
    with pytest.raises(ValueError, match="'training_loss' parameter"):
        LossTargetAttributeAttack().fit(c["sib_pop"], truth)
    attack = LossTargetAttributeAttack(training_loss=0.3).fit(c["sib_pop"], truth)
    expected = np.abs(c["sib"].losses - 0.3).argmin(1)
    np.testing.assert_array_equal(attack.predict(c["sib"]), expected)


def test_ties_go_to_the_more_common_value():
    scores = np.array([[0.0, 0.0, -1.0], [-2.0, 1.0, 1.0], [3.0, 3.0, 3.0]])
    prior = np.array([0.2, 0.5, 0.3])
    np.testing.assert_array_equal(best_candidates(scores, prior), [1, 1, 1])
    prior = np.array([0.6, 0.1, 0.3])
    np.testing.assert_array_equal(best_candidates(scores, prior), [0, 2, 0])


def test_model_free_guesses_never_read_the_model(classification):
    c = classification
    truth = c["a"].truth_index(c["pop"])
    known_pop = known_features(c["pop"], c["y_pop"], c["a"])
    known = known_features(c["X"], c["y"], c["a"])
    prior = PriorGuess().fit(None, truth, known_pop, n_candidates=3)
    assert (prior.predict(None, known) == np.bincount(truth).argmax()).all()
    kf = KnownFeaturesGuess(random_state=0).fit(None, truth, known_pop, n_candidates=3)
    assert kf.posteriors(None, known).shape == (60, 3)
    with pytest.raises(ValueError, match="'siblings' parameter"):
        PriorGuess().fit(None, truth)


def test_direct_attack_learns_an_attribute_the_model_reveals():
    # A model whose output copies the attribute: the direct attack reads it back.
    rng = np.random.default_rng(5)
    target = CallableTarget(lambda X: np.asarray(X)[:, 2] * 3.0, task="regression",
                            name="copy", fingerprint="copy")
    a = SensitiveAttribute(2, (0.0, 1.0))
    X = np.c_[rng.normal(size=(300, 2)), rng.integers(0, 2, 300)]
    y = X[:, 2] * 3.0 + rng.normal(size=300) * 0.1
    pop = np.c_[rng.normal(size=(300, 2)), rng.integers(0, 2, 300)]
    y_pop = pop[:, 2] * 3.0 + rng.normal(size=300) * 0.1
    direct = DirectAttributeAttack(random_state=0).fit(
        query_siblings(target, pop, y_pop, a), a.truth_index(pop), known_features(
            pop, y_pop, a))
    guesses = direct.predict(query_siblings(target, X, y, a), known_features(X, y, a))
    assert np.mean(guesses == a.truth_index(X)) > 0.95


def test_registry_and_not_fitted():
    assert set(ATTRIBUTE_ATTACKS) == {"model-inversion", "confidence-ai", "loss-ai",
                                      "membership-ai", "direct", "known-features", "prior"}
    assert isinstance(get_attribute_attack("model-inversion", sigma=2.0), ModelInversionAttack)
    with pytest.raises(ValueError, match="'attack' parameter of get_attribute_attack"):
        get_attribute_attack("nope")
    with pytest.raises(NotFittedError, match="ModelInversionAttack is not fitted"):
        ModelInversionAttack().score(None)


def _gaussian_world(rng, n, sigma_s, sigma_d, tau):
    target = _linear(tau)
    X = np.c_[rng.normal(size=(2 * n, 2)), rng.integers(0, 2, 2 * n)]
    members = np.r_[np.ones(n), np.zeros(n)].astype(int)
    y = X @ np.array([0.5, -1.0, tau]) + rng.normal(size=2 * n) * np.where(
        members == 1, sigma_s, sigma_d)
    return target, X, y, members


def test_adversary_6_has_the_oracles_advantage_over_m():
    # Theorem 7: a uniform candidate, kept when the oracle calls that sibling a member.
    rng = np.random.default_rng(11)
    n, sigma_s, sigma_d, tau = 30_000, 0.3, 1.5, 3.0
    target, X, y, members = _gaussian_world(rng, n, sigma_s, sigma_d, tau)
    a = SensitiveAttribute(2, (0.0, 1.0))
    sib = query_siblings(target, X, y, a)
    threshold = -pm.gaussian_membership_threshold(sigma_s, sigma_d) ** 2  # on -loss
    oracle = LossAttack()
    attack = MembershipAttributeAttack(oracle, rule="adversary-6", threshold=threshold,
                                       random_state=0).fit(sib, a.truth_index(X))
    r = AttributeResult(candidates=[0.0, 1.0], guesses=attack.predict(sib),
                        truth=a.truth_index(X), members=members)
    # The oracle's advantage on records rebuilt with their true value (Adv*^M).
    own = -sib.losses[np.arange(2 * n), a.truth_index(X)] >= threshold
    oracle_adv = own[members == 1].mean() - own[members == 0].mean()
    assert r.advantage().value == pytest.approx(oracle_adv / 2, abs=4 * np.sqrt(0.5 / n))
    # Adversary 7 asks about every candidate: at least as good here.
    seven = MembershipAttributeAttack(oracle, rule="adversary-7", threshold=threshold).fit(
        sib, a.truth_index(X))
    r7 = AttributeResult(candidates=[0.0, 1.0], guesses=seven.predict(sib),
                         truth=a.truth_index(X), members=members)
    assert r7.accuracy().value >= r.accuracy().value
    assert (seven.predict(sib) >= -1).all()
    with pytest.raises(ValueError, match="'threshold' parameter"):
        MembershipAttributeAttack(oracle, rule="adversary-7").fit(sib, a.truth_index(X))
    with pytest.raises(ValueError, match="'rule' parameter"):
        MembershipAttributeAttack(oracle, rule="nope").fit(sib, a.truth_index(X))
