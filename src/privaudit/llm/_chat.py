"""(prompt, answer) pairs through a tokenizer's chat template, as chat models are trained.

A chat model saw its fine-tuning answers inside its template (a system turn, the user's
turn, the assistant's header, an end-of-turn token), so the membership statistics of a
pair are read from the same token sequence: the whole conversation rendered by
``tokenizer.apply_chat_template`` (the prompt as the user's turn, the answer as the
assistant's), and only the tokens after the prompt rendered with
``add_generation_prompt=True`` scored: the answer and the template's end of turn. This is
open-unlearning's ``preprocess_chat_instance`` (``apply_chat_template: true``), EOS
appended when the template does not end with it.

Imported only when a chat template is asked for: transformers stays out of
``import privaudit``.
"""

from __future__ import annotations

from typing import Any

from privaudit._validation import param_error

__all__ = ["check_chat_options", "encode_chat_pair"]

_FUNC = "score_texts"


def check_chat_options(tokenizer: Any, chat_template: Any, system_prompt: Any) -> None:
    """The chat options checked: one error naming the option at fault.

    ``chat_template`` a bool (True only for a tokenizer with a template), ``system_prompt``
    a string given only with ``chat_template=True``.
    """
    if not isinstance(chat_template, bool):
        raise param_error("chat_template", _FUNC, "True or False", chat_template,
                          error=TypeError)
    if system_prompt is not None and not (isinstance(system_prompt, str) and chat_template):
        raise param_error("system_prompt", _FUNC, "a string, given with chat_template=True",
                          system_prompt)
    if chat_template and not getattr(tokenizer, "chat_template", None):
        raise param_error("chat_template", _FUNC, "False for a tokenizer without a chat "
                          "template (its tokenizer_config.json has no 'chat_template'; set "
                          "tokenizer.chat_template to a Jinja template)", True)


def _ids(rendered: Any) -> list[int]:
    """Token ids from ``apply_chat_template(tokenize=True)``: a list, or an encoding."""
    if hasattr(rendered, "keys") and "input_ids" in rendered.keys():
        rendered = rendered["input_ids"]
    return [int(t) for t in rendered]


def encode_chat_pair(tokenizer: Any, prompt: str, answer: str,
                     system_prompt: str | None = None) -> tuple[list[int], int]:
    """The conversation's token ids and how many of them are the prompt (not scored).

    The conversation is ``[system?, user: prompt, assistant: answer]`` rendered by the
    tokenizer's template; the prompt is the conversation without the answer, rendered
    with ``add_generation_prompt=True`` (up to the assistant's header). The tokenizer's EOS
    ends the conversation when the template does not put it there, as open-unlearning
    appends it. A template that renders the prompt differently alone and inside the
    conversation is an error naming ``chat_template`` (the answer's tokens could not be
    told apart).
    """
    chat = [{"role": "system", "content": system_prompt}] if system_prompt else []
    chat.append({"role": "user", "content": prompt})
    head = _ids(tokenizer.apply_chat_template(chat, tokenize=True,
                                              add_generation_prompt=True))
    whole = _ids(tokenizer.apply_chat_template(
        [*chat, {"role": "assistant", "content": answer}], tokenize=True,
        add_generation_prompt=False))
    eos = getattr(tokenizer, "eos_token_id", None)
    if eos is not None and (not whole or whole[-1] != eos):
        whole.append(int(eos))
    if whole[:len(head)] != head:
        raise param_error("chat_template", _FUNC, "a template whose rendered prompt (with "
                          "add_generation_prompt=True) begins the rendered conversation",
                          f"<a template that renders prompt {prompt[:40]!r} differently>")
    return whole, len(head)
