"""``privaudit audit llm``: the texts, the configuration file form, the run.

Texts come from ``.txt`` (one text per line), ``.jsonl`` (one JSON string, or an object
with the text under ``text_column``, or ``prompt`` and ``answer`` keys, per line) or
``.csv`` files (the ``text_column`` column). Every problem names the file and the line.

The configuration file form (``--config``) has these sections::

    target: {path: DIR, name: NAME}            # a local model folder (safetensors)
    texts: {members: FILE, non_members: FILE}  # or {forget: FILE, holdout: FILE}
    attacks: [loss, min-k, min-k-plus-plus, zlib]   # old min_k... accepted, with a warning
    scoring: {k: 0.2, p: 2, batch_size: 8, max_length: 512, compat: null,
              recall_prefix: null, device: null, dtype: null,   # e.g. cuda:0, bfloat16
              devices: null}                          # e.g. auto, [cuda:0, cuda:1]
    reference: {path: DIR}                     # for the "reference" statistic
    compare: {original: DIR, random-init: DIR}
    retrained: DIR                             # for MUSE's PrivLeak
    accuracy: {forget: 0.2, retain: 0.8}       # for the red flags
    blind_baseline: true
    random_state: 0
    report: {out: DIR, n_bootstrap: 1000}
    checks: [k-extractability, verbmem, exposure]   # memorisation checks (issue 23)
    extraction: {prefix_length: 32, suffix_length: 50}
    canaries: {secret: {digits: 4}, repetitions: [1, 4, 16], per_repetition: 1,
               formats: null, inclusion: all, delta: 1.0e-5, method: auto,
               texts: FILE, recipe: {epochs: 4, lr: 0.001, batch_size: 16, max_length: 128}}

The canaries' model is the target fine-tuned on the members (or ``canaries.texts``) with the
canaries inserted, by the built-in recipe (a training function of one's own: the API's
``CanaryCheck(train=...)``).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationInfo, model_validator

from privaudit.cli._errors import ConfigError, KeyProblem
from privaudit.cli._sections import InputFile, Name, ReportSection, Section, Seed, _resolve

__all__ = ["LLMAuditFile", "LLMRun", "llm_run", "load_llm_config", "memorisation_options",
           "read_texts", "run_llm_audit"]

_TEXT_SUFFIXES = (".txt", ".jsonl", ".csv")


def read_texts(path: Path, *, text_column: str = "text", where: str = "") -> list[Any]:
    """The texts of ``path`` (``.txt``, ``.jsonl`` or ``.csv``).

    Raises :class:`ConfigError` naming the file and the line on any problem.
    """
    path = Path(path)
    label = f"{where} {path}" if where else str(path)
    if not path.is_file():
        raise ConfigError(f"The texts file {label} does not exist.")
    suffix = path.suffix.lower()
    if suffix not in _TEXT_SUFFIXES:
        raise ConfigError(f"The texts file {label} must end in {', '.join(_TEXT_SUFFIXES)} "
                          f"(one text per line, JSON lines, or CSV). Got {suffix or 'none'}.")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"The texts file {label} is not UTF-8 text ({exc.reason} at byte "
                          f"{exc.start}).") from None
    if suffix == ".txt":
        texts = [line for line in text.splitlines() if line.strip()]
    elif suffix == ".jsonl":
        texts = _jsonl_texts(text, text_column, label)
    else:
        texts = _csv_texts(text, text_column, label)
    if not texts:
        raise ConfigError(f"The texts file {label} holds no text.")
    return texts


def _jsonl_texts(text: str, column: str, label: str) -> list[Any]:
    out: list[Any] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"Line {number} of {label} is not JSON ({exc.msg}).") from None
        if isinstance(item, str):
            out.append(_not_blank(item, number, label))
        elif isinstance(item, dict) and isinstance(item.get(column), str):
            out.append(_not_blank(item[column], number, label))
        elif (isinstance(item, dict) and isinstance(item.get("prompt"), str)
              and isinstance(item.get("answer"), str)):
            out.append((item["prompt"], _not_blank(item["answer"], number, label)))
        else:
            raise ConfigError(
                f"Line {number} of {label} must be a JSON string, or an object with a "
                f"string {column!r} (or 'prompt' and 'answer'). Got {line[:60]!r}.")
    return out


def _csv_texts(text: str, column: str, label: str) -> list[str]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if reader.fieldnames is None or column not in reader.fieldnames:
        raise ConfigError(f"The CSV file {label} has no column {column!r} (its columns: "
                          f"{reader.fieldnames}); name the text column with text_column.")
    out = []
    for row in reader:
        value = row.get(column)
        if value is None:
            raise ConfigError(f"Line {reader.line_num} of {label} has no {column!r} cell.")
        out.append(_not_blank(value, reader.line_num, label))
    return out


def _not_blank(text: str, number: int, label: str) -> str:
    """``text``, refused when empty or only spaces (it would be scored as a text)."""
    if not text.strip():
        raise ConfigError(f"Line {number} of {label} holds an empty text: remove the line "
                          "(every line is scored as one text).")
    return text


# --- the configuration file --------------------------------------------------------------

def _existing_dir(value: str, info: ValidationInfo) -> str:
    path = _resolve(value, info)
    if path is not None and not path.is_dir():
        raise KeyProblem("", "an existing local model folder (privaudit never downloads)",
                         str(path))
    return value


ModelDir = Annotated[str, Field(min_length=1), AfterValidator(_existing_dir)]
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]


class LLMTargetSection(Section):
    """``target``: the audited model's local folder."""

    path: ModelDir
    name: Name | None = None


class TextsSection(Section):
    """``texts``: members and non-members, or forget and holdout."""

    members: InputFile | None = None
    non_members: InputFile | None = None
    forget: InputFile | None = None
    holdout: InputFile | None = None
    text_column: Name = "text"

    @model_validator(mode="after")
    def _one_form(self) -> TextsSection:
        pair = (self.members, self.non_members)
        unlearn = (self.forget, self.holdout)
        if all(pair) == all(unlearn) or any(pair) != all(pair) or any(unlearn) != all(unlearn):
            raise KeyProblem("members", "members and non_members, or forget and holdout",
                             "another combination")
        return self


class ScoringSection(Section):
    """``scoring``: the statistics' settings."""

    k: Annotated[float, Field(gt=0.0, le=1.0)] = 0.2
    p: Literal[1, 2, "inf"] = 2
    batch_size: Annotated[int, Field(ge=1)] = 8
    max_length: Annotated[int, Field(ge=1)] = 512
    compat: Literal["open-unlearning", "mimir"] | None = None
    recall_prefix: Name | list[Name] | None = None  # a prefix, or a list of shots
    device: Name | None = None
    dtype: Literal["float32", "bfloat16", "float16"] | None = None
    devices: Literal["auto"] | list[Name] | None = None  # one worker per device
    stride: Annotated[int, Field(ge=1)] | None = None  # sliding window over long texts
    window: Annotated[int, Field(ge=2)] | None = None
    chat_template: bool = False  # (prompt, answer) pairs in the tokenizer's template
    system_prompt: Name | None = None


class ModelRef(Section):
    """A model given by its local folder."""

    path: ModelDir


class AccuracySection(Section):
    """``accuracy``: the unlearned model's forget and retain accuracy, for the red flags."""

    forget: Fraction | None = None
    retain: Fraction | None = None


class ExtractionSection(Section):
    """``extraction``: the extraction checks' prefix and suffix, in tokens."""

    prefix_length: Annotated[int, Field(ge=1)] = 32
    suffix_length: Annotated[int, Field(ge=1)] = 50


class SecretSection(Section):
    """``canaries.secret``: the secrets' space: ``digits: n``, or an alphabet and a length."""

    digits: Annotated[int, Field(ge=1)] | None = None
    alphabet: list[Annotated[str, Field(min_length=1)]] | None = None
    length: Annotated[int, Field(ge=1)] | None = None
    separator: str = ""

    @model_validator(mode="after")
    def _one_form(self) -> SecretSection:
        if (self.digits is None) == (self.alphabet is None and self.length is None) or (
                self.digits is None and (self.alphabet is None or self.length is None)):
            raise KeyProblem("digits", "given alone, or alphabet and length together",
                             "another combination")
        if self.alphabet is not None and len(set(self.alphabet)) != len(self.alphabet):
            raise KeyProblem("alphabet", "distinct symbols", self.alphabet)
        return self


class RecipeSection(Section):
    """``canaries.recipe``: the built-in fine-tuning of a copy of the target."""

    epochs: Annotated[int, Field(ge=1)] = 4
    lr: Annotated[float, Field(gt=0.0)] = 1e-3
    batch_size: Annotated[int, Field(ge=1)] = 16
    max_length: Annotated[int, Field(ge=1)] = 128


def _one_slot(formats: list[str] | None) -> list[str] | None:
    for fmt in formats or []:
        if fmt.count("{secret}") != 1:
            raise KeyProblem("", "formats with exactly one '{secret}' slot each", fmt)
    return formats


class CanariesSection(Section):
    """``canaries``: the exposure check's canaries (secret-sharer, Carlini et al. 2019)."""

    secret: SecretSection = Field(default_factory=lambda: SecretSection(digits=4))
    repetitions: list[Annotated[int, Field(ge=1)]] = Field(default=[1, 4, 16], min_length=1)
    per_repetition: Annotated[int, Field(ge=1)] = 1
    formats: Annotated[list[Name] | None, AfterValidator(_one_slot)] = None
    inclusion: Literal["all", "random"] = "all"
    delta: Annotated[float, Field(ge=0.0, lt=1.0)] = 1e-5
    method: Literal["auto", "exact", "fit"] = "auto"
    texts: InputFile | None = None
    recipe: RecipeSection = Field(default_factory=RecipeSection)


class LLMAuditFile(Section):
    """The configuration of ``privaudit audit llm``."""

    target: LLMTargetSection
    texts: TextsSection
    attacks: list[Name] | None = None
    scoring: ScoringSection = Field(default_factory=ScoringSection)
    reference: ModelRef | None = None
    compare: dict[Name, ModelDir] = Field(default_factory=dict)
    retrained: ModelDir | None = None
    accuracy: AccuracySection = Field(default_factory=AccuracySection)
    blind_baseline: bool = True
    random_state: Seed = 0
    report: ReportSection = Field(default_factory=ReportSection)
    checks: list[Name] | None = None
    extraction: ExtractionSection = Field(default_factory=ExtractionSection)
    canaries: CanariesSection | None = None


@dataclass
class LLMRun:
    """What ``privaudit audit llm`` runs, from its options or its configuration file."""

    model: Path
    texts: dict[str, Path]
    name: str | None = None
    text_column: str = "text"
    attacks: list[str] | None = None
    scoring: dict[str, Any] = field(default_factory=dict)
    reference: Path | None = None
    compare: dict[str, Path] = field(default_factory=dict)
    retrained: Path | None = None
    accuracy: dict[str, float | None] = field(default_factory=dict)
    blind_baseline: bool = True
    random_state: int = 0
    out: Path = Path("llm-audit-report")
    n_bootstrap: int = 1000
    source: Path | None = None  # the configuration file; None: the options
    checks: list[str] | None = None
    extraction: dict[str, int] = field(default_factory=dict)
    canaries: dict[str, Any] | None = None

    def setting(self, key: str, option: str) -> str:
        """How the user names a setting: the config key, or the command-line option."""
        return option if self.source is None else f"the {key!r} key of {self.source}"


def load_llm_config(path: str | Path) -> LLMRun:
    """Read and check the configuration file of ``privaudit audit llm``."""
    from privaudit.cli._reading import read_config

    path = Path(path)
    cfg = read_config(path, LLMAuditFile)
    base = path.parent

    def at(value: str) -> Path:
        return Path(value) if Path(value).is_absolute() else base / value

    texts = {k: at(v) for k, v in cfg.texts.model_dump().items()
             if k != "text_column" and v is not None}
    return LLMRun(
        model=at(cfg.target.path), texts=texts, name=cfg.target.name,
        text_column=cfg.texts.text_column, attacks=cfg.attacks,
        scoring=cfg.scoring.model_dump(),
        reference=None if cfg.reference is None else at(cfg.reference.path),
        compare={k: at(v) for k, v in cfg.compare.items()},
        retrained=None if cfg.retrained is None else at(cfg.retrained),
        accuracy=cfg.accuracy.model_dump(), blind_baseline=cfg.blind_baseline,
        random_state=cfg.random_state, out=at(cfg.report.out or "llm-audit-report"),
        n_bootstrap=cfg.report.n_bootstrap, source=path, checks=cfg.checks,
        extraction=cfg.extraction.model_dump(),
        canaries=None if cfg.canaries is None else {
            **cfg.canaries.model_dump(),
            "texts": None if cfg.canaries.texts is None else at(cfg.canaries.texts)})


def llm_run(config: Path | None, *, model: Path | None, texts: dict[str, Path | None],
            text_column: str, reference: Path | None, retrained: Path | None,
            attacks: str | None, blind_baseline: bool = True,
            checks: str | None = None) -> LLMRun:
    """The run the command-line options (or ``--config``) describe; one-line errors.

    Every setting is checked here, before a model or a text is read. ``checks`` is the
    ``--checks`` option: memorisation checks, comma-separated (their settings, and the
    canaries', only in the configuration file).
    """
    given = {k: v for k, v in texts.items() if v is not None}
    if config is not None:
        if model is not None or given or not blind_baseline or checks is not None:
            raise ConfigError("Give either --config or --model and the texts, not both.")
        run = load_llm_config(config)
    else:
        run = _options_run(model, given, text_column, reference, retrained, attacks,
                           blind_baseline)
        run.checks = _option_names(checks, "--checks", "memorisation check")
    _check_attacks(run)
    _check_memorisation(run)
    return run


def _option_names(value: str | None, option: str, what: str) -> list[str] | None:
    """A comma-separated option as names (None when not given); empty refused."""
    if value is None:
        return None
    names = [v.strip() for v in value.split(",") if v.strip()]
    if not names:
        raise ConfigError(f"{option} names no {what} (got {value!r}); leave it out, or "
                          "name some.")
    return names


def _check_memorisation(run: LLMRun) -> None:
    """Known memorisation checks; canaries only with the exposure check."""
    from privaudit.audits import MEMORISATION_CHECKS

    for name in run.checks or []:
        if name not in MEMORISATION_CHECKS:
            raise ConfigError(f"{run.setting('checks', '--checks')} names {name!r}, which is "
                              f"not a memorisation check; the checks are "
                              f"{', '.join(MEMORISATION_CHECKS)}.")
    if run.canaries is not None and "exposure" not in (run.checks or []):
        raise ConfigError(f"{run.setting('canaries', '--canaries')} is given but 'checks' "
                          "does not name 'exposure' (the check that trains with canaries).")


def memorisation_options(run: LLMRun, target: Any) -> dict[str, Any]:
    """``audit_llm``'s memorisation arguments from the run (none without ``checks``)."""
    if not run.checks:
        return {}
    from privaudit.audits import CanaryCheck, FineTuneRecipe
    from privaudit.llm import SecretSpace

    out: dict[str, Any] = {"checks": run.checks, **run.extraction}
    c = run.canaries
    if c is not None:
        secret = c["secret"]
        space = (SecretSpace.digits(secret["digits"]) if secret["digits"] is not None else
                 SecretSpace(tuple(secret["alphabet"]), secret["length"], secret["separator"]))
        texts = None if c["texts"] is None else read_texts(c["texts"], where="canaries.texts")
        out["canaries"] = CanaryCheck(
            train=FineTuneRecipe(target.model, target.tokenizer, **c["recipe"]),
            texts=None if texts is None else [t if isinstance(t, str) else "".join(t)
                                              for t in texts],
            formats=c["formats"], space=space, repetitions=tuple(c["repetitions"]),
            per_repetition=c["per_repetition"], inclusion=c["inclusion"], delta=c["delta"],
            method=c["method"])
    return out


def _options_run(model: Path | None, given: dict[str, Path], text_column: str,
                 reference: Path | None, retrained: Path | None, attacks: str | None,
                 blind_baseline: bool) -> LLMRun:
    """The run of the command-line options (model folders checked, nothing read)."""
    if model is None:
        raise ConfigError("Missing option --model (the audited model's local folder), or "
                          "--config.")
    if set(given) not in ({"members", "non_members"}, {"forget", "holdout"}):
        raise ConfigError("Give --members and --non-members, or --forget and --holdout.")
    for option, path in (("--model", model), ("--reference", reference),
                         ("--retrained", retrained)):
        if path is not None and Path(path).is_file():
            raise ConfigError(f"{option} must be a model folder (config.json, safetensors "
                              f"weights and the tokenizer); got a file: {path}.")
    names = None if attacks is None else [a.strip() for a in attacks.split(",") if a.strip()]
    if attacks is not None and not names:
        raise ConfigError(f"--attacks names no statistic (got {attacks!r}); give some of "
                          "loss, min-k, min-k-plus-plus, zlib, ..., or leave it out.")
    return LLMRun(model=model, texts=given, text_column=text_column, reference=reference,
                  retrained=retrained, attacks=names, blind_baseline=blind_baseline)


#: How the input each optional statistic needs is given here: (what it is, config key,
#: option); None: not from this form (token frequencies: the API only). The statistics'
#: registry (privaudit.audits._llm.LLM_STATISTIC_REGISTRY) declares the same needs.
_NEEDS = {"reference": ("a reference model", "reference.path", "--reference DIR"),
          "recall": ("a recall prefix", "scoring.recall_prefix", None),
          "dc-pdd": ("token frequencies", None, None)}


def _check_attacks(run: LLMRun) -> None:
    """Known statistic names (old names replaced, with a warning), each with its input."""
    from privaudit._validation import canonical_names
    from privaudit.audits import LLM_STATISTICS

    where = run.setting("attacks", "--attacks")
    run.attacks = canonical_names(run.attacks, param=where, func="privaudit audit llm")
    given = {"reference": run.reference, "recall": run.scoring.get("recall_prefix"),
             "dc-pdd": None}
    for name in run.attacks or []:
        if name not in LLM_STATISTICS:
            raise ConfigError(f"{where} names {name!r}, which is not a statistic; the "
                              f"statistics are {', '.join(LLM_STATISTICS)}.")
        if name in _NEEDS and given[name] is None:
            raise ConfigError(_needs_message(run, name, where))


def _needs_message(run: LLMRun, name: str, where: str) -> str:
    what, key, option = _NEEDS[name]
    how = key if run.source is not None else option
    if how is None:
        return (f"{where} names {name!r}, which the command line cannot run (it needs "
                f"{what}: "
                f"{'use audit_llm in Python' if key is None else 'use --config with ' + key}).")
    return f"{where} names {name!r}, which needs {how}."


def _where(run: LLMRun, key: str) -> str:
    """How the user gave the texts file ``key``: its option, or its config key."""
    return f"--{key.replace('_', '-')}" if run.source is None else f"texts.{key}"


def _check_texts(run: LLMRun, texts: dict[str, list[Any]]) -> None:
    """No text on both sides; two texts a side for the blind baseline. Before any model loads."""
    (one, first), (two, second) = texts.items()
    a, b = (f"{_where(run, k)} {run.texts[k]}" for k in (one, two))
    keys = {t if isinstance(t, str) else tuple(t) for t in first}
    both = [t for t in second if (t if isinstance(t, str) else tuple(t)) in keys]
    if both:
        raise ConfigError(f"{len(both)} text(s) of {b} are also in {a} (e.g. "
                          f"{str(both[0])[:60]!r}): a text cannot be both trained on and "
                          "not; the two sets must be different texts.")
    if not run.blind_baseline:
        return
    for key, side in texts.items():
        if len(side) < 2:
            turn = (f"set the 'blind_baseline' key of {run.source} to false" if run.source
                    else "turn it off with --no-blind-baseline")
            raise ConfigError(f"{_where(run, key)} {run.texts[key]} holds {len(side)} text: "
                              "the blind baseline needs 2 on each side (it trains on some "
                              f"and scores the others); give more texts, or {turn}.")


def run_llm_audit(run: LLMRun, *, progress: Any = None) -> Path:
    """Load the models and texts, run :func:`privaudit.audit_llm`, write the report."""
    from privaudit.audits import audit_llm
    from privaudit.report import build_report
    from privaudit.targets import load_causal_lm

    texts = {key: read_texts(path, text_column=run.text_column, where=_where(run, key))
             for key, path in run.texts.items()}
    _check_texts(run, texts)
    target = load_causal_lm(run.model, name=run.name or run.model.name)
    scoring = dict(run.scoring)
    results = audit_llm(
        target, **texts, attacks=run.attacks,
        reference_model=None if run.reference is None else load_causal_lm(run.reference),
        compare={name: load_causal_lm(p, name=name) for name, p in run.compare.items()},
        retrained=None if run.retrained is None else load_causal_lm(
            run.retrained, name="retrained"),
        forget_accuracy=run.accuracy.get("forget"),
        retain_accuracy=run.accuracy.get("retain"), blind_baseline=run.blind_baseline,
        dataset=next(iter(run.texts.values())).name, random_state=run.random_state,
        results_dir=run.out / "results", progress=progress, **scoring,
        **memorisation_options(run, target))
    return build_report(results, run.out, n_bootstrap=run.n_bootstrap, progress=progress,
                        random_state=run.random_state,
                        title=f"Privacy audit of {target.name}")
