"""The one check of the ReferenceSpec fields a kind fixes itself (unlearning, generator)."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from privaudit.audits._inputs import reference_fields_set
from privaudit.training import ReferenceSpec


@pytest.mark.parametrize(("spec", "besides", "expected"), [
    (ReferenceSpec(), (), []),
    (ReferenceSpec(n_models=8), ("n_models",), []),
    (ReferenceSpec(n_models=8, mode="offline"), ("n_models",), ["mode"]),
    (ReferenceSpec(mode="online", train_fraction=0.3), ("mode",), ["train_fraction"]),
    (ReferenceSpec(to_target=repr), ("recipe", "n_models"), ["to_target"]),
])
def test_fields_set_beyond_those_a_kind_reads(spec, besides, expected):
    assert reference_fields_set(spec, besides=besides) == expected


@pytest.mark.parametrize("field", [{"mode": "offline"}, {"train_fraction": 0.4}])
def test_unlearning_refuses_a_pool_field_it_fixes_itself(field):
    from privaudit.audits import audit_unlearning

    X = np.zeros((10, 2), np.float32)
    with pytest.raises(ValueError, match=r"'reference' parameter of audit_unlearning.*without "
                                         r"mode, train_fraction or to_target"):
        audit_unlearning(object(), (X, np.zeros(10)), (X + 1, np.zeros(10)), method="GA",
                         population=(X + 2, np.zeros(10)),
                         reference=ReferenceSpec(recipe=LogisticRegression(), n_models=4,
                                                   **field))
