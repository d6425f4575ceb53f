"""Every membership attack checks its constructor parameters in ``check_params()``.

Audits (``audit_model``, ``privaudit audit model``) call it on every attack given
``attack_params`` before any query or training (issue 19: options accepted and ignored,
RMIA's ``gamma`` checked only after the reference models trained); ``fit`` calls it
before reading anything.
"""

import inspect

import numpy as np
import pytest

from privaudit.attacks import MembershipAttack, available_attacks, get_attack
from privaudit.attacks.membership import membership_attack_class

_THRESHOLD = {"threshold": "high"}
_TRAINED = {"features": ("logits",), "n_splits": 1, "tune": "yes", "random_state": "seed"}
_LIRA = {"online": "yes", "fix_variance": "always", "min_models": 1, "eps": 0.0}

#: A value each attack must refuse, for every constructor parameter it has.
BAD: dict[str, dict[str, object]] = {
    "loss": _THRESHOLD, "confidence": _THRESHOLD, "entropy": _THRESHOLD,
    "modified-entropy": _THRESHOLD,
    "gaussian-threshold": {"sigma_member": -1.0, "sigma_non_member": 0.0},
    "gap": {},
    "label-only": {"method": "hopskipjump", "n_noise": -1, "noise_scale": 0.0,
                   "image_shape": (0, 8), "max_shift": -1, "flips": "yes", "n_directions": 0,
                   "n_steps": 0, "max_distance": -1.0, "random_state": -1},
    "gradient-norm": {"params": "last", "batch_size": 0},
    "lira-online": _LIRA, "lira-offline": _LIRA,
    "rmia": {"gamma": -1.0, "offline": "yes", "offline_a": 1.5, "n_pseudo_targets": 0,
             "break_ties": "yes"},
    "shadow": {"attack_model": "svm", "max_attack_train": 1, "min_class_samples": 0,
               "random_state": -1},
    "trained-lr": _TRAINED, "trained-mlp": _TRAINED, "trained-rf": _TRAINED,
    "trained-knn": _TRAINED, "trained-gb": _TRAINED,
    "colluding": {"recipe": object()},
    "quantile": {"alpha": 0.0, "method": "normal", "max_iter": 0, "n_folds": 1,
                 "learning_rate": 0.0, "random_state": -1},
}
#: More bad values: other types, edges of the ranges, enums.
MORE_BAD = [
    ("loss", "threshold", float("nan")),
    ("quantile", "alpha", 0.7),
    ("quantile", "max_iter", 2.5),
    ("quantile", "n_folds", "three"),
    ("quantile", "learning_rate", 1.5),
    ("gaussian-threshold", "sigma_member", float("inf")),
    ("lira-online", "min_models", 2.0),
    ("lira-online", "eps", 1.0),
    ("rmia", "gamma", 0.0),
    ("rmia", "gamma", "big"),
    ("rmia", "offline_a", "auto"),
    ("rmia", "offline_a", None),
    ("rmia", "offline_a", -0.1),
    ("rmia", "n_pseudo_targets", 1.5),
    ("label-only", "image_shape", 8),
    ("label-only", "noise_scale", float("nan")),
    ("gradient-norm", "params", []),
    ("gradient-norm", "batch_size", 2.5),
    ("shadow", "attack_model", object()),
    ("shadow", "max_attack_train", 3.0),
    ("trained-lr", "n_splits", 2.0),
    ("trained-lr", "features", "loss"),
]
NAMES = [n for n in available_attacks()
         if issubclass(membership_attack_class(n), MembershipAttack)]
CASES = [(n, p, v) for n in NAMES for p, v in BAD[n].items()] + MORE_BAD
# Ids stable across processes (pytest-xdist compares them): an object's repr has its address.
IDS = [f"{n}-{p}-{v!r}" if type(v).__repr__ is not object.__repr__
       else f"{n}-{p}-<{type(v).__name__}>" for n, p, v in CASES]


def _refused(name: str, param: str, value: object) -> tuple[MembershipAttack, str]:
    cls = membership_attack_class(name)
    return cls(**{param: value}), rf"The '{param}' parameter of {cls.__name__} must be "


def test_every_registered_membership_attack_is_listed():
    assert NAMES and set(NAMES) == set(BAD)


@pytest.mark.parametrize("name", NAMES)
def test_every_constructor_parameter_has_a_bad_value(name):
    assert set(BAD[name]) == set(inspect.signature(membership_attack_class(name)).parameters)


@pytest.mark.parametrize("name", NAMES)
def test_defaults_pass(name):
    assert get_attack(name).check_params() is None
    assert membership_attack_class(name)().check_params() is None


@pytest.mark.parametrize(("name", "param", "value"), CASES,
                         ids=IDS)
def test_a_bad_value_is_refused_naming_the_parameter(name, param, value):
    attack, message = _refused(name, param, value)
    with pytest.raises((TypeError, ValueError), match=message):
        attack.check_params()


@pytest.mark.parametrize(("name", "param", "value"), CASES,
                         ids=IDS)
def test_fit_refuses_it_before_reading_anything(name, param, value):
    # No data at all: the parameter is refused first, not the missing reference/records.
    attack, message = _refused(name, param, value)
    with pytest.raises((TypeError, ValueError), match=message):
        attack.fit(None)


@pytest.mark.parametrize(("name", "params"), [
    ("loss", {"threshold": -np.inf}), ("loss", {"threshold": np.float32(0.5)}),
    ("rmia", {"offline_a": 0}), ("rmia", {"offline_a": 1.0, "offline": np.True_}),
    ("lira-offline", {"fix_variance": np.False_, "min_models": np.int64(3)}),
    ("label-only", {"image_shape": (3, 8, 8), "flips": True, "max_distance": 2}),
    ("gradient-norm", {"params": ["0.weight"], "batch_size": 16}),
    ("trained-lr", {"features": ["sorted_probabilities", "entropy"],
                    "random_state": np.random.default_rng(0)}),
])
def test_good_values_pass(name, params):
    assert membership_attack_class(name)(**params).check_params() is None
