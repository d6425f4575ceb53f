"""U-LiRA's shadows from the reference pool: trained on a record, then unlearned it.

Online LiRA over an :class:`UnlearningRecipe` pool (each shadow trains on half of the
candidates and the population, then unlearns the candidates it saw with the audited
algorithm) is Hayes et al.'s U-LiRA. Measured on digits (a torch MLP, 600 training records,
60 unlearned, 16 shadows sized like the target): AUC about 0.5 after gradient ascent and
after retraining, 0.60 after fine-tuning; these MLPs generalise too well for a clear signal,
so the tests here check the mechanics, and the unlearning study will use a target that
memorises.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn.datasets import load_digits  # noqa: E402

from privaudit.attacks import LiRAAttack  # noqa: E402
from privaudit.attacks.membership import collect_reference_outputs  # noqa: E402
from privaudit.training import TorchMLPRecipe  # noqa: E402
from privaudit.unlearn import UnlearningRecipe  # noqa: E402

RECIPE = TorchMLPRecipe(hidden=(64,), epochs=30, classes=np.arange(10))
GA = {"lr": 0.02, "epochs": 10}


@pytest.fixture(scope="module")
def world():
    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    perm = np.random.default_rng(0).permutation(len(X))
    train, held, pop = perm[:300], perm[300:340], perm[340:700]
    forget, retain = train[:40], train[40:]
    audit = np.r_[forget, held]
    return dict(X=X, y=y, forget=forget, retain=retain, audit=audit, pop=pop)


def test_a_pool_of_unlearned_shadows_for_u_lira(world):
    # Every pool model trains on half of the candidates and the population, then unlearns
    # (gradient ascent) the candidates it saw: their loss is high where they were IN.
    X, y, audit, pop = world["X"], world["y"], world["audit"], world["pop"]
    shadows = UnlearningRecipe(RECIPE, (X[audit], y[audit]), method="GA", params=GA)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = collect_reference_outputs(
            shadows, X[audit], y[audit], X_population=X[pop], y_population=y[pop],
            n_models=4, mode="online", random_state=0)
        LiRAAttack(online=True, fix_variance=True).fit(reference)  # U-LiRA fits on it
    loss = reference.signal("cross_entropy")
    in_mask = reference.pool.in_mask_[:, :len(audit)]
    assert loss[in_mask].mean() > 1.5 * loss[~in_mask].mean()


def test_unlearning_recipe_forgets_exactly_the_candidates_it_saw(world):
    X, y, audit = world["X"], world["y"], world["audit"]
    shadows = UnlearningRecipe(RECIPE, (X[audit[:40]], y[audit[:40]]), method="GA",
                               params=GA)
    rows = np.r_[audit[:10], world["pop"][:200]]
    model = shadows.train(X[rows], y[rows], random_state=3)
    again = shadows.train(X[rows], y[rows], random_state=3)
    for a, b in zip(model.parameters(), again.parameters(), strict=True):
        assert torch.equal(a, b)  # seeded end to end
    plain = RECIPE.train(X[rows], y[rows], random_state=3)
    with torch.no_grad():
        logits = model(torch.as_tensor(X[audit[:10]]))
        base = plain(torch.as_tensor(X[audit[:10]]))
    assert not torch.allclose(logits, base)  # the candidates it saw were unlearned
    assert shadows.fingerprint() != UnlearningRecipe(
        RECIPE, (X[audit[:40]], y[audit[:40]]), method="SalUn").fingerprint()
    with pytest.raises(ValueError, match="'method' parameter of UnlearningRecipe"):
        UnlearningRecipe(RECIPE, (X[:2], y[:2]), method="nope")
    # Hyperparameters are refused when the recipe is made, not in every shadow it trains.
    with pytest.raises(TypeError, match=r"'params' parameter of UnlearningRecipe.*'lr'"):
        UnlearningRecipe(RECIPE, (X[:2], y[:2]), method="GA", params={"rate": 0.1})
    with pytest.raises(ValueError, match=r"'params\.lr' parameter of UnlearningRecipe"):
        UnlearningRecipe(RECIPE, (X[:2], y[:2]), method="GA", params={"lr": -0.1})


def _hand_made_reference(in_mask):
    """Online reference outputs of ``len(in_mask)`` shadows on 10 records, by hand."""
    from privaudit.attacks.membership import ReferenceOutputs
    from privaudit.targets import ModelOutputs

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, in_mask.shape[1])

    def outputs():
        p = rng.uniform(0.05, 0.95, y.size)
        return ModelOutputs.from_probabilities(y, np.c_[1 - p, p], [0, 1])

    return (ReferenceOutputs(audited=tuple(outputs() for _ in in_mask), audited_in=in_mask,
                             mode="online"), outputs())


def test_records_without_shadows_on_both_sides_are_left_out_not_the_attack():
    # Too few shadows for a pool's training fraction leave some records with no unlearned
    # (or no never-trained) shadow. U-LiRA's test is per record: it tests the others and
    # leaves those out, with a warning, instead of refusing the pool (and losing every
    # other attack of audit_unlearning with it).
    from privaudit.attacks.unlearning import ULiRAAttack
    from privaudit.exceptions import DegenerateInputWarning

    in_mask = np.zeros((4, 10), dtype=bool)
    in_mask[0, :8] = in_mask[1, :4] = True  # records 8 and 9: no unlearned shadow
    reference, target = _hand_made_reference(in_mask)
    labels = np.r_[np.ones(5), np.zeros(5)].astype(np.int8)
    ids = np.array([f"r{i}" for i in range(10)])
    attack = ULiRAAttack().fit(reference)
    scores = attack.score(outputs=target)
    assert np.isnan(scores[8:]).all() and np.isfinite(scores[:8]).all()
    with pytest.warns(DegenerateInputWarning, match=r"2 of 10 records lack an unlearned "
                                                    r"and a never-trained shadow.*left out"):
        result = attack.run(outputs=target, labels=labels, record_ids=ids)
    assert result.record_ids.tolist() == ids[:8].tolist()
    np.testing.assert_array_equal(result.scores, scores[:8])
    assert result.labels.tolist() == labels[:8].tolist() and result.extra["n_left_out"] == 2
    # No record with both sides: a result with no information, not an error.
    reference, target = _hand_made_reference(np.zeros((4, 10), dtype=bool))
    with pytest.warns(DegenerateInputWarning, match="10 of 10 records.*no information"):
        empty = ULiRAAttack().fit(reference).run(outputs=target, labels=labels)
    assert empty.n_records == 10 and not empty.scores.any()
    assert "too few shadows" in empty.extra["degenerate"]
    assert empty.metrics(n_bootstrap=0)["auc"]["value"] == 0.5


def test_the_shadows_that_cover_every_record():
    from privaudit.attacks.unlearning._sides import shadows_for_every_record
    from privaudit.training._pool import balanced_in_mask

    rng = np.random.default_rng(0)
    for fraction in (0.05, 0.22, 0.5, 0.7, 0.93):
        for side in (1, 2):
            n = shadows_for_every_record(fraction, side)
            for count, covers in ((n, True), (n - 1, False)):
                n_in = balanced_in_mask(count, 1000, fraction, rng).sum(axis=0)
                assert (min(n_in.min(), count - n_in.max()) >= side) == covers, (fraction,
                                                                                  side)
    assert shadows_for_every_record(1.0) is None
