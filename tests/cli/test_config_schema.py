"""The typed schema of `privaudit audit model` configurations (issue 6, section 3).

Every unknown, repeated or mistyped key is an error naming the key, its section and the
file, in one line; nothing falls back silently to a default.
"""

from __future__ import annotations

import pytest
import yaml

from privaudit.cli._config import ConfigError, load_audit_config


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "model.skops").write_bytes(b"placeholder")  # only its existence is read
    (tmp_path / "data.csv").write_text("a,y,m\n1,0,1\n")
    (tmp_path / "pop.csv").write_text("a,y\n2,1\n")
    return tmp_path


def _base() -> dict:
    return {
        "target": {"path": "model.skops"},
        "data": {"path": "data.csv", "label_column": "y", "membership_column": "m"},
    }


def _load(folder, config: dict | str):
    path = folder / "audit.yaml"
    path.write_text(config if isinstance(config, str) else yaml.safe_dump(config))
    return load_audit_config(path)


def _error(folder, config) -> str:
    with pytest.raises(ConfigError) as info:
        _load(folder, config)
    message = str(info.value)
    assert "\n" not in message
    assert "audit.yaml" in message
    return message


@pytest.mark.parametrize(
    ("section", "key", "value", "expected_key"),
    [
        ("reference", "n_model", 2, "n_models"),
        ("report", "n_boostrap", 5, "n_bootstrap"),
        ("executor", "njobs", 1, "n_jobs"),
        ("target", "trust", [], "trusted"),
        ("data", "id_colum", "id", "id_column"),
        ("population", "paht", "pop.csv", "path"),
    ],
)
def test_misspelled_key_in_a_section_is_an_error(folder, section, key, value, expected_key):
    config = _base()
    config.setdefault(section, {"path": "pop.csv"} if section == "population" else {})
    config[section][key] = value
    message = _error(folder, config)
    assert f"'{section}.{key}' key of" in message
    assert "is not known" in message
    assert expected_key in message  # the keys it could have meant


def test_misspelled_top_level_key_is_an_error(folder):
    config = {**_base(), "reprot": {"out": "r"}}
    message = _error(folder, config)
    assert "'reprot' key of" in message and "'report'" in message


def test_repeated_key_names_the_key_and_both_lines(folder):
    text = ("target: {path: model.skops}\n"
            "data: {path: data.csv, label_column: y, membership_column: m}\n"
            "reference:\n"
            "  n_models: 2\n"
            "  n_models: 32\n")
    message = _error(folder, text)
    assert "'reference.n_models' key of" in message
    assert "given twice" in message and "lines 4 and 5" in message


def test_repeated_section_is_an_error(folder):
    text = ("target: {path: model.skops}\n"
            "data: {path: data.csv, label_column: y, membership_column: m}\n"
            "report: {n_bootstrap: 5}\n"
            "report: {n_bootstrap: 50}\n")
    assert "'report' key of" in _error(folder, text)


def test_yaml_syntax_error_names_the_line(folder):
    text = "target: {path: model.skops\ndata: [unclosed\n"
    message = _error(folder, text)
    assert "not valid YAML" in message and "line" in message


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("reference", "n_models", "2"),  # a string is not silently converted
        ("reference", "n_models", 2.0),
        ("reference", "n_models", True),
        ("reference", "n_models", 0),
        ("executor", "n_jobs", 0),
        ("executor", "n_jobs", -2),
        ("executor", "n_jobs", "2"),
        ("executor", "name", "gpu"),
        ("report", "n_bootstrap", -1),
        ("reference", "mode", "sometimes"),
    ],
)
def test_wrong_value_names_key_and_value(folder, section, key, value):
    config = _base()
    config[section] = {key: value}
    message = _error(folder, config)
    assert f"'{section}.{key}' key of" in message
    assert repr(value) in message


def test_negative_seed_is_refused(folder):
    message = _error(folder, {**_base(), "random_state": -1})
    assert "'random_state' key of" in message and "-1" in message


def test_n_jobs_minus_one_means_every_cpu(folder):
    cfg = _load(folder, {**_base(), "executor": {"n_jobs": -1}})
    assert cfg.n_jobs == -1


@pytest.mark.parametrize("key", ["cache_dir", "report.out"])
def test_output_folder_that_is_a_file_is_refused(folder, key):
    (folder / "taken").write_text("a file")
    config = _base()
    if key == "cache_dir":
        config["cache_dir"] = "taken"
    else:
        config["report"] = {"out": "taken/sub"}  # below a file
    message = _error(folder, config)
    assert f"'{key}' key of" in message and "taken" in message


def test_missing_input_file_names_the_key(folder):
    config = _base()
    config["data"]["path"] = "nowhere.csv"
    message = _error(folder, config)
    assert "'data.path' key of" in message and "nowhere.csv" in message


def test_missing_required_key(folder):
    config = _base()
    del config["data"]["membership_column"]
    message = _error(folder, config)
    assert "'data.membership_column' key of" in message and "missing" in message


def test_attack_params_are_checked_against_the_attack(folder):
    config = {**_base(), "attacks": ["loss", "lira-offline"],
              "attack_params": {"lira-offline": {"fix_varaince": True}}}
    message = _error(folder, config)
    assert "'attack_params.lira-offline.fix_varaince' key of" in message
    assert "fix_variance" in message


@pytest.mark.parametrize(("attack", "params", "words"), [
    ("rmia", {"gamma": -1}, "'gamma' parameter of RMIAAttack must be a positive real"),
    ("lira-offline", {"eps": 2.0}, "'eps' parameter of LiRAAttack must be a real number"),
    ("shadow", {"attack_model": "svm"}, "'attack_model' parameter of ShadowModelAttack"),
    ("trained-lr", {"n_splits": 1}, "'n_splits' parameter of TrainedLRAttack"),
])
def test_attack_param_values_are_refused_when_the_file_is_read(folder, attack, params,
                                                               words):
    # Each attack's check_params(), by the one check of every audit, before any work.
    config = {**_base(), "attacks": ["loss", attack], "attack_params": {attack: params}}
    message = " ".join(_error(folder, config).split())
    assert f"'attack_params.{attack}' key of" in message and words in message


def test_lira_online_is_fixed_by_the_name(folder):
    config = {**_base(), "attacks": ["loss", "lira-offline"],
              "attack_params": {"lira-offline": {"online": True}}}
    message = " ".join(_error(folder, config).split())
    assert "'attack_params.lira-offline.online' key of" in message
    assert "one of ['eps', 'fix_variance', 'min_models']" in message


def test_attack_params_for_an_attack_not_run(folder):
    config = {**_base(), "attacks": ["loss"], "attack_params": {"rmia": {}}}
    assert "'attack_params.rmia' key of" in _error(folder, config)


def test_unknown_attack_name(folder):
    message = _error(folder, {**_base(), "attacks": ["loss", "lira-onlin"]})
    assert "'attacks[1]' key of" in message and "lira-onlin" in message


@pytest.mark.parametrize(
    ("recipe", "key"),
    [({"type": "torch-mlp", "hiden": [8]}, "reference.recipe.hiden"),
     ({"type": "clone", "epochs": 3}, "reference.recipe.epochs"),
     ({"type": "callable"}, "reference.recipe.train")],
)
def test_recipe_keys_are_checked(folder, recipe, key):
    config = {**_base(), "reference": {"recipe": recipe}}
    assert f"'{key}' key of" in _error(folder, config)


def test_ray_address_with_the_local_executor(folder):
    config = {**_base(), "executor": {"name": "local", "address": "ray://head:10001"}}
    assert "'executor.address' key of" in _error(folder, config)


def test_torch_keys_on_a_sklearn_target(folder):
    config = _base()
    config["target"]["factory"] = "nets:build"
    assert "'target.factory' key of" in _error(folder, config)


def test_feature_columns_must_not_list_the_label(folder):
    config = _base()
    config["data"]["feature_columns"] = ["a", "y"]
    assert "'data.feature_columns' key of" in _error(folder, config)


def test_empty_sections_keep_their_defaults_and_values_are_mapped(folder):
    text = yaml.safe_dump({**_base(), "population": {"path": "pop.csv"},
                           "reference": {"n_models": 3, "mode": "offline"},
                           "executor": {"n_jobs": 2}, "random_state": 7,
                           "attacks": ["loss", "rmia"]}) + "report:\n"
    cfg = _load(folder, text)
    assert (cfg.n_reference_models, cfg.reference_mode, cfg.n_jobs) == (3, "offline", 2)
    assert cfg.random_state == 7 and cfg.n_bootstrap == 1000
    assert cfg.population_path == folder / "pop.csv"
    assert cfg.out == folder / "audit-report"


def test_reference_section_maps_onto_a_reference_spec(folder):
    from privaudit.training import ReferenceSpec

    config = {**_base(), "reference": {"n_models": 3, "mode": "offline",
                                       "train_fraction": 0.25}}
    cfg = _load(folder, config)
    assert cfg.reference_spec() == ReferenceSpec(n_models=3, mode="offline",
                                                 train_fraction=0.25)
    assert _load(folder, _base()).reference_spec() == ReferenceSpec()


@pytest.mark.parametrize("value", [0, 1.0, 1.5, "half"])
def test_bad_train_fraction_names_the_key(folder, value):
    config = {**_base(), "reference": {"train_fraction": value}}
    assert "'reference.train_fraction' key of" in _error(folder, config)


@pytest.mark.parametrize("content", [b"", b"\xff\xfe\x00binary", b"- a\n- b\n"])
def test_empty_binary_or_non_mapping_file(folder, content):
    (folder / "audit.yaml").write_bytes(content)
    with pytest.raises(ConfigError) as info:
        load_audit_config(folder / "audit.yaml")
    assert "audit.yaml" in str(info.value) and "\n" not in str(info.value)


def test_configuration_that_is_a_folder(folder):
    with pytest.raises(ConfigError, match="is a directory"):
        load_audit_config(folder)


@pytest.mark.parametrize(("section", "key", "value", "limit"), [
    ("reference", "n_models", 10**9, "10,000"),
    ("report", "n_bootstrap", 10**9, "100,000"),
])
def test_huge_counts_are_refused_naming_the_key_and_limit(folder, section, key, value,
                                                          limit):
    config = _base()
    config[section] = {key: value}
    message = _error(folder, config)
    assert f"'{section}.{key}'" in message and f"at most {limit}" in message
    config[section] = {key: int(limit.replace(",", ""))}
    _load(folder, config)  # the limit itself is accepted


def test_latin1_configuration_says_where_it_is_not_utf8(folder):
    path = folder / "audit.yaml"
    path.write_bytes(yaml.safe_dump(_base()).encode() + "# caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError) as info:
        load_audit_config(path)
    assert "not UTF-8" in str(info.value) and "line 7" in str(info.value)
