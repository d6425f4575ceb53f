"""The inputs of ``privaudit audit llm``: texts files and the configuration file."""

import json

import pytest

from privaudit.cli._errors import ConfigError
from privaudit.cli._llm import llm_run, load_llm_config, read_texts


def test_texts_from_txt_jsonl_and_csv(tmp_path):
    (tmp_path / "a.txt").write_text("first text\n\n second one \n", encoding="utf-8")
    assert read_texts(tmp_path / "a.txt") == ["first text", " second one "]
    lines = [json.dumps("plain"), json.dumps({"text": "keyed", "x": 1}),
             json.dumps({"prompt": "Q?", "answer": "A."}), ""]
    (tmp_path / "b.jsonl").write_text("\n".join(lines), encoding="utf-8")
    assert read_texts(tmp_path / "b.jsonl") == ["plain", "keyed", ("Q?", "A.")]
    (tmp_path / "c.csv").write_text('id,body\n1,"a, quoted\nmultiline"\n2,b\n',
                                    encoding="utf-8")
    assert read_texts(tmp_path / "c.csv", text_column="body") == ["a, quoted\nmultiline", "b"]


@pytest.mark.parametrize("name,content,message", [
    ("x.jsonl", '"ok"\n{broken\n', r"Line 2 of .*x\.jsonl is not JSON"),
    ("x.jsonl", '{"other": 1}\n', r"Line 1 .* string 'text'"),
    ("x.csv", "a,b\n1,2\n", r"no column 'text'"),
    ("x.md", "text", r"must end in \.txt"),
    ("x.txt", "\n \n", r"holds no text"),
])
def test_bad_texts_files_name_the_file_and_line(tmp_path, name, content, message):
    (tmp_path / name).write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        read_texts(tmp_path / name)


def test_non_utf8_and_missing_files(tmp_path):
    (tmp_path / "x.txt").write_bytes(b"caf\xe9\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        read_texts(tmp_path / "x.txt")
    with pytest.raises(ConfigError, match="does not exist"):
        read_texts(tmp_path / "missing.txt", where="--members")


def _config(tmp_path, text: str):
    (tmp_path / "model").mkdir(exist_ok=True)
    for name in ("m.txt", "n.txt"):
        (tmp_path / name).write_text("a text\n", encoding="utf-8")
    path = tmp_path / "audit.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_config_file_form(tmp_path):
    path = _config(tmp_path, """
target: {path: model, name: tiny}
texts: {members: m.txt, non_members: n.txt}
attacks: [loss, zlib]
scoring: {k: 0.1, max_length: 64}
accuracy: {forget: 0.2}
report: {out: out, n_bootstrap: 100}
""")
    run = load_llm_config(path)
    assert run.model == tmp_path / "model" and run.name == "tiny"
    assert run.texts == {"members": tmp_path / "m.txt", "non_members": tmp_path / "n.txt"}
    assert run.scoring["k"] == 0.1 and run.scoring["max_length"] == 64
    assert run.accuracy == {"forget": 0.2, "retain": None}
    assert run.out == tmp_path / "out" and run.n_bootstrap == 100


@pytest.mark.parametrize("text,message", [
    ("target: {path: nowhere}\ntexts: {members: m.txt, non_members: n.txt}\n",
     r"target\.path.*local model folder"),
    ("target: {path: model}\ntexts: {members: m.txt, holdout: n.txt}\n",
     r"texts.*members and non_members, or forget and holdout"),
    ("target: {path: model}\ntexts: {members: m.txt, non_members: n.txt}\n"
     "scoring: {k: 0}\n", r"scoring\.k"),
    ("target: {path: model}\ntexts: {members: m.txt, non_members: n.txt}\n"
     "accuracy: {forget: 2}\n", r"accuracy\.forget"),
    ("target: {path: model}\ntexts: {members: m.txt, non_members: n.txt}\nmodel: x\n",
     r"model"),
])
def test_config_errors_name_the_key(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message):
        load_llm_config(_config(tmp_path, text))


def test_options_need_one_form(tmp_path):
    common = {"text_column": "text", "reference": None, "retrained": None, "attacks": None}
    texts = {"members": tmp_path / "m.txt", "non_members": None, "forget": None,
             "holdout": None}
    with pytest.raises(ConfigError, match="--members and --non-members"):
        llm_run(None, model=tmp_path, texts=texts, **common)
    with pytest.raises(ConfigError, match="--model"):
        llm_run(None, model=None, texts=texts, **common)
    with pytest.raises(ConfigError, match="not both"):
        llm_run(tmp_path / "c.yaml", model=tmp_path, texts=texts, **common)
    texts["non_members"] = tmp_path / "n.txt"
    run = llm_run(None, model=tmp_path, texts=texts, **{**common, "attacks": "loss, zlib"})
    assert run.attacks == ["loss", "zlib"] and set(run.texts) == {"members", "non_members"}
