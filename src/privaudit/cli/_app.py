"""Typer application behind the ``privaudit`` command.

One error boundary serves every command: an error the user can fix (a wrong key, an
unreadable file, a bad column, a path that is a file) is printed as ONE line naming the
file, the column or the key, with exit code 2; so is a library's crash on an input (a
Rust panic, which is not an ``Exception``; a ``RecursionError`` or ``MemoryError``),
naming the command and the file being read. ``privaudit --debug ...`` shows the
traceback instead. Other exceptions (bugs) keep their traceback; ``KeyboardInterrupt``
and ``SystemExit`` behave as usual. Warnings are one line each, identical ones once
(:mod:`privaudit.cli._warnings`).

Every command that writes a report ends the same way: the report's overview (one answer
per audited artefact, :mod:`privaudit.cli._summary`), the detailed tables with
``--verbose``, and the report's path.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from privaudit.cli._card import card_command, log_command


def _user_errors() -> tuple[type[BaseException], ...]:
    """Exception types that describe bad input (the user's to fix), not a bug."""
    import zipfile

    return (ValueError, TypeError, OSError, ImportError, zipfile.BadZipFile)


def error_line(exc: BaseException) -> str:
    """Describe ``exc`` in one line: its message, or the file an OSError names."""
    from privaudit.cli._config import ConfigError

    if isinstance(exc, OSError) and exc.filename is not None:
        text = f"{exc.strerror or type(exc).__name__}: {str(exc.filename)!r}"
        if exc.filename2 is not None:
            text += f" -> {str(exc.filename2)!r}"
    else:
        text = " ".join(str(exc).split()) or type(exc).__name__
        module = type(exc).__module__
        if module != "builtins" and not module.startswith("privaudit"):
            text = f"{type(exc).__name__}: {text}"  # e.g. BadZipFile, EmptyDataError
    if not isinstance(exc, ConfigError) and not _raised_by_privaudit(exc):
        text += " (privaudit --debug ... shows the traceback)"
    return text


def _raised_by_privaudit(exc: BaseException) -> bool:
    """Whether privaudit's own checks raised ``exc`` (their message is complete)."""
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    package = str(Path(__file__).parent.parent)  # the privaudit package: cli/_app.py is in it
    return tb.tb_frame.f_code.co_filename.startswith(package)


class _ErrorBoundary(TyperGroup):
    """The root group: the user's errors of any command are one line, exit 2.

    Warnings raised while a command runs are one line each too
    (:func:`privaudit.cli._warnings.terminal_warnings`).
    """

    def invoke(self, ctx: Any) -> Any:
        from privaudit.cli._warnings import printable, terminal_warnings

        try:
            with terminal_warnings():  # one line per warning, identical ones once
                return super().invoke(ctx)
        except _user_errors() as exc:
            if ctx.params.get("debug"):
                raise
            typer.echo(f"Error: {printable(error_line(exc))}", err=True)
            raise typer.Exit(2) from None
        except BaseException as exc:
            # A library's crash on an input (a Rust panic, a RecursionError on a deeply
            # nested file, a MemoryError): one line naming the command and the file too.
            # Interrupts, exits and privaudit's own bugs keep their behaviour.
            from privaudit.cli._errors import crash_line, is_crash

            if not is_crash(exc) or ctx.params.get("debug"):
                raise
            typer.echo(f"Error: {printable(crash_line(exc))}", err=True)
            raise typer.Exit(2) from None


app = typer.Typer(
    name="privaudit",
    cls=_ErrorBoundary,
    help=(
        "Measure how much a trained model, LLM, unlearned model or synthetic dataset "
        "leaks about the records it was built from."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option(
        "--debug", envvar="PRIVAUDIT_DEBUG",
        help="Show the full traceback of an error instead of one line.")] = False,
) -> None:
    """Options shared by every command (read by the error boundary)."""


#: ``--verbose``, shared by every command that writes a report.
Verbose = Annotated[bool, typer.Option(
    "--verbose", "-v", help="After the overview (one answer per audited artefact), print "
    "every detailed table: each attack's metrics, closeness checks, risks, attributes.")]


#: ``--gate``, shared by every audit command.
GatePolicy = Annotated[Path | None, typer.Option(
    "--gate", metavar="POLICY", help="A gate policy (YAML, see privaudit gate): read "
    "before the audit, checked on its results after it; the exit code is the gate's "
    "(0 every budget kept, 1 one exceeded).")]
#: ``--gate-junit``: where ``--gate`` writes its checks as JUnit XML.
GateJunit = Annotated[Path | None, typer.Option(
    "--gate-junit", metavar="PATH", help="With --gate: write the checks as JUnit XML here "
    "(one test case per check).")]


def _check_options(command: str, **options: Any) -> None:
    """Refuse bad numeric options and output folders before any work."""
    from privaudit._validation import N_JOBS, N_REFERENCE_MODELS, check_directory, check_int

    func = f"privaudit {command}"
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if name in ("out",):
            check_directory(value, param=flag, func=func)
        elif name == "n_jobs":
            N_JOBS.check(value, param=flag, func=func)
        elif name == "n_reference_models":
            N_REFERENCE_MODELS.check(value, param=flag, func=func)
        else:
            check_int(value, param=flag, func=func, low=0)
        _check_at_most(name, value, flag, func)


def _check_at_most(name: str, value: Any, flag: str, func: str) -> None:
    """Counts above the configuration's limits (:mod:`._sections`) are refused too."""
    from privaudit._validation import param_error
    from privaudit.cli._sections import MAX_N_BOOTSTRAP, MAX_N_MODELS

    high = {"n_bootstrap": MAX_N_BOOTSTRAP, "n_reference_models": MAX_N_MODELS}.get(name)
    if high is not None and value > high:
        raise param_error(flag, func, f"at most {high:,} (privaudit's limit)", value)


def _console():  # rich is light but only needed when a command runs
    import sys

    from rich.console import Console

    # Off a terminal (CI logs, pipes) rich assumes 80 columns and wraps the table badly.
    return Console(stderr=True, width=None if sys.stderr.isatty() else 140)


def _progress(console, status: str = "Working..."):
    """Progress of a command: rich bars on a terminal, plain log lines elsewhere.

    On a terminal, a bar per long step under a status line showing the latest message;
    off a terminal (CI logs, pipes), one timestamped line per message and per step.
    """
    from privaudit._progress import console_progress

    return console_progress(console, status=status)


@app.command()
def version() -> None:
    """Print the privaudit version."""
    from privaudit._version import __version__

    typer.echo(__version__)


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory for the report.")] = Path(
        "demo-report"
    ),
    seed: Annotated[int, typer.Option(help="Random seed: same seed, same numbers.")] = 0,
    n_bootstrap: Annotated[
        int, typer.Option(help="Bootstrap resamples for the confidence intervals.")
    ] = 1000,
    n_reference_models: Annotated[
        int, typer.Option(help="Reference models for LiRA, RMIA and the shadow attack.")
    ] = 16,
    n_jobs: Annotated[
        int, typer.Option(help="Worker processes: the demo's parts run side by side in "
                               "this many (1: one after the other), and train the "
                               "reference models.")
    ] = 2,
    only: Annotated[
        list[str] | None,
        typer.Option("--only", metavar="KIND",
                     help="Run only these audit kinds' parts of the demo (comma-separated, "
                          "or repeated): model, llm, synthetic, generator, unlearning, "
                          "dp."),
    ] = None,
    verbose: Verbose = False,
) -> None:
    """Audit models trained on real offline data and write a report.

    model: the overfitting study of Yeom et al.: an overfit and a regularised model, for a
    regression task (loans' interest rates) and a many-class classification task (party
    identification in the TV16 survey), attacked with black-box attacks; the overfit
    models leak clearly more. Then an overfit MLP on sklearn digits, attacked with the
    reference-model attacks too (Shokri, trained attacks, LiRA, RMIA).

    llm: a tiny GPT-2 trained from scratch on real tweets, its training tweets told from
    held-out ones by every LLM statistic beside a blind baseline; then gradient-ascent
    unlearning of 75 tweets, judged against a model retrained without them (PrivLeak).

    synthetic: the TV16 survey given to a generator that copies some of its training
    records and to a Gaussian copula; exact matches, IMS, DCR and NNDR beside unseen real
    records, distinguishability and anonymeter's risks tell them apart.

    generator: TAPAS's game on TV16: a copying generator, a Gaussian copula and an
    epsilon = 1 Bayesian network trained hundreds of times, each of three vulnerable records
    in half the runs, attacked (closest distance, DOMIAS, Groundhog); the copier refutes
    an epsilon = 1 claim, the DP generator keeps it.

    unlearning: Apollo's Table II, quick: an MLP on TV16 unlearns 100 of its training
    records with each of seven algorithms (RT, FT, GA, BT, SCRUB, SalUn, SFR-on), attacked
    with U-MIA, U-LiRA, Apollo and Apollo offline; exact retraining (RT) stays near chance.

    dp: DP-SGD (Opacus) on TV16 at claimed epsilon 1, 4 and 8, without DP, and
    mis-accounted (a tenth of the noise its accountant was told), each audited in one run
    with 1,000 Dirac canaries (Steinke et al.'s one-run bound, Mahloujifar et al.'s f-DP
    bound); the honest runs stay below their claims, the other two refute epsilon = 1.
    """
    _check_options("demo", out=out, seed=seed, n_bootstrap=n_bootstrap,
                   n_reference_models=n_reference_models, n_jobs=n_jobs)
    from privaudit.report import build_report
    from privaudit.studies import DEMO_PARTS, run_demo_parts

    only = _demo_parts(only, DEMO_PARTS)
    console = _console()
    started = time.perf_counter()
    with _progress(console) as progress:
        results = run_demo_parts(only, random_state=seed,
                                 n_reference_models=n_reference_models, n_jobs=n_jobs,
                                 progress=progress, func="privaudit demo")
        progress.message("Writing the report")
        index = build_report(
            results, out, n_bootstrap=n_bootstrap, random_state=seed, progress=progress,
            title="privaudit demo: what models, language models, synthetic data, "
                  "generators and unlearned models leak",
        )
    _finish(console, out, index, verbose=verbose, results=results, seed=seed,
            note=f"  (results.json beside it; {time.perf_counter() - started:.0f} s)")


def _demo_parts(only: list[str] | None, parts: Any) -> list[str] | None:
    """``--only`` as a list of demo parts: comma-separated or repeated, checked up front."""
    if only is None:
        return None
    names = [n.strip() for value in only for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in parts]
    if unknown or not names:  # before any work: one readable line
        from privaudit._validation import param_error

        raise param_error("--only", "privaudit demo",
                          f"audit kinds among {list(parts)}, comma-separated or repeated",
                          unknown or only)
    return list(dict.fromkeys(names))


@app.command()
def report(
    results_dirs: Annotated[
        list[Path], typer.Argument(help="Directories holding saved results (searched recursively).")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory for the report.")] = Path(
        "audit-report"
    ),
    n_bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples for the CIs.")] = 1000,
    seed: Annotated[int, typer.Option(help="Random seed of the bootstrap.")] = 0,
    verbose: Verbose = False,
) -> None:
    """Rebuild the reports (HTML, JSON, CSV, plots) from saved results."""
    _check_options("report", out=out, n_bootstrap=n_bootstrap, seed=seed)
    from privaudit.report import build_report

    _check_report_out(results_dirs, out)
    results = _saved_results(results_dirs)
    console = _console()
    with _progress(console, status="Bootstrapping...") as progress:
        index = build_report(results, out, n_bootstrap=n_bootstrap, random_state=seed,
                             progress=progress)
    _finish(console, out, index, verbose=verbose, results=results, seed=seed)


def _check_report_out(results_dirs: list[Path], out: Path) -> None:
    """Refuse ``--out`` inside an input folder: its copies would be read twice next time.

    ``--out`` may be an input folder that is a report (it holds ``results/``): the
    rebuild writes each result back where it was read.
    """
    from privaudit.cli._errors import ConfigError

    target = out.resolve()
    for folder in results_dirs:
        root = folder.resolve()
        if root.is_dir() and (target == root or root in target.parents):
            if target == root and (root / "results").is_dir():
                continue
            raise ConfigError(
                f"--out {str(out)!r} is {'the' if target == root else 'inside the'} "
                f"results folder {str(folder)!r}: the report would copy the results into "
                "its own input, and the next rebuild would read each twice. Give --out a "
                "folder outside it.")


def _saved_results(results_dirs: list[Path], *, strict: bool = False) -> list[Any]:
    """Every saved result under the folders; none left is one line saying why.

    ``strict`` (the gate): a damaged, edited or linked-out result is one line naming it,
    not a warning and a decision on the others: a CI gate that skipped the one result it
    could not read would pass the build on the rest.
    """
    import warnings

    from privaudit.cli._errors import ConfigError, one_line
    from privaudit.results import DamagedResultWarning, ResultFileError, load_all_results

    missing = [str(folder) for folder in results_dirs if not folder.exists()]
    if missing:
        raise ConfigError(f"The results folder {missing[0]!r} does not exist.")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DamagedResultWarning)
        try:
            results = load_all_results(results_dirs, strict=strict)
        except FileNotFoundError:
            results = []
        except ResultFileError as exc:
            raise ConfigError(f"The gate reads every result or none, and one cannot be "
                              f"read: {one_line(exc)}") from None
    damaged = [w for w in caught if issubclass(w.category, DamagedResultWarning)]
    if not results and damaged:  # the line says it all: no warning before it
        first = one_line(damaged[0].message).removeprefix("Skipped the damaged result ")
        raise ConfigError(f"{len(damaged)} saved result(s) skipped as damaged, none left to "
                          f"report. The first: {first}")
    for w in caught:  # shown as they would have been
        warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    if not results:
        raise ConfigError("There are no saved results (result.json, risk.json, "
                          "proximity.json) to report: no saved results found under "
                          f"{', '.join(map(str, results_dirs))}.")
    return results


@app.command("gate")
def gate_command(
    results_dirs: Annotated[list[Path], typer.Argument(
        help="Folders holding saved results, or reports (searched recursively).")],
    policy: Annotated[Path, typer.Option(
        "--policy", "-p", help="The policy (YAML): budgets per metric, per target, attack "
        "or audit kind.")],
    basis: Annotated[str | None, typer.Option(
        help="lower: a budget is exceeded when the lower end of the metric's 95% interval "
        "is above it; point: the point estimate (default: the policy's basis).")] = None,
    junit: Annotated[Path | None, typer.Option(
        help="Write the checks as JUnit XML here (one test case per check).")] = None,
    strict: Annotated[bool, typer.Option(
        "--strict", help="A budget that covers no result is an error (exit 2), not a "
        "warning.")] = False,
    n_bootstrap: Annotated[int | None, typer.Option(help="Bootstrap resamples for the "
                                                    "intervals (default: the report's own, "
                                                    "else 1000).")] = None,
    seed: Annotated[int | None, typer.Option(help="Random seed of the bootstrap (default: "
                                             "the report's own, else 0).")] = None,
) -> None:
    """Check a policy's privacy budgets on saved results, for CI.

    Prints every check (pass, fail, or warn when unmeasurable), writes JUnit XML with
    --junit, and exits 0 when every budget is kept, 1 when one is exceeded, 2 on bad
    input (an unknown metric, a budget outside its metric's range, an unreadable file).
    The reference: docs/ci_gate.md.
    """
    _check_options("gate", **{key: value for key, value in (
        ("seed", seed), ("n_bootstrap", n_bootstrap)) if value is not None})
    from privaudit.cli._gate import check_basis, check_junit, read_policy, run_gate

    check_basis(basis, "privaudit gate")
    check_junit(junit, "--junit")
    checked = read_policy(policy)  # before reading any result: a bad policy is one line
    code = run_gate(_console(), _saved_results(results_dirs, strict=True), checked, basis=basis,
                    junit=junit, strict=strict, n_bootstrap=n_bootstrap, seed=seed)
    if code:
        raise typer.Exit(code)


# The model card and the trackers (issue 24): privaudit.integrations behind two commands.
app.command("card")(card_command)
app.command("log")(log_command)


def _read_gate_policy(path: Path | None, junit: Path | None = None) -> Any:
    """``--gate``'s policy, validated before the audit runs (None: no gate)."""
    if path is None:
        if junit is not None:
            from privaudit.cli._errors import ConfigError

            raise ConfigError("--gate-junit needs --gate POLICY (the policy to check).")
        return None
    from privaudit.cli._gate import check_junit, read_policy

    check_junit(junit, "--gate-junit")
    return read_policy(path)


def _gate_report(console: Any, policy: Any, out: Path, junit: Path | None = None) -> None:
    """After an audit with ``--gate``: gate the report's results; exit with the gate's code.

    Only the results of the report just written (its manifest's folders): a result an
    earlier audit left in the same ``--out`` is not this audit's, and would fail (or
    cover a budget for) an artefact the report does not show.
    """
    if policy is None:
        return
    from privaudit.cli._gate import run_gate
    from privaudit.results import report_settings

    own = report_settings(out)  # the bootstrap the report just written recorded
    code = run_gate(console, _saved_results(_reported_folders(out), strict=True), policy,
                    junit=junit, n_bootstrap=own["n_bootstrap"], seed=own["random_state"])
    if code:
        raise typer.Exit(code)


def _reported_folders(out: Path) -> list[Path]:
    """The result folders the report in ``out`` lists (its manifest), all inside ``out``."""
    from privaudit._files import check_inside
    from privaudit.cli._errors import ConfigError
    from privaudit.results import read_report_manifest

    manifest = read_report_manifest(out)
    if manifest is None:
        raise ConfigError(f"The report in {out} has no readable manifest (report.json): "
                          "the gate cannot tell this audit's results from others.")
    for folder in manifest["folders"]:
        check_inside(folder, out, what="a result folder of the report")
    return manifest["folders"]


audit_app = typer.Typer(help="Audit an artefact described by a configuration file.",
                        no_args_is_help=True)
app.add_typer(audit_app, name="audit")
study_app = typer.Typer(help="Reproduce a study of the literature on real offline data.",
                        no_args_is_help=True)
app.add_typer(study_app, name="study")


@study_app.command("overfitting")
def study_overfitting_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Report directory.")] = Path(
        "overfitting-study"),
    seed: Annotated[int, typer.Option(help="Random seed: same seed, same numbers.")] = 0,
    n_bootstrap: Annotated[
        int, typer.Option(help="Bootstrap resamples for the confidence intervals.")
    ] = 1000,
    verbose: Verbose = False,
) -> None:
    """Does overfitting drive membership and attribute inference? Yeom et al. vs Zhao et al.

    An overfit and a regularised model for a regression task (loans' interest rates; the
    sensitive attribute: home ownership), a many-class classification task (TV16's party
    identification; sex) and images (sklearn's digits; the centre pixel), each attacked
    for membership and for its sensitive attribute, beside the theory's predictions and
    the values the source paper reports, with a conclusion written from the numbers.
    """
    _check_options("study overfitting", out=out, seed=seed, n_bootstrap=n_bootstrap)
    from privaudit.report import build_report
    from privaudit.studies import run_overfitting_study

    console = _console()
    with _progress(console, status="Training and attacking...") as progress:
        # The progress itself, not its message method: the audits' counted steps are then
        # bars (one line each off a terminal), not a message per count.
        results = run_overfitting_study(random_state=seed, progress=progress)
        index = build_report(results, out, n_bootstrap=n_bootstrap, random_state=seed,
                             progress=progress,
                             title="Overfitting, membership and attribute inference")
    _finish(console, out, index, verbose=verbose, results=results, seed=seed)


@study_app.command("unlearning")
def study_unlearning_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Report directory (also holds "
                                      "the cached shadows and finished results).")] = Path(
        "unlearning-study"),
    quick: Annotated[bool, typer.Option(
        "--quick", help="Half the records, a smaller MLP, 8 shadows (about 30 s).")] = False,
    seed: Annotated[int, typer.Option(help="Random seed: same seed, same numbers.")] = 0,
    n_bootstrap: Annotated[
        int, typer.Option(help="Bootstrap resamples for the confidence intervals.")
    ] = 1000,
    n_jobs: Annotated[
        int, typer.Option(help="Worker processes training the shadows (1: inline).")
    ] = 2,
    verbose: Verbose = False,
) -> None:
    """Do unlearned models forget? Apollo's Table II at a small scale, on TV16.

    An MLP trained on 2,000 TV16 respondents unlearns 200 of them with each algorithm
    (RT, FT, GA, BT, SCRUB, SalUn, SFR-on); U-MIA, U-LiRA, Apollo and Apollo offline tell
    the forgotten records from 200 never seen, with 16 shadows. Exact retraining (RT) is
    the sanity row: every attack near chance. The report shows the table beside the
    paper's. Shadows and finished results are kept under --out: a rerun resumes.
    """
    _check_options("study unlearning", out=out, seed=seed, n_bootstrap=n_bootstrap,
                   n_jobs=n_jobs)
    from privaudit.report import build_report
    from privaudit.studies import run_unlearning_study

    console = _console()
    with _progress(console, status="Unlearning and attacking...") as progress:
        results = run_unlearning_study(quick=quick, random_state=seed, directory=out,
                                       n_jobs=n_jobs, progress=progress)
        index = build_report(results, out, n_bootstrap=n_bootstrap, random_state=seed,
                             progress=progress,
                             title="Machine unlearning: Apollo's Table II on TV16")
    if verbose:
        console.print(_accuracy_table(results))
    _finish(console, out, index, verbose=verbose, results=results, seed=seed)


@audit_app.command("model")
def audit_model_command(
    config: Annotated[Path, typer.Option("--config", "-c", help="The audit's YAML file.")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Report directory (overrides report.out).")
    ] = None,
    verbose: Verbose = False,
    gate_policy: GatePolicy = None,
    gate_junit: GateJunit = None,
) -> None:
    """Run membership attacks against a saved model, as the YAML configuration says.

    The configuration names the model file (scikit-learn, saved with skops: never
    unpickled), the audited records with their membership column (CSV or Parquet), the
    population, the attacks, the reference models and the executor. Finished attacks and
    trained reference models are saved as they complete; a rerun resumes.
    """
    from privaudit.cli._config import load_audit_config, run_audit_config

    if out is not None:
        _check_options("audit model", out=out)
    policy = _read_gate_policy(gate_policy, gate_junit)
    console = _console()
    cfg = load_audit_config(config)
    out_dir = out or cfg.out
    with _progress(console, status="Auditing...") as progress:
        index = run_audit_config(cfg, out=out_dir, progress=progress)
    _finish(console, out_dir, index, verbose=verbose, seed=cfg.random_state)
    _gate_report(console, policy, out_dir, gate_junit)


@audit_app.command("llm")
def audit_llm_command(
    model: Annotated[Path | None, typer.Option(
        "--model", help="The audited model's local folder (safetensors, no hub).")] = None,
    members: Annotated[Path | None, typer.Option(
        help="Texts the model trained on (.txt, .jsonl or .csv).")] = None,
    non_members: Annotated[Path | None, typer.Option(
        help="Texts it did not train on, from the same distribution.")] = None,
    forget: Annotated[Path | None, typer.Option(
        help="The forget set of an unlearned model (instead of --members).")] = None,
    holdout: Annotated[Path | None, typer.Option(
        help="Held-out texts never trained on (instead of --non-members).")] = None,
    reference: Annotated[Path | None, typer.Option(
        help="A reference model's folder (same tokenizer), for the reference statistic.")
    ] = None,
    retrained: Annotated[Path | None, typer.Option(
        help="A model retrained without the forget set, for MUSE's PrivLeak.")] = None,
    attacks: Annotated[str | None, typer.Option(
        help="Comma-separated statistics (default: loss,min-k,min-k-plus-plus,zlib).")
    ] = None,
    checks: Annotated[str | None, typer.Option(
        "--checks", help="Memorisation checks, comma-separated: k-extractability, "
        "longest-common-prefix, extraction-strength, exact-memorization, verbmem, exposure "
        "(their settings in --config).")] = None,
    text_column: Annotated[str, typer.Option(
        help="The text column of .csv / .jsonl files.")] = "text",
    blind_baseline: Annotated[bool, typer.Option(
        "--blind-baseline/--no-blind-baseline",
        help="Run the blind baseline (a classifier on the texts alone).")] = True,
    config: Annotated[Path | None, typer.Option(
        "--config", "-c", help="A YAML file instead of the options.")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Report directory.")] = None,
    verbose: Verbose = False,
    gate_policy: GatePolicy = None,
    gate_junit: GateJunit = None,
) -> None:
    """Was this text in training? Did unlearning forget it? LLM membership inference.

    Scores every text once (LOSS, Min-K%, Min-K%++, zlib, and the others asked for), beside
    a blind baseline that reads the texts alone, and writes the standard report with a
    language-model section.
    """
    from privaudit.cli._llm import llm_run, run_llm_audit

    run = llm_run(config, model=model, texts={
        "members": members, "non_members": non_members, "forget": forget,
        "holdout": holdout}, text_column=text_column, reference=reference,
        retrained=retrained, attacks=attacks, blind_baseline=blind_baseline, checks=checks)
    _run_and_report("audit llm", run, out, run_llm_audit, verbose, "Scoring texts...",
                    gate=(gate_policy, gate_junit))


@audit_app.command("synthetic")
def audit_synthetic_command(
    synthetic: Annotated[Path | None, typer.Option(
        help="The synthetic table (CSV or Parquet).")] = None,
    original: Annotated[Path | None, typer.Option(
        help="The real records the generator was trained on.")] = None,
    holdout: Annotated[Path | None, typer.Option(
        help="Real records the generator never saw: the baseline of the closeness checks."
    )] = None,
    control: Annotated[Path | None, typer.Option(
        help="anonymeter's control set (default: the holdout).")] = None,
    metadata: Annotated[Path | None, typer.Option(
        help="Column kinds, SDV single-table JSON (default: inferred).")] = None,
    checks: Annotated[str | None, typer.Option(
        help="Comma-separated checks (default: all).")] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", "-c", help="A YAML file instead of the options.")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Report directory.")] = None,
    verbose: Verbose = False,
    gate_policy: GatePolicy = None,
    gate_junit: GateJunit = None,
) -> None:
    """Does this synthetic table give away its training records? Closeness and risks.

    Exact matches, IMS, DCR and NNDR beside unseen real records, distinguishability, and
    anonymeter's singling-out, linkability and inference risks; writes the standard report
    with a synthetic-data section.
    """
    from privaudit.cli._synthetic import run_synthetic_audit, synthetic_run

    run = synthetic_run(config, tables={"synthetic": synthetic, "original": original,
                                        "holdout": holdout, "control": control},
                        metadata=metadata, checks=checks)
    _run_and_report("audit synthetic", run, out, run_synthetic_audit, verbose,
                    "Checking the synthetic table...",
                    gate=(gate_policy, gate_junit))


@audit_app.command("generator")
def audit_generator_command(
    config: Annotated[Path, typer.Option(
        "--config", "-c", help="The YAML configuration (data, generators, game, attacks).")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Report directory.")] = None,
    verbose: Verbose = False,
    gate_policy: GatePolicy = None,
    gate_junit: GateJunit = None,
) -> None:
    """Does a generator's output tell which records trained it? TAPAS's game.

    Trains each generator many times on training sets drawn from the data, each target
    record in half of them, attacks the synthetic tables (Groundhog, closest distance,
    local neighbourhood, DOMIAS), and tests any differential-privacy claim against the
    effective-epsilon lower bound; writes the standard report with a generator section.
    """
    from privaudit.cli._generator import load_generator_config, run_generator_audit

    run = load_generator_config(config)
    _run_and_report("audit generator", run, out, run_generator_audit, verbose,
                    "Running the generators...",
                    gate=(gate_policy, gate_junit))


@audit_app.command("attribute")
def audit_attribute_command(
    config: Annotated[Path, typer.Option(
        "--config", "-c", help="The YAML configuration (target, data, population, "
        "sensitive, attacks).")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Report directory.")] = None,
    verbose: Verbose = False,
    gate_policy: GatePolicy = None,
    gate_junit: GateJunit = None,
) -> None:
    """Can the model tell someone's sensitive attribute? Yeom's and Zhao's attacks.

    Queries the model once on every record with every candidate value of the attribute,
    runs the attribute attacks (model inversion, confidence, loss target, direct), and
    reports each one's accuracy on members and non-members beside the best guess made
    without the model; writes the standard report with an attribute section.
    """
    from privaudit.cli._attribute import load_attribute_config, run_attribute_audit

    run = load_attribute_config(config)
    _run_and_report("audit attribute", run, out, run_attribute_audit, verbose,
                    "Inferring attributes...",
                    gate=(gate_policy, gate_junit))


@audit_app.command("unlearning")
def audit_unlearning_command(
    config: Annotated[Path, typer.Option(
        "--config", "-c", help="The YAML configuration (target, data with the forgotten "
        "column, population, reference recipe, unlearning method, attacks).")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Report directory.")] = None,
    verbose: Verbose = False,
    gate_policy: GatePolicy = None,
    gate_junit: GateJunit = None,
) -> None:
    """Did the model forget the records it unlearned? U-MIA, U-LiRA and Apollo.

    Trains shadows like the original model (unlearning the audited records they saw
    with the same algorithm, and plain ones that never saw them), then tells the
    forgotten records from records never trained on: U-MIA and U-LiRA read probabilities,
    Apollo only labels. Writes the standard report with the unlearning section.
    """
    from privaudit.cli._unlearning import load_unlearning_config, run_unlearning_audit

    run = load_unlearning_config(config)
    _run_and_report("audit unlearning", run, out, run_unlearning_audit, verbose,
                    "Training shadows and attacking...",
                    gate=(gate_policy, gate_junit))


@audit_app.command("dp")
def audit_dp_command(
    config: Annotated[Path, typer.Option(
        "--config", "-c", help="The YAML configuration (dataset, Opacus recipe, claimed "
        "epsilon and delta, canaries, bound methods).")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Report directory.")] = None,
    verbose: Verbose = False,
    gate_policy: GatePolicy = None,
    gate_junit: GateJunit = None,
) -> None:
    """Does DP-SGD training keep its epsilon claim? A one-run audit with canaries.

    Trains the model with Opacus on the dataset plus canaries, each included at random,
    scores every canary, and bounds epsilon from below (Steinke et al. 2023; the f-DP
    bound of Mahloujifar et al. 2024): a bound above the claim refutes it. Writes the
    standard report with a DP-training section.
    """
    from privaudit.cli._dp import load_dp_config, run_dp_audit

    run = load_dp_config(config)
    _run_and_report("audit dp", run, out, run_dp_audit, verbose,
                    "Training with canaries...",
                    gate=(gate_policy, gate_junit))


def _run_and_report(command: str, run: Any, out: Path | None, runner: Any,
                    verbose: bool, status: str,
                    gate: tuple[Path | None, Path | None] = (None, None)) -> None:
    """Run an audit command's ``runner(run, progress=...)`` and print its summary.

    ``--out`` (checked here, one readable line when bad) overrides the configuration's
    report directory, ``run.out``; ``verbose`` adds the detailed tables; ``gate``, the
    policy checked on the report's results afterwards (read first) and its JUnit file.
    """
    if out is not None:
        _check_options(command, out=out)
        run.out = out
    policy = _read_gate_policy(*gate)
    console = _console()
    with _progress(console, status=status) as progress:
        index = runner(run, progress=progress)
    _finish(console, run.out, index, verbose=verbose, seed=_seed_of(run))
    _gate_report(console, policy, run.out, gate[1])


def _seed_of(run: Any) -> Any:
    """The random state an audit command's run gave its report (the bootstrap's seed)."""
    if hasattr(run, "random_state"):
        return run.random_state
    return getattr(run.config, "random_state", 0)


def _finish(console: Any, out: Path, index: Path, *, verbose: bool,
            results: Sequence[Any] | None = None, seed: Any = 0, note: str = "") -> None:
    """What every command that writes a report prints at its end.

    The overview (one row per audited artefact, as the report opens with), then with
    ``verbose`` the detailed tables, then the report's path. When no section of the
    report judged the results (no overview row), the detailed tables are the answer and
    are printed without ``--verbose``.
    """
    from privaudit.cli._summary import overview_table, report_overview

    with _progress(console, status="Reading the report's answers...") as progress:
        overview = report_overview(out, results=results, random_state=seed,
                                   progress=progress)
    if overview:
        console.print(overview_table(overview))
    if verbose or not overview:
        _print_summary(console, out)
    else:
        console.print("The details are in the report (--verbose prints their tables here).",
                      markup=False, highlight=False)
    console.print(_report_line(index, note))


def _report_line(index: Path, note: str = "") -> Any:
    """``Report: <index>`` as rich Text: a path is printed as it is, never read as markup."""
    from rich.text import Text

    return Text.assemble("Report: ", (str(index), "bold"), note)


def _add_row(table: Any, *cells: Any) -> None:
    r"""Add a row of plain text to a rich table.

    Names from the user's files (a target called ``[/bold]`` or ``[red]x``) are printed
    literally, never read as rich markup, their control characters escaped (ESC as ``\x1b``).
    """
    from privaudit.cli._warnings import plain

    table.add_row(*(plain(cell) for cell in cells))


def _print_summary(console, out: Path) -> None:
    """Print the detailed tables of what the report wrote: attacks, closeness, risks.

    ``--verbose`` (:func:`_finish`); without it the overview alone.
    """
    import json

    from privaudit.results import restore_non_finite

    # results.json writes inf and NaN as null with a "<key>_status": read the floats back.
    data = restore_non_finite(json.loads((out / "results.json").read_text()))
    if data["results"]:
        console.print(_attack_table(data["results"]))
    if data.get("proximity"):
        console.print(_proximity_table(data["proximity"]))
    if data.get("fidelity"):
        console.print(_fidelity_table(data["fidelity"]))
    if data.get("risks"):
        console.print(_risk_table(data["risks"]))
    if data.get("attributes"):
        console.print(_attribute_table(data["attributes"]))


def _number(x: float | None, digits: int = 3) -> str:
    import math

    # NaN: e.g. a bound not computed with --n-bootstrap 0; inf: TAPAS's point estimate.
    if x is None or math.isnan(x):
        return "n/a"
    return ("∞" if x > 0 else "-∞") if math.isinf(x) else f"{x:.{digits}f}"


def _with_ci(m: dict | None, digits: int = 3, scale: float = 1.0) -> str:
    if not m:
        return "—"
    value = None if m.get("value") is None else m["value"] * scale
    if m.get("low") is None or m.get("high") is None:
        return _number(value, digits)
    return (f"{_number(value, digits)} [{_number(m['low'] * scale, digits)}, "
            f"{_number(m['high'] * scale, digits)}]")


def _attack_table(entries: list[dict]) -> Any:
    import math

    from rich.table import Table

    table = Table(title="Membership inference: summary")
    # Generator audits: one row per generator, target record and attack.
    by_generator = any(entry.get("generator") for entry in entries)
    for column in (*(("generator",) if by_generator else ()), "target", "attack",
                   "AUC [95% CI]", "TPR@1%FPR", "TPR@0.1%FPR", "advantage", "ε lower bound",
                   "ε (point)"):
        table.add_column(column)

    def bound(m: dict | None) -> str:
        # Cross-fitted attacks have no valid bound: "—", the reason is in results.json.
        if not m or m.get("value") is None or math.isnan(m["value"]):
            return "—"
        return f"{m['value']:.2f}"

    for entry in entries:
        metrics = entry["metrics"]
        tprs = metrics.get("tpr_at_fpr", {})
        _add_row(
            table,
            *((entry.get("generator") or "—",) if by_generator else ()),
            entry["target"], _attack_name(entry), _with_ci(metrics["auc"]),
            _number(tprs["0.01"]["value"]) if "0.01" in tprs else "-",
            _number(tprs["0.001"]["value"]) if "0.001" in tprs else "-",
            _number(metrics["advantage"]["value"]),
            bound(metrics.get("effective_epsilon_lower_bound")),
            _number(metrics.get("effective_epsilon", {}).get("value")),
        )
    return table


def _accuracy_table(results: list[Any]) -> Any:
    """Accuracy of the original and each unlearned model on forget, retain, held-out."""
    from rich.table import Table

    from privaudit.studies import study_tables

    table = Table(title="Unlearning: accuracy before / after (forget, retain, held-out)")
    for column in ("algorithm", "forget", "retain", "held-out", "seconds"):
        table.add_column(column)
    for row in study_tables(results)["accuracy"]:
        before, after = row["original"], row["unlearned"]
        _add_row(table, row["algorithm"], *(f"{before[k]:.3f} → {after[k]:.3f}"
                                          for k in ("forget", "retain", "heldout")),
                      _number(row["seconds"], 1))
    return table


def _attack_name(entry: dict) -> str:
    """The attack, and for attribute inference the attribute it infers."""
    if entry.get("kind") != "attribute":
        return entry["attack"]
    secret = (entry.get("parameters") or {}).get("sensitive_attribute") or "an attribute"
    return f"{entry['attack']} (infers {secret})"


def _verdict_of(entry: dict) -> str:
    """A closeness entry's verdict (results.json before issue 19 has only ``passed``)."""
    if "verdict" in entry:
        return str(entry["verdict"])
    return {None: "no holdout", True: "not closer", False: "closer"}[entry["passed"]]


def _nan_for_none(estimate: dict) -> dict:
    """An estimate of results.json with null (non-finite) values as NaN."""
    return {k: float("nan") if v is None else v for k, v in estimate.items()}


def _proximity_table(entries: list[dict]) -> Any:
    from rich.table import Table

    from privaudit.report import closeness_reading

    table = Table(title="Synthetic data: closeness to the training records")
    for column in ("synthetic data", "check", "synthetic rows", "holdout rows", "reading"):
        table.add_column(column)
    for e in entries:
        share = e["statistic"] == "share"
        scale, digits = (100.0, 1) if share else (1.0, 3)
        reading = closeness_reading(_verdict_of(e), short=True)[0]
        _add_row(table, e["target"], e["metric"] + (" (%)" if share else
                                                   f" (q{e['quantile']:g})"),
                      _with_ci(e["value"], digits, scale),
                      _with_ci(e["baseline_value"], digits, scale), reading)
    return table


def _fidelity_table(entries: list[dict]) -> Any:
    from rich.table import Table

    from privaudit.report import fidelity_reading

    table = Table(title="Synthetic data: distinguishability (fidelity, not a leak)")
    for column in ("synthetic data", "AUC [95% CI]", "reading"):
        table.add_column(column)
    for e in entries:
        auc = e["metrics"]["auc"]
        reading = fidelity_reading(_nan_for_none(auc))[0]
        _add_row(table, e["target"], _with_ci(auc), reading)
    return table


def _risk_table(entries: list[dict]) -> Any:
    from rich.table import Table

    table = Table(title="Re-identification risks (anonymeter)")
    for column in ("target", "attack", "attack rate", "baseline rate", "control rate",
                   "risk [95% CI]"):
        table.add_column(column)
    for e in entries:
        rates = e["rates"]
        _add_row(table, e["target"], e["attack"], _with_ci(rates["attack"]),
                      _with_ci(rates["baseline"]), _with_ci(rates["control"]),
                      _with_ci(e["risk"]))
    return table


def _attribute_table(entries: list[dict]) -> Any:
    from rich.table import Table

    table = Table(title="Attribute inference: accuracy on members and non-members")
    for column in ("target", "attack", "attribute", "accuracy, members",
                   "accuracy, non-members", "advantage (Def. 5)", "over model-free (Def. 6)"):
        table.add_column(column)
    for e in entries:
        m = e["metrics"]
        _add_row(table, e["target"], e["attack"], e["sensitive_attribute"],
                      _with_ci(m["accuracy_members"]), _with_ci(m["accuracy_non_members"]),
                      _with_ci(m["advantage"]), _with_ci(m["simulator_advantage"]))
    return table


def main() -> None:
    """Entry point of the ``privaudit`` console script."""
    app()
