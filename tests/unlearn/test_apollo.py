"""Apollo (Tang, Joshi, Kundu): the search, the scores against Algorithm 1's tau rule, queries.

Setting: ``stevedata::TV16`` (7-class party identification), a torch MLP that memorises its
600 training records (test accuracy ~0.3), 60 of them unlearned by gradient ascent, 60
held-out records, 6 shadows that trained on halves of the audited and population records
and unlearned the audited ones they saw.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from privaudit.attacks.unlearning import ApolloAttack  # noqa: E402
from privaudit.attacks.unlearning._search import (  # noqa: E402
    SearchSettings,
    ShadowStack,
    search_rounds,
)
from privaudit.data import load_tv16  # noqa: E402
from privaudit.targets import LabelOnlyTarget  # noqa: E402
from privaudit.training import ReferencePool, TorchMLPRecipe  # noqa: E402
from privaudit.unlearn import UnlearningRecipe, unlearn  # noqa: E402

GA = {"lr": 0.002, "epochs": 5}


@pytest.fixture(scope="module")
def world():
    d = load_tv16(n_rows=2000, random_state=0)
    X, y = d.X.astype(np.float32), d.y
    classes = np.unique(y)
    perm = np.random.default_rng(0).permutation(len(X))
    train, held, pop = perm[:600], perm[600:660], perm[660:1800]
    forget, retain = train[:60], train[60:]
    recipe = TorchMLPRecipe(hidden=(64,), epochs=30, classes=classes, stack=6)
    original = recipe.train(X[train], y[train], random_state=1)
    model = unlearn(original, (X[forget], y[forget]), (X[retain], y[retain]), method="GA",
                    random_state=1, **GA)
    audited = np.r_[forget, held]
    X_all, y_all = np.r_[X[audited], X[pop]], np.r_[y[audited], y[pop]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pool = ReferencePool(UnlearningRecipe(recipe, (X[audited], y[audited]), method="GA",
                                              params=GA), 6, mode="online",
                             train_fraction=600 / len(y_all), random_state=0).fit(
            X_all, y_all, audited=np.arange(len(audited)))
    labels = np.r_[np.ones(60), np.zeros(60)].astype(np.int8)
    return dict(X=X[audited], y=y[audited], labels=labels, model=model, pool=pool,
                classes=classes, recipe=recipe, X_pop=X[pop], y_pop=y[pop])


def test_stacked_shadows_answer_as_each_shadow(world):
    # torch.func over stacked parameters (the fast path) against one model at a time.
    models = list(world["pool"].models_)
    x = torch.from_numpy(world["X"][:20])
    stacked = ShadowStack(models).logits(x)
    with torch.no_grad():
        one_by_one = torch.stack([m(x) for m in models])
    torch.testing.assert_close(stacked, one_by_one, rtol=1e-5, atol=1e-5)


def test_every_round_stays_in_its_shell(world):
    models = list(world["pool"].models_)
    n, d = 30, world["X"].shape[1]
    in_mask = world["pool"].in_mask_[:, :n]
    settings = SearchSettings(kind="under", offline=False, eps=0.05, n_rounds=6, alpha=1.0,
                              beta=4.0, low=np.full(d, -np.inf, np.float32),
                              high=np.full(d, np.inf, np.float32))
    y_idx = np.searchsorted(world["classes"], world["y"][:n])
    x0 = world["X"][:n]
    for t, x, conf in search_rounds(ShadowStack(models), x0, y_idx, in_mask, ~in_mask,
                                    settings):
        radius = np.linalg.norm(x - x0, axis=1)
        assert np.all(radius >= t * 0.05 - 1e-5) and np.all(radius <= (t + 1) * 0.05 + 1e-5)
        assert conf.shape == (n,) and np.all(np.isfinite(conf))


def _tau_rule(conf, same, kind, tau):
    """Algorithm 1 as the authors' code applies it: stop at the first round past tau."""
    past = conf < tau if kind == "under" else conf > tau
    t = np.where(past.any(axis=1), past.argmax(axis=1), conf.shape[1] - 1)
    answer = same[np.arange(len(t)), t]
    return answer if kind == "under" else ~answer


@pytest.mark.parametrize("kind", ["under", "over"])
def test_scores_reproduce_the_tau_sweep(world, kind):
    # The slow reference: every round's conf and the target's answers, then the tau rule
    # at every threshold; thresholding the score must give the same decisions for every
    # record whose answers change at most once along the search (and tau within the
    # conf values reached, where the rule's last-round fallback does not apply).
    X, y, model = world["X"], world["y"], world["model"]
    attack = ApolloAttack(kind=kind, n_rounds=8).fit(world["pool"])
    target = LabelOnlyTarget(model.predict, classes=world["classes"])
    result = attack.run(target, X, y, world["labels"])
    eps = result.extra["eps"]
    in_mask = attack.in_mask_
    settings = SearchSettings(kind=kind, offline=False, eps=eps, n_rounds=8, alpha=1.0,
                              beta=4.0, low=X.min(axis=0), high=X.max(axis=0))
    y_idx = np.searchsorted(world["classes"], y)
    confs, same = [], []
    for _, x, conf in search_rounds(ShadowStack(attack.models_), X, y_idx, in_mask,
                                    ~in_mask, settings):
        confs.append(conf)
        same.append(model.predict(x) == y)
    conf, same = np.stack(confs, 1), np.stack(same, 1)
    sign = -1.0 if kind == "under" else 1.0
    flagged = same if kind == "under" else ~same
    # Records whose answers start flagged and change at most once (the score's domain),
    # and records never flagged at all (lowest score; the rule flags them at no tau).
    changes = np.abs(np.diff(flagged.astype(int), axis=1)).sum(axis=1)
    records = np.flatnonzero(((changes <= 1) & flagged[:, 0]) | ~flagged.any(axis=1))
    assert records.size > 0.5 * len(y)
    for tau in np.unique(conf)[1:-1]:
        ref = _tau_rule(conf, same, kind, tau)
        reached = (conf < tau).any(axis=1) if kind == "under" else (conf > tau).any(axis=1)
        ok = records[reached[records]]
        bad = ok[(result.scores[ok] > sign * tau) != ref[ok]]
        assert bad.size == 0, (tau, conf[bad], same[bad], result.scores[bad])
    # The rule's own ROC, from every round's answers, is stored beside the scores.
    traced = attack.run(LabelOnlyTarget(model.predict, classes=world["classes"]), X, y,
                        world["labels"], trajectories=True)
    roc = traced.extra["tau_roc"][kind]
    tau = roc["tau"][len(roc["tau"]) // 2]
    ref = _tau_rule(conf, same, kind, tau)
    assert roc["tpr"][len(roc["tau"]) // 2] == pytest.approx(ref[world["labels"] == 1].mean())
    assert roc["fpr"][len(roc["tau"]) // 2] == pytest.approx(ref[world["labels"] == 0].mean())


def test_label_only_queries_are_counted_and_bounded(world):
    target = LabelOnlyTarget(world["model"].predict, classes=world["classes"])
    result = ApolloAttack(kind="under", n_rounds=10).fit(world["pool"]).run(
        target, world["X"], world["y"], world["labels"])
    n = len(world["y"])
    assert target.n_queries == result.extra["queries_per_record"] * n
    assert n <= target.n_queries <= 10 * n  # only rounds some tau stops at, until it flips
    full = LabelOnlyTarget(world["model"].predict, classes=world["classes"])
    traced = ApolloAttack(kind="under", n_rounds=10).fit(world["pool"]).run(
        full, world["X"], world["y"], world["labels"], trajectories=True)
    assert full.n_queries == 2 * 10 * n  # both searches, every round (Figure 5)
    np.testing.assert_array_equal(traced.scores, result.scores)  # same scores either way
    heat = traced.extra["heatmap"]
    assert np.asarray(heat["tpr"]).shape == (10, 10) and len(heat["radii"]) == 10


def test_gradient_ascent_leaves_under_unlearning_apollo_finds(world):
    # On this memorising target GA under-unlearns: the auto kind (chosen on a shadow
    # playing the target) is UNDER and finds the forgotten records better than chance.
    from sklearn.metrics import roc_auc_score

    target = LabelOnlyTarget(world["model"].predict, classes=world["classes"])
    result = ApolloAttack().fit(world["pool"]).run(target, world["X"], world["y"],
                                                   world["labels"])
    assert result.extra["kind"] == "under"
    assert set(result.extra["calibration_auc"]) == {"under", "over"}
    assert roc_auc_score(world["labels"], result.scores) > 0.6
    again = ApolloAttack().fit(world["pool"]).run(target, world["X"], world["y"],
                                                  world["labels"])
    np.testing.assert_array_equal(again.scores, result.scores)  # deterministic


def test_offline_apollo_on_shadows_that_never_saw_the_records(world):
    X_all = np.r_[world["X"], world["X_pop"]]
    y_all = np.r_[world["y"], world["y_pop"]]
    n = len(world["y"])
    pool = ReferencePool(world["recipe"], 3, mode="offline", train_fraction=0.5,
                         random_state=0).fit(X_all, y_all, audited=np.arange(n))
    target = LabelOnlyTarget(world["model"].predict, classes=world["classes"])
    result = ApolloAttack(online=False, n_rounds=5).fit(pool).run(
        target, world["X"], world["y"], world["labels"])
    assert result.attack == "apollo-offline" and result.extra["kind"] == "under"
    assert np.all(np.isfinite(result.scores))
    with pytest.raises(ValueError, match=r"'shadows' parameter of ApolloAttack\.fit"):
        ApolloAttack(online=True).fit(pool)  # a plain pool has nothing unlearned
    with pytest.raises(ValueError, match="an offline pool"):
        ApolloAttack(online=False).fit(world["pool"])
    with pytest.raises(TypeError, match="'calibration' parameter"):
        ApolloAttack(online=False).fit(pool, calibration={"model": None})
    with pytest.raises(ValueError, match="'calibration' parameter"):
        ApolloAttack(online=False).fit(pool, calibration={
            "model": None, "X": world["X"][:4], "y": world["y"][:4],
            "labels": [1, 0, 1, 0], "in_mask": np.zeros((2, 4), bool)})


def test_bad_input_is_refused_with_the_parameter_named(world):
    with pytest.raises(ValueError, match="'kind' parameter"):
        ApolloAttack(kind="sideways").fit(world["pool"])
    with pytest.raises(ValueError, match="'n_rounds' parameter"):
        ApolloAttack(n_rounds=0).fit(world["pool"])
    with pytest.raises(ValueError, match="'eps' parameter"):
        ApolloAttack(eps=-1.0).fit(world["pool"])
    with pytest.raises(TypeError, match="'shadows' parameter"):
        ApolloAttack().fit(object())
    from privaudit.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        ApolloAttack().run(None, world["X"], world["y"], world["labels"])
    attack = ApolloAttack(n_rounds=2).fit(world["pool"])
    target = LabelOnlyTarget(world["model"].predict, classes=world["classes"])
    with pytest.raises(ValueError, match="'X' parameter"):
        attack.run(target, world["X"][:5], world["y"][:5], world["labels"][:5])
    with pytest.raises(ValueError, match="'bounds' parameter"):
        ApolloAttack(n_rounds=2, bounds=(1.0, 0.0)).fit(world["pool"]).run(
            target, world["X"], world["y"], world["labels"])


@pytest.fixture(scope="module")
def thin_pool():
    """Two shadows each on a fifth of 200 records: most records lack an unlearned one."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    recipe = TorchMLPRecipe(hidden=(8,), epochs=2, classes=np.arange(2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pool = ReferencePool(UnlearningRecipe(recipe, (X[:40], y[:40]), method="GA",
                                              params={"lr": 0.01, "epochs": 1}),
                             2, mode="online", train_fraction=0.2, random_state=0).fit(
            X, y, audited=np.arange(40))
    target = LabelOnlyTarget(recipe.train(X[100:], y[100:], random_state=1).predict,
                             classes=np.arange(2))
    return dict(X=X, y=y, pool=pool, target=target)


def test_online_apollo_leaves_out_records_without_both_shadows(thin_pool):
    # The pool gave some audited records no unlearned (or no never-trained) shadow: they
    # are neither searched nor asked about, and left out with a warning, instead of a
    # refusal that lost every attack of audit_unlearning with Apollo's.
    from privaudit.exceptions import DegenerateInputWarning

    X, y, pool, target = thin_pool["X"], thin_pool["y"], thin_pool["pool"], thin_pool["target"]
    n_in = pool.in_mask_[:, :40].sum(axis=0)
    both = (n_in > 0) & (n_in < 2)
    assert 0 < both.sum() < 40
    labels = np.r_[np.ones(20), np.zeros(20)].astype(np.int8)
    ids = np.arange(100, 140)
    with pytest.warns(DegenerateInputWarning, match=rf"{40 - both.sum()} of 40 records lack "
                                                    r".*left out.*at least 5"):
        result = ApolloAttack(kind="under", n_rounds=3).fit(pool).run(
            target, X[:40], y[:40], labels, record_ids=ids)
    assert result.record_ids.tolist() == ids[both].tolist()
    assert result.extra["n_left_out"] == 40 - both.sum()
    assert target.n_queries <= 3 * both.sum()  # the left-out records were never asked
    # No audited record with both sides (rows of the pool no shadow trained on): no
    # information, and nothing asked.
    never = np.flatnonzero(pool.in_mask_.sum(axis=0) == 0)[:10]
    asked = target.n_queries
    with pytest.warns(DegenerateInputWarning, match="10 of 10 records.*no information"):
        empty = ApolloAttack(kind="under", n_rounds=3).fit(pool, audited=never).run(
            target, X[never], y[never], labels[15:25])
    assert not empty.scores.any() and "too few shadows" in empty.extra["degenerate"]
    assert target.n_queries == asked and empty.queries_per_record == 0
