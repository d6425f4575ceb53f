"""audit_llm end to end on real tweets: memorisation found, blind baseline near 0.5,
results reused, unlearning judged against a retrained model."""

import json
import warnings

import numpy as np
import pytest

import privaudit
import privaudit.llm
from privaudit.audits import BlindBaselineWarning, guide_output
from privaudit.exceptions import DegenerateInputWarning
from privaudit.results import AttackResult
from privaudit.studies._tiny_lm import gradient_ascent_unlearn

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def audited(tweets_lm, tmp_path_factory):
    directory = tmp_path_factory.mktemp("llm-results")
    lm = tweets_lm
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BlindBaselineWarning)
        results = privaudit.audit_llm((lm["model"], lm["tokenizer"]), members=lm["members"],
                                      non_members=lm["held_out"], results_dir=directory,
                                      batch_size=16, dataset="tweets")
    return results, directory


def _by_attack(results):
    return {r.attack: r for r in results if r.target != "texts-only"}


def test_memorised_tweets_are_found_and_the_blind_baseline_is_near_half(audited):
    results, _ = audited
    by = _by_attack(results)
    assert list(by) == ["loss", "min-k", "min-k-plus-plus", "zlib"]
    for name in ("loss", "min-k", "min-k-plus-plus"):
        auc = by[name].metrics(n_bootstrap=200)["auc"]
        assert auc["low"] > 0.8, name  # 8 epochs on 200 tweets: memorised
        assert by[name].audit.baseline.passed is True
    blind = next(r for r in results if r.attack == "blind-baseline")
    assert blind.audit.role == "baseline" and blind.out_of_fold
    # Members and non-members are a random split of the same tweets: nothing to see.
    assert abs(blind.metrics(n_bootstrap=0)["auc"]["value"] - 0.5) < 0.1
    assert all(r.audit.kind == "llm" for r in results)


def test_results_carry_the_statistic_and_the_subgroups(audited):
    results, _ = audited
    loss = _by_attack(results)["loss"]
    np.testing.assert_array_equal(loss.scores, -loss.raw_statistic)
    assert loss.raw_statistic_name == "loss" and loss.dataset == "tweets"
    types = {row["slice_type"] for row in loss.audit.slices.rows}
    assert types == {"entire", "length", "token_rarity"}
    values = {(r["slice_type"], r["slice_value"]) for r in loss.audit.slices.rows}
    assert {("length", "short"), ("length", "long"), ("token_rarity", "rare")} <= values


def test_a_rerun_reuses_every_result_without_scoring(audited, tweets_lm, monkeypatch):
    results, directory = audited

    def fail(*args, **kwargs):
        raise AssertionError("scored again")

    monkeypatch.setattr(privaudit.llm, "score_texts", fail)
    monkeypatch.setattr(privaudit.llm.BlindBaseline, "fit_score", fail)
    lm = tweets_lm
    again = privaudit.audit_llm((lm["model"], lm["tokenizer"]), members=lm["members"],
                                non_members=lm["held_out"], results_dir=directory,
                                batch_size=16, dataset="tweets")
    for a, b in zip(results, again, strict=True):
        np.testing.assert_array_equal(a.scores, b.scores)
        assert a.audit.key == b.audit.key


def test_guide_output_shape(audited):
    results, _ = audited
    loss = _by_attack(results)["loss"]
    out = guide_output(loss)
    assert out["agg_value"] == out["auc"] == pytest.approx(
        loss.metrics(n_bootstrap=0)["auc"]["value"])
    assert len(out["forget"]["value_by_index"]) == 200
    first = out["forget"]["value_by_index"]["0"]["score"]
    assert first == pytest.approx(loss.raw_statistic[0])
    assert out["forget"]["agg_value"] < out["holdout"]["agg_value"]  # members: lower loss
    json.dumps(out)


def test_unlearning_against_a_retrained_model(tweets_lm):
    lm = tweets_lm
    forget, held = lm["members"][:60], lm["held_out"][:60]
    unlearned = gradient_ascent_unlearn(lm["model"], lm["tokenizer"], forget, epochs=1,
                                        lr=5e-4, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BlindBaselineWarning)
        results = privaudit.audit_llm(
            (unlearned, lm["tokenizer"]), forget=forget, holdout=held, attacks=["loss"],
            retrained=lm["model"], compare={"random-init": _untrained(lm)},
            forget_accuracy=0.9, blind_baseline=False, subgroups=False, batch_size=16)
    assert [(r.target, r.attack) for r in results] == [
        ("GPT2LMHeadModel", "loss"), ("random-init", "loss"), ("retrained", "loss")]
    target, _, retrained = results
    leak = next(f for f in target.audit.findings if f.code == "privleak")
    auc = target.metrics(n_bootstrap=0)["auc"]["value"]
    base = retrained.metrics(n_bootstrap=0)["auc"]["value"]
    assert leak.value == pytest.approx((auc - base) / base)
    assert target.parameters["sets"] == ["forget", "holdout"]


def _untrained(lm):
    from privaudit.studies._tiny_lm import tiny_gpt2

    return tiny_gpt2(lm["tokenizer"], random_state=5)


def test_degenerate_texts_are_left_out_with_a_warning(tweets_lm):
    lm = tweets_lm
    with pytest.warns(DegenerateInputWarning, match="left out"):
        results = privaudit.audit_llm(
            (lm["model"], lm["tokenizer"]), members=[*lm["members"][:20], ""],
            non_members=lm["held_out"][:20], attacks=["loss"], blind_baseline=False,
            subgroups=False)
    (loss,) = results
    assert loss.n_records == 40 and 20 not in loss.record_ids.tolist()


@pytest.mark.parametrize("kwargs,message", [
    ({"forget": ["a"], "holdout": ["b"]}, "either members"),
    ({"members": [], "non_members": ["b"]}, "members"),
    ({"members": "text", "non_members": ["b"]}, "members"),
    ({"members": ["a", 3], "non_members": ["b"]}, "position 1"),
    ({"attacks": ["loss", "perplexity"]}, "attacks"),
    ({"attacks": ["reference"]}, "reference_model"),
    ({"forget_accuracy": 0.5}, "forget_accuracy"),
    ({"k": 1.5}, "'k'"),
    ({"random_state": "0"}, "random_state"),
    ({"compare": {"": None}}, "compare"),
])
def test_bad_inputs_are_refused_before_any_work(tweets_lm, kwargs, message, monkeypatch):
    monkeypatch.setattr(privaudit.llm, "score_texts", lambda *a, **k: pytest.fail("ran"))
    lm = tweets_lm
    args = {"members": ["a member text"], "non_members": ["another text"], **kwargs}
    with pytest.raises((ValueError, TypeError), match=message):
        privaudit.audit_llm((lm["model"], lm["tokenizer"]), **args)


def test_a_model_without_tokenizer_is_refused(tweets_lm):
    with pytest.raises(TypeError, match="tokenizer"):
        privaudit.audit_llm(tweets_lm["model"], members=["a"], non_members=["b"])
    assert isinstance(AttackResult, type)


def test_the_demo_llm_part_shows_memorisation_and_unlearning(monkeypatch):
    """The demo's LLM part at full size: members found, the retrained model near chance."""
    from privaudit.studies._llm_study import run_llm_study

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        everything = run_llm_study(random_state=0)
    results = [r for r in everything if r.result_type == "attack"]
    memorisation = {r.check: r for r in everything if r.result_type == "memorisation"}
    # Canaries repeated 16 times are learnt, those seen once are not (medians, 3 each).
    exposure = memorisation["canaries"].exposure_by_repetitions()
    medians = [float(np.median(exposure[k])) for k in (1, 4, 16)]
    assert medians[0] < medians[2] and medians[1] < medians[2]
    assert medians[2] == pytest.approx(memorisation["canaries"].max_exposure)
    assert set(memorisation["extraction"].values) == {"k-extractability",
                                                      "longest-common-prefix", "verbmem"}
    auc = {(r.target, r.attack): r.metrics(n_bootstrap=0)["auc"]["value"] for r in results}
    assert set(a for t, a in auc if t == "tiny-gpt2") == set(privaudit.audits.LLM_STATISTICS)
    assert auc["tiny-gpt2", "min-k"] > 0.9 and auc["tiny-gpt2", "reference"] > 0.9
    assert abs(auc["retrained", "loss"] - 0.5) < 0.1  # never saw the forget set
    # Unlearning lowered the forget set's exposure, but not to the retrained model's.
    before, after = auc["tiny-gpt2 before unlearning", "loss"], auc["tiny-gpt2 unlearned", "loss"]
    assert auc["retrained", "loss"] < after < before
    target = next(r for r in results if r.target == "tiny-gpt2 unlearned" and r.attack == "loss")
    assert any(f.code == "privleak" and f.value > 0 for f in target.audit.findings)


def test_a_few_texts_per_side_get_fewer_blind_folds(tiny_model, tiny_tokenizer, tiny_texts):
    # Fewer than five texts a side: the blind baseline cross-fits with as many folds as
    # the smaller side allows (it said "'n_splits' parameter of BlindBaseline" before).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = privaudit.audit_llm((tiny_model, tiny_tokenizer), members=tiny_texts[:3],
                                      non_members=tiny_texts[3:7], attacks=["loss"])
    blind = [r for r in results if r.target == "texts-only"]
    assert len(blind) == 1 and blind[0].parameters["n_splits"] == 3
    assert blind[0].extra["n_splits"] == 3


def test_one_text_a_side_with_the_blind_baseline_is_refused(tiny_model, tiny_tokenizer,
                                                             tiny_texts):
    with pytest.raises(ValueError, match=r"'blind_baseline' parameter of audit_llm.*fewer "
                                          r"than 2 texts"):
        privaudit.audit_llm((tiny_model, tiny_tokenizer), members=tiny_texts[:1],
                            non_members=tiny_texts[1:5], attacks=["loss"])
    results = privaudit.audit_llm((tiny_model, tiny_tokenizer), members=tiny_texts[:1],
                                  non_members=tiny_texts[1:5], attacks=["loss"],
                                  blind_baseline=False)
    assert [r.attack for r in results] == ["loss"]


def test_a_text_on_both_sides_is_refused_before_any_model_is_read():
    from privaudit.audits import audit_llm

    with pytest.raises(ValueError, match=r"'holdout'.*1 text\(s\) also in forget"):
        audit_llm(object(), forget=["a text", "another"], holdout=["another", "third"])


def test_every_text_unscorable_gives_results_with_no_information(tiny_model, tiny_tokenizer,
                                                                 tmp_path, monkeypatch):
    # One-token texts have no token to score. When every text is so, each statistic's
    # result has no information (every text kept, score 0, AUC 0.5, NaN statistic,
    # extra["degenerate"]) with a warning, as a membership attack's statistic undefined
    # on every record: the audit (blind baseline included) is kept. It used to fail
    # building an empty AttackResult ("'labels' parameter of AttackResult").
    members, non_members = ["a"] * 10 + ["b"] * 10, ["c"] * 10 + ["d"] * 10
    assert all(len(tiny_tokenizer(t)["input_ids"]) == 1 for t in "abcd")

    def audit():
        return privaudit.audit_llm((tiny_model, tiny_tokenizer), members=members,
                                   non_members=non_members, attacks=["loss", "zlib"],
                                   results_dir=tmp_path)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = audit()
    said = [str(w.message) for w in caught if w.category is DegenerateInputWarning]
    for name in ("loss", "zlib"):
        assert any(f"{name} is undefined for every one of the 40 texts" in m for m in said)
    by_attack = {r.attack: r for r in results}
    assert set(by_attack) == {"loss", "zlib", "blind-baseline"}
    for name in ("loss", "zlib"):
        result = by_attack[name]
        assert result.n_records == 40 and not result.scores.any()
        assert np.isnan(result.raw_statistic).all() and "undefined" in result.extra["degenerate"]
        assert result.metrics(n_bootstrap=0)["auc"]["value"] == 0.5
    assert np.isnan(guide_output(by_attack["loss"])["forget"]["agg_value"])
    # Saved and reused as any result: a rerun scores nothing.
    monkeypatch.setattr(privaudit.llm, "score_texts", lambda *a, **k: pytest.fail("scored"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = audit()
    assert again[0].extra["degenerate"] == by_attack["loss"].extra["degenerate"]


def test_empty_texts_on_both_sides_are_left_out_not_refused(tiny_model, tiny_tokenizer,
                                                            tiny_texts):
    # An empty text (or a pair's empty answer) has nothing to score: left out of every
    # result with a warning, on one side or on both; only a text with something to
    # score is refused as shared (it used to refuse '' on both sides).
    members = [*tiny_texts[:10], "", ("A prompt.", "")]
    non_members = [*tiny_texts[10:20], "", ("A prompt.", "")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateInputWarning)  # score_texts' own too
        with pytest.warns(DegenerateInputWarning, match="undefined for 4 of 24 texts.*left out"):
            results = privaudit.audit_llm((tiny_model, tiny_tokenizer), members=members,
                                          non_members=non_members, attacks=["loss"],
                                          blind_baseline=False, subgroups=False)
    (loss,) = results
    assert loss.n_records == 20 and {10, 11, 22, 23}.isdisjoint(loss.record_ids.tolist())
    for shared in ("a", ("A prompt.", "a"), ("", "a")):
        with pytest.raises(ValueError, match=r"'non_members'.*1 text\(s\) also in members"):
            privaudit.audit_llm(object(), members=["x", shared], non_members=["y", shared])
