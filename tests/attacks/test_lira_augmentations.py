"""LiRA with augmented queries (Carlini et al. 2022, Section VI.B): augmentations, the
collection of the reference models' augmented answers, and the estimator wiring."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier

from privaudit import audit_model
from privaudit.attacks.membership import (
    HorizontalFlip,
    ImageShift,
    LiRAAttack,
    ReferenceOutputs,
    collect_reference_outputs,
    horizontal_flip,
    image_shifts,
    lira_scores,
    query_augmented,
)
from privaudit.targets import SklearnTarget, as_target
from privaudit.training import ReferenceSpec


def _slow_shift(image: np.ndarray, dy: int, dx: int) -> np.ndarray:
    """Obviously correct: out[i, j] = image[i - dy, j - dx] when inside, else 0."""
    h, w = image.shape
    out = np.zeros_like(image)
    for i in range(h):
        for j in range(w):
            si, sj = i - dy, j - dx
            if 0 <= si < h and 0 <= sj < w:
                out[i, j] = image[si, sj]
    return out


# --------------------------------------------------------------------------- augmentations


def test_image_shifts_on_a_hand_made_3x3_image():
    image = np.arange(1, 10, dtype=float).reshape(3, 3)
    shifts = image_shifts((3, 3), 1)
    assert len(shifts) == 8
    assert [(s.dy, s.dx) for s in shifts] == [
        (-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)
    ]
    by_offset = {(s.dy, s.dx): s for s in shifts}
    flat = image.reshape(1, 9)  # rows are flat, as sklearn digits are
    down = by_offset[(1, 0)](flat)
    assert down.shape == (1, 9)
    np.testing.assert_array_equal(down.reshape(3, 3), [[0, 0, 0], [1, 2, 3], [4, 5, 6]])
    left = by_offset[(0, -1)](flat)
    np.testing.assert_array_equal(left.reshape(3, 3), [[2, 3, 0], [5, 6, 0], [8, 9, 0]])
    up_right = by_offset[(-1, 1)](image[None])  # images in, images out
    assert up_right.shape == (1, 3, 3)
    np.testing.assert_array_equal(up_right[0], [[0, 4, 5], [0, 7, 8], [0, 0, 0]])
    np.testing.assert_array_equal(horizontal_flip((3, 3))(flat).reshape(3, 3),
                                  [[3, 2, 1], [6, 5, 4], [9, 8, 7]])
    assert image_shifts((3, 3), 0) == []
    assert len(image_shifts((8, 8), 2)) == 24


@settings(max_examples=40, deadline=None)
@given(h=st.integers(1, 6), w=st.integers(1, 6), n=st.integers(1, 3),
       dy=st.integers(-7, 7), dx=st.integers(-7, 7), seed=st.integers(0, 2**16))
def test_image_shift_equals_the_slow_loop(h, w, n, dy, dx, seed):
    images = np.random.default_rng(seed).normal(size=(n, h, w))
    got = ImageShift((h, w), dy, dx)(images.reshape(n, h * w)).reshape(n, h, w)
    for k in range(n):
        np.testing.assert_array_equal(got[k], _slow_shift(images[k], dy, dx))
    flip = HorizontalFlip((h, w))
    np.testing.assert_array_equal(flip(flip(images)), images)


def test_augmentations_pickle_and_validate():
    augs = [*image_shifts((8, 8), 1), horizontal_flip((8, 8))]
    assert pickle.loads(pickle.dumps(augs)) == augs
    with pytest.raises(ValueError, match="'max_shift' parameter of image_shifts"):
        image_shifts((3, 3), 3)
    with pytest.raises(ValueError, match="'image_shape' parameter of image_shifts"):
        image_shifts((8,), 1)
    with pytest.raises(ValueError, match="'X' parameter of ImageShift"):
        ImageShift((3, 3), 1, 0)(np.zeros((2, 8)))


# --------------------------------------------------------------------------- reference


@pytest.fixture(scope="module")
def small():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    perm = np.random.default_rng(0).permutation(len(X))
    aud = perm[:120]
    model = LogisticRegression(C=100.0, max_iter=300).fit(X[aud[:60]], y[aud[:60]])
    recipe = LogisticRegression(C=100.0, max_iter=300)
    augs = image_shifts((8, 8), 1)[:3]
    kwargs = {"n_models": 4, "random_state": 3}
    return {
        "X": X[aud], "y": y[aud], "target": SklearnTarget(model, name="lr"),
        "recipe": recipe, "augs": augs,
        "plain": collect_reference_outputs(recipe, X[aud], y[aud], **kwargs),
        "aug": collect_reference_outputs(recipe, X[aud], y[aud], augmentations=augs,
                                         **kwargs),
        "empty": collect_reference_outputs(recipe, X[aud], y[aud], augmentations=[],
                                           **kwargs),
        "labels": np.r_[np.ones(60, int), np.zeros(60, int)],
    }


def test_augmented_reference_stats_shape_and_identity_first(small):
    ref, X, y = small["aug"], small["X"], small["y"]
    stack = ref.signal_stack("logit_confidence")
    assert stack.shape == (4, 120, 4)
    assert ref.n_augmentations == 3
    np.testing.assert_array_equal(stack[..., 0], ref.signal("logit_confidence"))
    np.testing.assert_array_equal(stack[..., 0],
                                  small["plain"].signal("logit_confidence"))
    # Slow reference: query every model on every augmented copy separately.
    for i, model in enumerate(ref.pool.models_):
        for k, aug in enumerate(small["augs"]):
            expected = as_target(model).query(aug(X), y).signal("logit_confidence")
            np.testing.assert_allclose(stack[i, :, k + 1], expected, rtol=0, atol=1e-12)
    # The shifts change the answers (else the test would prove nothing).
    assert not np.allclose(stack[..., 1], stack[..., 0])


def test_reference_outputs_validate_the_augmented_layout(small):
    ref = small["aug"]
    with pytest.raises(ValueError, match="'augmentations' parameter of ReferenceOutputs"):
        ReferenceOutputs(audited=ref.audited, audited_in=ref.audited_in,
                         audited_augmented=ref.audited_augmented)
    with pytest.raises(ValueError, match="'audited_augmented' parameter"):
        ReferenceOutputs(audited=ref.audited, audited_in=ref.audited_in,
                         audited_augmented=ref.audited_augmented,
                         augmentations=ref.augmentations[:2])
    with pytest.raises(TypeError, match="'augmentations' parameter of collect_reference"):
        collect_reference_outputs(small["recipe"], small["X"], small["y"], n_models=2,
                                  augmentations=[1])


def test_empty_augmentation_list_equals_the_plain_path_bit_for_bit(small):
    out = small["target"].query(small["X"], small["y"])
    for online in (True, False):
        plain = LiRAAttack(online=online).fit(small["plain"]).score(outputs=out)
        attack = LiRAAttack(online=online).fit(small["empty"])
        assert attack.reference_stats_.shape == (4, 120, 1)
        empty = attack.score(small["target"], small["X"], small["y"])
        np.testing.assert_array_equal(empty, plain)
        result = attack.run(small["target"], small["X"], small["y"], small["labels"])
        assert result.extra["n_augmentations"] == 0


def test_augmented_lira_equals_its_core_and_queries_once(small):
    ref, target, X, y = small["aug"], small["target"], small["X"], small["y"]
    stats = np.stack([target.query(X, y).signal("logit_confidence")]
                     + [target.query(a(X), y).signal("logit_confidence")
                        for a in small["augs"]], axis=-1)
    attack = LiRAAttack(online=True, fix_variance=True).fit(ref)
    expected = lira_scores(stats, ref.signal_stack("logit_confidence"), ref.audited_in,
                           online=True, fix_variance=True)
    np.testing.assert_allclose(attack.score(target, X, y), expected, rtol=0, atol=1e-9)
    # Given outputs and augmented outputs, no target is needed; same scores.
    out = target.query(X, y)
    aug_out = query_augmented(target, X, y, small["augs"])
    assert len(aug_out) == 3 and all(len(o) == 120 for o in aug_out)
    np.testing.assert_array_equal(
        attack.score(outputs=out, augmented_outputs=aug_out), attack.score(target, X, y)
    )
    result = attack.run(target, X, y, small["labels"], outputs=out)
    assert result.extra["n_augmentations"] == 3
    assert result.extra["augmentations"][0] == repr(small["augs"][0])
    np.testing.assert_array_equal(result.raw_statistic, stats[:, 0])


def test_outputs_only_with_an_augmented_reference_is_refused(small):
    out = small["target"].query(small["X"], small["y"])
    attack = LiRAAttack().fit(small["aug"])
    with pytest.raises(TypeError, match=r"'target' parameter of LiRAAttack\.score"):
        attack.score(outputs=out)
    with pytest.raises(TypeError, match=r"'target' parameter of LiRAAttack\.run"):
        attack.run(outputs=out, labels=small["labels"])


def test_augmented_collection_is_deterministic_across_n_jobs(small):
    refs = [collect_reference_outputs(small["recipe"], small["X"], small["y"], n_models=2,
                                      augmentations=small["augs"], n_jobs=n_jobs,
                                      random_state=5)
            for n_jobs in (1, 2)]
    np.testing.assert_array_equal(refs[0].signal_stack("logit_confidence"),
                                  refs[1].signal_stack("logit_confidence"))
    np.testing.assert_array_equal(refs[0].audited_in, refs[1].audited_in)


# --------------------------------------------------------------------------- end to end


def test_augmented_lira_on_digits_without_training_time_augmentation(tmp_path):
    """Measured finding: shifted queries only help when the models trained on shifts.

    Carlini et al.'s gain (Section VI.B) comes from models trained with the augmentations
    they are queried on. These MLPs never saw a shifted digit (a one-pixel shift is an
    eighth of an 8x8 image): each shifted query alone scores AUC ~0.47-0.54 against 0.62
    for the record itself, so the combined score is diluted (measured 0.596 vs 0.623 with
    8 reference models). The test pins that: augmented LiRA still works, and is not better.
    """
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    perm = np.random.default_rng(0).permutation(len(X))
    members, non_members = perm[:300], perm[300:600]
    audited = np.r_[members, non_members]
    labels = np.r_[np.ones(300, int), np.zeros(300, int)]

    def mlp() -> MLPClassifier:
        return MLPClassifier((64,), alpha=0.0, max_iter=200, random_state=0)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        target = SklearnTarget(mlp().fit(X[members], y[members]), name="digits-mlp")
        kwargs = {"attacks": ["lira-online"],
                  "reference": ReferenceSpec(recipe=mlp(), n_models=8),
                  "random_state": 0, "cache_dir": tmp_path / "cache", "slices": False,
                  "check_fidelity": False}
        plain = audit_model(target, X[audited], y[audited], labels, **kwargs)[0]
        augmented = audit_model(target, X[audited], y[audited], labels,
                                augmentations=image_shifts((8, 8), 1), **kwargs)[0]
    auc_plain, auc_aug = plain.metrics(n_bootstrap=0)["auc"], augmented.metrics(
        n_bootstrap=0)["auc"]
    auc_plain = auc_plain["value"] if isinstance(auc_plain, dict) else auc_plain
    auc_aug = auc_aug["value"] if isinstance(auc_aug, dict) else auc_aug
    print(f"digits MLP(64,), 8 reference models: LiRA-online AUC plain {auc_plain:.4f}, "
          f"with 8 shifts {auc_aug:.4f}")
    assert augmented.extra["n_augmentations"] == 8
    assert "n_augmentations" not in plain.extra
    assert plain.audit.key != augmented.audit.key
    assert auc_plain > 0.6  # the attack works at all on this overfit MLP
    assert auc_aug > 0.55
    assert auc_aug <= auc_plain + 0.01


def test_audit_model_leaves_other_reference_attacks_unchanged():
    warnings.simplefilter("ignore", ConvergenceWarning)
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    perm = np.random.default_rng(1).permutation(len(X))
    aud, pop = perm[:100], perm[100:200]
    labels = np.r_[np.ones(50, int), np.zeros(50, int)]
    model = LogisticRegression(C=100.0, max_iter=300).fit(X[aud[:50]], y[aud[:50]])
    kwargs = {"population": (X[pop], y[pop]), "attacks": ["rmia", "lira-offline"],
              "reference": ReferenceSpec(n_models=4), "slices": False,
              "check_fidelity": False}
    plain = audit_model(model, X[aud], y[aud], labels, **kwargs)
    aug = audit_model(model, X[aud], y[aud], labels, augmentations=image_shifts((8, 8), 1),
                      **kwargs)
    np.testing.assert_array_equal(plain[0].scores, aug[0].scores)
    assert plain[0].audit.key == aug[0].audit.key
    assert aug[1].extra["n_augmentations"] == 8
