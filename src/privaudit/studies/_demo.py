"""The parts of ``privaudit demo``, one per audit kind, each runnable alone (``--only``).

Each part is a function ``(random_state, n_reference_models, n_jobs, progress) -> results``
returning the results it adds to the demo's report. An audit kind adds its part here (LLM,
synthetic data, generators, attribute inference, unlearning, DP training) and keeps the
whole demo under five minutes on two cores: the parts are independent, so
:func:`run_demo_parts` runs them side by side in two worker processes
(``benchmarks/bench_demo.py`` times each part).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from privaudit._validation import param_error

__all__ = ["DEMO_PARTS", "run_demo_parts"]


def _model_part(random_state: int, n_reference_models: int, n_jobs: int,
                progress: Any) -> list[Any]:
    """Yeom et al.'s overfitting study, then every attack on an overfit digits MLP.

    The digits audit adds the quantile screen (Bertran et al. 2023) beside the
    reference-model attacks: the same population, no reference model.
    """
    from privaudit.studies._overfitting import run_overfitting_study
    from privaudit.studies._reference import REFERENCE_STUDY_ATTACKS, run_reference_study

    say = progress if callable(progress) else (lambda message: None)
    say("Running the overfitting study")
    results = run_overfitting_study(random_state=random_state, progress=progress)
    say("Running the reference-model attacks on digits")
    results += run_reference_study(random_state=random_state,
                                   n_reference_models=n_reference_models, n_jobs=n_jobs,
                                   attacks=(*REFERENCE_STUDY_ATTACKS, "quantile"),
                                   progress=progress)
    return results


#: What the LLM part needs beyond privaudit's core: the ``llm`` extra.
_LLM_MODULES = ("torch", "transformers", "tokenizers")


def _llm_available() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in _LLM_MODULES)


def _llm_part(random_state: int, n_reference_models: int, n_jobs: int,
              progress: Any) -> list[Any]:
    """A tiny GPT-2 trained on real tweets: membership, then unlearning beside a retrain."""
    from privaudit.studies._llm_study import run_llm_study

    if not _llm_available():
        say = progress if callable(progress) else (lambda message: None)
        say("Skipping the LLM part: PyTorch, transformers and tokenizers (privaudit's "
            "'llm' extra) are not installed")
        return []
    return run_llm_study(random_state=random_state, progress=progress)


def _synthetic_part(random_state: int, n_reference_models: int, n_jobs: int,
                    progress: Any) -> list[Any]:
    """A copying generator and a Gaussian copula on the TV16 survey, every check."""
    from privaudit.studies._synthetic_study import run_synthetic_study

    return run_synthetic_study(random_state=random_state, progress=progress)


def _generator_part(random_state: int, n_reference_models: int, n_jobs: int,
                    progress: Any) -> list[Any]:
    """A copying, a plain and an epsilon = 1 generator attacked in TAPAS's game on TV16."""
    from privaudit.studies._generator_study import run_generator_study

    return run_generator_study(random_state=random_state, progress=progress)


def _unlearning_part(random_state: int, n_reference_models: int, n_jobs: int,
                     progress: Any) -> list[Any]:
    """Apollo's Table II, quick: seven unlearning algorithms, four attacks each, on TV16.

    The quick setting's 8 shadows per pool (not ``n_reference_models``): they train
    together (stacked) in this process, faster than worker processes at this size. The
    shadows are cached in a temporary folder for the run, so that the offline ones,
    the same for every algorithm, train once.
    """
    import tempfile

    from privaudit.studies._unlearning_study import run_unlearning_study

    say = progress if callable(progress) else (lambda message: None)
    say("Running the unlearning study (quick: Apollo's Table II on TV16)")
    with tempfile.TemporaryDirectory(prefix="privaudit-unlearning-") as work:
        return run_unlearning_study(quick=True, random_state=random_state,
                                    directory=work, progress=progress)


#: What the DP part needs beyond privaudit's core: the ``dp`` extra.
_DP_MODULES = ("torch", "opacus")
#: The DP part's training runs: (name, OpacusRecipe's noise keywords, the claimed epsilon).
#: Three honest DP-SGD runs, the same network without DP claiming epsilon = 1, and one
#: claiming epsilon = 1 that trains with a tenth of the noise its accountant was told.
DP_DEMO_RUNS: tuple[tuple[str, dict[str, float], float], ...] = (
    ("dp-sgd eps=1", {"target_epsilon": 1.0}, 1.0),
    ("dp-sgd eps=4", {"target_epsilon": 4.0}, 4.0),
    ("dp-sgd eps=8", {"target_epsilon": 8.0}, 8.0),
    ("no dp, claims eps=1", {"noise_multiplier": 0.0}, 1.0),
    ("mis-accounted, claims eps=1", {"target_epsilon": 1.0, "noise_scale": 0.1}, 1.0),
)


def _dp_part(random_state: int, n_reference_models: int, n_jobs: int,
             progress: Any) -> list[Any]:
    """DP-SGD (Opacus) on TV16 audited in one run with 1,000 white-box canaries each.

    An MLP (128 hidden units) on 2,000 TV16 respondents, 10 epochs at sample rate 0.5
    (20 steps), sigma calibrated by the PRV accountant to each claim, the canaries in
    1,000 Dirac slots; the bounds of the honest runs stay below their claims (f-DP: 0.36,
    1.77, 3.34 for claims 1, 4, 8), the run without DP and the mis-accounted one refute
    theirs (Steinke, Nasr and Jagielski 2023: white-box Dirac canaries are the strongest
    one-run audit). About 32 s of CPU.
    """
    import importlib.util

    say = progress if callable(progress) else (lambda message: None)
    if not all(importlib.util.find_spec(m) is not None for m in _DP_MODULES):
        say("Skipping the DP part: PyTorch and Opacus (privaudit's 'dp' extra) are not "
            "installed")
        return []
    import numpy as np

    from privaudit.audits import audit_dp_training
    from privaudit.data import load_tv16
    from privaudit.dp import OpacusRecipe

    data = load_tv16(n_rows=2000, random_state=random_state)
    dataset = (data.X.astype(np.float32), np.asarray(data.y))
    results: list[Any] = []
    for name, noise, claim in DP_DEMO_RUNS:
        say(f"Auditing DP-SGD on TV16: {name}")
        # Large Poisson batches and Dirac slots (parameters the data never moves): a
        # final-model audit is only as tight as q sqrt(T) / sigma allows (OpacusRecipe).
        recipe = OpacusRecipe("mlp", hidden=(128,), epochs=10, sample_rate=0.5,
                              dirac_slots=1000, **noise)
        results += audit_dp_training(
            recipe, dataset=dataset, claimed_epsilon={"prv": claim}, delta=recipe.delta,
            canaries="dirac-gradient", n_canaries=1000, name=name,
            random_state=random_state, dataset_name=data.name)
    return results


#: Audit kind -> the demo part that shows it, in the order the demo runs them.
DEMO_PARTS: dict[str, Callable[..., list[Any]]] = {
    "model": _model_part,
    "llm": _llm_part,
    "synthetic": _synthetic_part,
    "generator": _generator_part,
    "unlearning": _unlearning_part,
    "dp": _dp_part,
}
#: The parts as this module defines them: only these can run in worker processes (a
#: worker imports this module, so a part replaced at run time would not be the one run).
_OWN_PARTS = dict(DEMO_PARTS)
#: The parts, longest first (measured on 2 idle cores, one part at a time: model 60 s,
#: unlearning 47 s, dp ~30 s, generator 24 s, llm 20 s, synthetic 18 s): the order in
#: which workers take them.
_LONGEST_FIRST = ("model", "unlearning", "dp", "generator", "llm", "synthetic")


def _processes(n_jobs: int) -> int:
    """``n_jobs`` as a number of processes (-1: one per CPU)."""
    import os

    return (os.cpu_count() or 1) if n_jobs == -1 else max(1, n_jobs)


def _in_workers(kinds: list[str], n_jobs: int) -> int:
    """How many worker processes run the parts: 0 (none: all in this process) or 2+."""
    own = all(DEMO_PARTS.get(k) is _OWN_PARTS.get(k) for k in kinds)
    workers = min(_processes(n_jobs), len(kinds))
    return workers if own and workers >= 2 else 0


def run_demo_parts(
    only: Sequence[str] | None = None, *, random_state: int = 0, n_reference_models: int = 16,
    n_jobs: int = 2, progress: Any = None, func: str = "run_demo_parts",
) -> list[Any]:
    """Run the demo's parts (all, or the kinds named in ``only``) and return their results.

    With ``n_jobs`` of 2 or more (``privaudit demo``'s default is 2) and several parts,
    the parts run side by side in ``n_jobs`` worker processes, longest first
    (:mod:`privaudit.studies._demo_workers`): the parts are independent and each keeps
    about one core busy, so on two cores their wall time comes near half the sum of
    theirs, with the same numbers. Their messages, counted steps and warnings come back
    to ``progress`` and to this process's warning filters. With ``n_jobs=1``, or one
    part, they run here, one after the other; ``n_jobs`` is then what a part's own pool
    (the reference models) uses.

    Raises
    ------
    ValueError
        If ``only`` names a kind that has no demo part; the message lists the kinds.
    """
    kinds = list(DEMO_PARTS) if not only else list(dict.fromkeys(only))
    unknown = [k for k in kinds if k not in DEMO_PARTS]
    if unknown:
        raise param_error("--only" if func.startswith("privaudit") else "only", func,
                          f"audit kinds among {list(DEMO_PARTS)}", unknown)
    if only and "llm" in kinds and not _llm_available():
        from privaudit._optional import import_optional

        for module in _LLM_MODULES:  # the ImportError names the extra to install
            import_optional(module, extra="llm", purpose="The LLM part of the demo")
    workers = _in_workers(kinds, n_jobs)
    if workers:
        from privaudit.studies._demo_workers import run_parts_in_workers

        # One core per worker: a part's own pool (the reference models) gets what is left.
        inner = max(1, _processes(n_jobs) // workers)
        return run_parts_in_workers({k: DEMO_PARTS[k] for k in kinds},
                                    random_state=random_state,
                                    n_reference_models=n_reference_models, n_jobs=inner,
                                    n_workers=workers, progress=progress,
                                    longest_first=_LONGEST_FIRST)
    results: list[Any] = []
    for kind in kinds:
        results += DEMO_PARTS[kind](random_state, n_reference_models, n_jobs, progress)
    return results
