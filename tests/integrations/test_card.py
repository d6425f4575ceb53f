"""The model card's privacy section: its YAML metadata parsed back, its Markdown escaped."""

from __future__ import annotations

import math
import re

import pytest
import yaml
from integration_data import N_BOOTSTRAP, same_number

from privaudit.integrations import markdown_escape, model_card, read_audit, write_model_card
from privaudit.integrations._card import headline


def _front_matter(card: str) -> dict:
    match = re.match(r"^---\n(.*?)\n---\n", card, flags=re.S)
    assert match, "the card opens with YAML front matter"
    return yaml.safe_load(match.group(1))


def test_the_metadata_holds_the_results_headline_numbers(report_dir, tmp_path):
    path = write_model_card(report_dir, tmp_path / "card" / "privacy.md", model_name="m|1")
    meta = _front_matter(path.read_text(encoding="utf-8"))
    (model,) = meta["model-index"]
    assert model["name"] == "m|1"
    logged = {(entry["name"], entry["type"]): entry["value"] for result in model["results"]
              for entry in result["metrics"]}
    summary = read_audit(report_dir)
    expected = {}
    for result in summary.results:
        for metric in headline(result):
            name = f"{metric} of {result.attack} on {result.target}"
            expected[name, metric] = result.metrics[metric]
            for end in ("low", "high"):
                if f"{metric}_{end}" in result.metrics:
                    expected[f"{name} ({end} end of the interval)", f"{metric}_{end}"] = \
                        result.metrics[f"{metric}_{end}"]
    assert set(logged) == set(expected)
    assert all(same_number(float(logged[k]), v) for k, v in expected.items())
    # every kind has its task; the datasets are the results'
    tasks = {(r["task"]["type"], r["dataset"]["name"]) for r in model["results"]}
    assert tasks == {("membership-inference", "toy|data"), ("risk", "unknown"),
                     ("dp-training", "unknown")}


def test_the_dp_bound_stands_beside_the_claim(results):
    card = model_card(results, n_bootstrap=N_BOOTSTRAP)
    dp = next(r for r in read_audit(results, n_bootstrap=N_BOOTSTRAP).results
              if r.kind == "dp-training")
    bound, claim = dp.metrics["epsilon_lower_bound"], dp.metrics["claimed_epsilon"]
    assert f"| dp &lt;model&gt; | dirac-gradient-canaries | {bound:.4g} | {claim:.4g} |" in card
    # a claim for the model: each attack's Clopper-Pearson bound beside it
    claimed = model_card(results, claimed_epsilon=8.0, n_bootstrap=N_BOOTSTRAP)
    rows = [line for line in claimed.splitlines() if line.endswith("| 8 |")]
    assert len(rows) == 3 and all("loss" in r or "lira-online" in r for r in rows)


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row: split on the pipes that are not escaped."""
    return re.split(r"(?<!\\)\|", line.strip())[1:-1]


def test_names_cannot_break_the_markdown(results):
    card = model_card(results, n_bootstrap=N_BOOTSTRAP)
    body = card.split("\n---\n", 1)[1]
    assert "<b>" not in body and "<model>" not in body  # no HTML gets through
    for table in re.findall(r"(?:^\|.*\|\n)+", body, flags=re.M):
        widths = {len(_cells(line)) for line in table.splitlines()}
        assert len(widths) == 1, table  # a | in a name does not add a column
    assert "model\\|v2" in body and "&lt;b&gt;model &amp; ε&lt;/b&gt;" in body
    assert "lira-online (4 reference models)" in body


@pytest.mark.parametrize(("text", "escaped"), [
    ("a|b", "a\\|b"), ("<script>x</script>", "&lt;script&gt;x&lt;/script&gt;"),
    ("*bold* _it_", "\\*bold\\* \\_it\\_"), ("[link](u)", "\\[link\\](u)"),
    ("back\\slash `code`", "back\\\\slash \\`code\\`"), ("two\nlines", "two lines"),
    (math.pi, "3.141592653589793"),
])
def test_markdown_escape(text, escaped):
    assert markdown_escape(text) == escaped


@pytest.mark.parametrize(("claim", "error"), [
    (-1.0, ValueError), (math.nan, ValueError), (math.inf, ValueError), (True, TypeError),
    ("8", TypeError), ([8], TypeError)])
def test_a_claimed_epsilon_that_is_no_epsilon_is_refused(results, tmp_path, claim, error):
    with pytest.raises(error, match="'claimed_epsilon' parameter of model_card"):
        model_card(results, claimed_epsilon=claim, n_bootstrap=0)
    with pytest.raises(error, match="'claimed_epsilon' parameter of write_model_card"):
        write_model_card(results, tmp_path / "c.md", claimed_epsilon=claim, n_bootstrap=0)
    assert not (tmp_path / "c.md").exists()


def test_a_claim_of_zero_or_a_numpy_number_is_shown(results):
    import numpy as np

    for claim, shown in ((0, "| 0 |"), (np.float32(2.5), "| 2.5 |")):
        card = model_card(results, claimed_epsilon=claim, n_bootstrap=0)
        assert sum(line.endswith(shown) for line in card.splitlines()) == 3
