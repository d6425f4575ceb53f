"""A generator's shadow-run cache: a table replaced by a pickle is never unpickled."""

import json
import pickle

import numpy as np
import pandas as pd
import pytest

from privaudit._digest import file_sha256
from privaudit.exceptions import PrivauditWarning
from privaudit.synthetic import independent_marginals
from privaudit.training import GeneratorRuns

AUX = pd.DataFrame({"x": np.arange(100) % 7, "c": list("abcd") * 25})
TARGETS = pd.DataFrame({"x": [50], "c": ["z"]})


class Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def make(cache):
    return GeneratorRuns(independent_marginals, AUX, TARGETS, n_runs=4, n_train_rows=20,
                         random_state=0, cache_dir=cache).run()


@pytest.mark.parametrize("forge_manifest", [False, True])
def test_a_pickle_in_place_of_a_table_never_runs(tmp_path, forge_manifest):
    runs = make(tmp_path / "cache")
    marker = tmp_path / "pwned"
    table = runs.cache_path_ / "model-00001.parquet"
    table.write_bytes(pickle.dumps(Payload(str(marker))))
    assert not marker.exists()
    if forge_manifest:  # the attacker rewrites the hash too: the cache trusts the file
        manifest = runs.cache_path_ / "model-00001.json"
        info = json.loads(manifest.read_text())
        info["model_sha256"] = file_sha256(table)
        manifest.write_text(json.dumps(info))
        with pytest.raises(ValueError, match=r"model-00001\.parquet is not a Parquet table"):
            make(tmp_path / "cache")  # the tables are read once, as the runs finish
    else:
        with pytest.warns(PrivauditWarning, match="does not match"):
            again = make(tmp_path / "cache")
        assert again.n_made_ == 1 and len(again.synthetic_[1]) == 20
    assert not marker.exists()
