"""Parity with anonymeter itself, run in its own environment (it pins numpy < 1.27).

``make test`` creates ``.venv-anonymeter`` (anonymeter from PyPI). Both libraries attack the
same tables, written as CSV; anonymeter's risks come back as JSON. anonymeter draws its
targets and baselines unseeded, so the two estimates are compared as intervals: they must
overlap, on a leaky table and on a safe one. anonymeter runs once for the module, on every
table of both tests (its interpreter, imports and numba kernels cost more than the attacks).
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from privaudit.studies._synthetic_study import load_tv16
from privaudit.synthetic import (
    InferenceEvaluator,
    LinkabilityEvaluator,
    SinglingOutEvaluator,
    copying_generator,
    independent_marginals,
)

ROOT = Path(__file__).resolve().parents[2]
PYTHON = Path(os.environ.get("PRIVAUDIT_ANONYMETER_PYTHON",
                             ROOT / ".venv-anonymeter" / "bin" / "python"))
N = 300
AUX = (["state", "votetrump", "age", "female", "collegeed", "racef", "famincr", "ideo",
        "pid7na", "bornagain"],
       ["religimp", "churchatd", "prayerfreq", "angryracism", "whiteadv", "fearraces",
        "racerare", "lrelig", "lcograc", "lemprac"])

SCRIPT = """
import json, sys, warnings
warnings.simplefilter("ignore")
import pandas as pd
from anonymeter.evaluators import (InferenceEvaluator, LinkabilityEvaluator,
                                   SinglingOutEvaluator)
job = json.loads(sys.argv[1])
n, aux = job["n"], job["aux"]

def tables(folder):
    return (pd.read_csv(f"{folder}/{x}.csv") for x in ("original", "synthetic", "control"))

three = {}
for folder in job["three"]:  # one process: anonymeter's numba kernels compile once
    ori, syn, ctl = tables(folder)
    rest = [c for c in ori.columns if c != "state"]
    ev = {
        "univariate": SinglingOutEvaluator(ori=ori, syn=syn, control=ctl, n_attacks=n
                                           ).evaluate(mode="univariate"),
        "linkability": LinkabilityEvaluator(ori=ori, syn=syn, aux_cols=aux, n_attacks=n,
                                            n_neighbors=10, control=ctl).evaluate(n_jobs=1),
        "inference": InferenceEvaluator(ori=ori, syn=syn, aux_cols=rest, secret="state",
                                        n_attacks=n, control=ctl).evaluate(n_jobs=1),
    }
    three[folder] = {k: [e.risk().value, *e.risk().ci] for k, e in ev.items()}
multi = {}
for folder, n_cols, seed in job["multi"]:
    ori, syn, ctl = tables(folder)
    risk = SinglingOutEvaluator(ori=ori, syn=syn, control=ctl, n_attacks=n, n_cols=n_cols,
                                seed=seed).evaluate(mode="multivariate").risk()
    multi[f"{folder}|{n_cols}"] = [risk.value, *risk.ci]
print(json.dumps({"three": three, "multi": multi}))
"""
#: The tables of the first test: a generator copying half its rows, and one that does not.
GENERATORS = {"copying": lambda original: copying_generator(original, N, copy_fraction=0.5,
                                                            random_state=11),
              "marginals": lambda original: independent_marginals(original, N, random_state=0)}
#: Leakage levels of the second test (the share of synthetic rows copied from the training
#: rows), and the widths of its multivariate predicates (each drawn with its own seed).
LEAKS = (0.0, 0.25, 0.5)
N_COLS = (3, 4)


def _write(folder, original, synthetic, control):
    folder.mkdir()
    for name, frame in (("original", original), ("synthetic", synthetic),
                        ("control", control)):
        frame.to_csv(folder / f"{name}.csv", index=False)


@pytest.fixture(scope="module")
def anonymeter_risks(tmp_path_factory):
    """Every table of the module written as CSV, and anonymeter's risks on them.

    Returns the folder of each table and anonymeter's ``{"three": {folder: {evaluator:
    [risk, low, high]}}, "multi": {"folder|n_cols": [risk, low, high]}}``.
    """
    if not PYTHON.exists():
        pytest.fail(f"anonymeter's environment is missing ({PYTHON}): run `make test`, which "
                    "creates it (python3 -m venv .venv-anonymeter && "
                    ".venv-anonymeter/bin/pip install anonymeter).")
    root = tmp_path_factory.mktemp("anonymeter")
    original, control = load_tv16(N, random_state=6)
    folders = {}
    for name, generate in GENERATORS.items():
        folders[name] = root / name
        _write(folders[name], original, generate(original), control)
    for leak in LEAKS:
        name = f"copy{int(100 * leak)}"
        folders[name] = root / name
        _write(folders[name], original,
               copying_generator(original, N, copy_fraction=leak, random_state=11), control)
    job = {"n": N, "aux": AUX, "three": [str(folders[g]) for g in GENERATORS],
           "multi": [[str(folders[f"copy{int(100 * leak)}"]), n_cols, n_cols]
                     for leak in LEAKS for n_cols in N_COLS]}
    done = subprocess.run([str(PYTHON), "-c", SCRIPT, json.dumps(job)], capture_output=True,
                          text=True, timeout=1200, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return folders, json.loads(done.stdout.strip().splitlines()[-1])


def _read(folder):
    import pandas as pd

    return [pd.read_csv(folder / f"{n}.csv") for n in ("original", "synthetic", "control")]


def _ours(original, synthetic, control):
    rest = [c for c in original.columns if c != "state"]
    evaluators = {
        "univariate": SinglingOutEvaluator(original, synthetic, control=control, n_attacks=N,
                                           random_state=0).evaluate(mode="univariate"),
        "linkability": LinkabilityEvaluator(original, synthetic, aux_cols=AUX, n_attacks=N,
                                            n_neighbors=10, control=control,
                                            random_state=0).evaluate(),
        "inference": InferenceEvaluator(original, synthetic, aux_cols=rest, secret="state",
                                        n_attacks=N, control=control,
                                        random_state=0).evaluate(),
    }
    return {k: list(e.risk()) for k, e in evaluators.items()}


def test_risks_agree_with_anonymeter_within_their_intervals(anonymeter_risks):
    folders, anonymeter = anonymeter_risks
    # Read back as anonymeter reads them.
    ours = {str(folders[g]): _ours(*_read(folders[g])) for g in GENERATORS}
    theirs = anonymeter["three"]
    for folder, risks in ours.items():
        for name, a in risks.items():
            b = theirs[folder][name]
            assert a[1] <= b[2] + 1e-9 and b[1] <= a[2] + 1e-9, (folder, name, a, b)
    leaky = str(folders["copying"])
    assert ours[leaky]["linkability"][0] > 0.1 and theirs[leaky]["linkability"][0] > 0.1


#: How far below anonymeter privaudit's multivariate risk may lie, on average over the
#: six cases (each risk's standard error is about 0.04 at 300 attacks: 0.06 is about
#: three standard errors of the mean difference; issue 19's under-report was 0.1).
UNDER_TOLERANCE = 0.06


def test_multivariate_singling_out_agrees_with_anonymeter_at_three_leakage_levels(
        anonymeter_risks):
    """0%, 25% and 50% copied rows, n_cols 3 and 4: the intervals overlap case by case,
    and privaudit is on average not below anonymeter by more than UNDER_TOLERANCE."""
    folders, anonymeter = anonymeter_risks
    ours = {}
    for leak in LEAKS:
        folder = folders[f"copy{int(100 * leak)}"]
        ori, syn, ctl = _read(folder)
        for n_cols in N_COLS:
            risk = SinglingOutEvaluator(ori, syn, control=ctl, n_attacks=N, n_cols=n_cols,
                                        random_state=n_cols).evaluate().risk()
            ours[f"{folder}|{n_cols}"] = [risk.value, *risk.ci]
    theirs = anonymeter["multi"]
    for case, a in ours.items():
        b = theirs[case]
        assert a[1] <= b[2] + 1e-9 and b[1] <= a[2] + 1e-9, (case, a, b)
    gaps = [ours[c][0] - theirs[c][0] for c in ours]
    assert sum(gaps) / len(gaps) > -UNDER_TOLERANCE, gaps
    # The leak is seen by both: half the rows copied is riskier than none.
    for n_cols in N_COLS:
        safe, leaky = (f"{folders[f'copy{p}']}|{n_cols}" for p in (0, 50))
        assert ours[leaky][0] > ours[safe][0] + 0.1 and theirs[leaky][0] > theirs[safe][0] + 0.1
