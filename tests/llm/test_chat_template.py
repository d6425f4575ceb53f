"""(prompt, answer) pairs through the tokenizer's chat template (``chat_template=True``).

The tokenizer is the tests' tiny BPE one saved to a folder with a Jinja template in its
``tokenizer_config.json`` and loaded back, as a chat model's tokenizer is; the reference
renders the conversation by hand and scores the tokens after the prompt.
"""

import json
import zlib

import numpy as np
import pytest
import transformers
from reference_stats import lowest_mean, per_token

from conftest import corpus
from privaudit.llm import score_texts

TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['role'] == 'system' %}[SYS]{{ m['content'] }}\n"
    "{% elif m['role'] == 'user' %}[USER]{{ m['content'] }}\n"
    "{% else %}[BOT]{{ m['content'] }}<|endoftext|>{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}[BOT]{% endif %}"
)
#: Short pairs: the template's tags cost the tiny BPE a token per byte (128 positions).
PAIRS = [(" ".join(q.split()[:6]), " ".join(a.split()[:8]))
         for q, a in zip(corpus(4, seed=11), corpus(4, seed=12), strict=True)]


def with_template(tokenizer, folder, template):
    """``tokenizer`` saved with ``template`` in its tokenizer_config.json, loaded back."""
    tokenizer.save_pretrained(folder)
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["chat_template"] = template
    config_path.write_text(json.dumps(config))
    return transformers.AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module")
def chat_tokenizer(tiny_tokenizer, tmp_path_factory):
    return with_template(tiny_tokenizer, tmp_path_factory.mktemp("chat"), TEMPLATE)


def rendered_by_hand(tokenizer, prompt, answer, system=None):
    """(ids, labelled): the conversation as the template writes it, the answer scored."""
    head = (f"[SYS]{system}\n" if system else "") + f"[USER]{prompt}\n[BOT]"
    ids = tokenizer(head + answer + "<|endoftext|>")["input_ids"]
    n_head = len(tokenizer(head)["input_ids"])
    return ids, [j >= n_head for j in range(len(ids))]


@pytest.mark.parametrize("system", [None, "You audit privacy."])
def test_pairs_are_scored_inside_the_template(tiny_model, chat_tokenizer, system):
    names = ["loss", "min-k", "min-k-plus-plus", "zlib"]
    frame = score_texts(tiny_model, chat_tokenizer, PAIRS, attacks=names, chat_template=True,
                        system_prompt=system, batch_size=3)
    for i, (prompt, answer) in enumerate(PAIRS):
        ids, labelled = rendered_by_hand(chat_tokenizer, prompt, answer, system)
        assert ids[-1] == chat_tokenizer.eos_token_id  # the template's own end of turn
        rows = per_token(tiny_model, ids, labelled)
        ls, zs = [r[0] for r in rows], [(r[0] - r[1]) / r[2] for r in rows]
        want = {"loss": -np.mean(ls), "min-k": -lowest_mean(ls, 0.2),
                "min-k-plus-plus": -lowest_mean(zs, 0.2)}
        want["zlib"] = want["loss"] / len(zlib.compress(answer.encode("utf-8")))
        for name in names:
            assert frame[name][i] == pytest.approx(want[name], rel=2e-5), (i, name)
    plain = score_texts(tiny_model, chat_tokenizer, PAIRS, attacks=["loss"])
    assert not np.allclose(plain["loss"], frame["loss"])  # the template was applied


def test_an_eos_ends_a_conversation_whose_template_omits_it(tiny_model, tiny_tokenizer,
                                                           tmp_path):
    """As open-unlearning appends it: the answer's last scored token is the EOS."""
    bare = with_template(tiny_tokenizer, tmp_path, TEMPLATE.replace("<|endoftext|>", ""))
    frame = score_texts(tiny_model, bare, PAIRS[:2], attacks=["loss"], chat_template=True)
    for i, (prompt, answer) in enumerate(PAIRS[:2]):
        ids, labelled = rendered_by_hand(bare, prompt, answer)  # ends with the EOS
        want = -np.mean([r[0] for r in per_token(tiny_model, ids, labelled)])
        assert frame["loss"][i] == pytest.approx(want, rel=2e-5)


@pytest.mark.parametrize(("kwargs", "error", "name"), [
    ({"chat_template": True, "texts": ["a plain text"]}, TypeError, "texts"),
    ({"chat_template": True, "texts": [[3, 4, 5]]}, TypeError, "texts"),
    ({"chat_template": "yes"}, TypeError, "chat_template"),
    ({"system_prompt": "You audit."}, ValueError, "system_prompt"),
    ({"chat_template": True, "system_prompt": 3}, ValueError, "system_prompt"),
])
def test_bad_chat_options_are_one_error_naming_them(tiny_model, chat_tokenizer, kwargs,
                                                    error, name):
    texts = kwargs.pop("texts", PAIRS[:1])
    with pytest.raises(error, match=f"'{name}'"):
        score_texts(tiny_model, chat_tokenizer, texts, **kwargs)


def test_a_tokenizer_without_a_template_names_chat_template(tiny_model, tiny_tokenizer,
                                                            tmp_path):
    assert not getattr(tiny_tokenizer, "chat_template", None)
    with pytest.raises(ValueError, match=r"'chat_template'.*without a chat template"):
        score_texts(tiny_model, tiny_tokenizer, PAIRS[:1], chat_template=True)
    # A template that renders the prompt one way alone and another in the conversation.
    odd = with_template(tiny_tokenizer, tmp_path,
                        "{% if add_generation_prompt %}[ASK]{% endif %}" + TEMPLATE)
    with pytest.raises(ValueError, match=r"'chat_template'.*begins the rendered"):
        score_texts(tiny_model, odd, PAIRS[:1], chat_template=True)
