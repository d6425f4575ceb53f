"""The statistics written straight from their definitions: one text at a time, no padding.

Slow and obviously correct: every fast path of privaudit.llm is compared with this, text by
text.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import torch


def encode(tokenizer, text):
    """(ids, labelled) as the definitions read them: a pair scores only its answer."""
    if isinstance(text, str):
        ids = list(tokenizer(text)["input_ids"])
        return ids, [j > 0 for j in range(len(ids))]  # index 0: no label (nothing predicts it)
    prompt = list(tokenizer(text[0])["input_ids"])
    answer = list(tokenizer(text[1], add_special_tokens=False)["input_ids"])
    return prompt + answer, [False] * len(prompt) + [True] * len(answer)


def per_token(model, ids, labelled, prefix=()):
    """[(l_t, mu_t, sigma_t, x_t)] for every scored token, in float64 from the logits."""
    full = list(prefix) + list(ids)
    marks = [False] * len(prefix) + list(labelled)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([full])).logits[0].double()
    rows = []
    for t in range(1, len(full)):
        if not marks[t]:
            continue
        log_p = torch.log_softmax(logits[t - 1], dim=-1)
        p = log_p.exp()
        mu = float((p * log_p).sum())
        var = float((p * log_p**2).sum()) - mu * mu
        rows.append((float(log_p[full[t]]), mu, math.sqrt(max(var, 1e-6)), full[t]))
    return rows


def lowest_mean(values, k):
    n = max(1, math.floor(k * len(values)))
    return float(np.mean(sorted(values)[:n]))


def statistics(model, tokenizer, text, *, k=0.2, frequencies=None, a=0.01, reference=None,
               prefix_text=None, compat=None):
    """Every statistic of one text, as the issue and the papers define them."""
    ids, labelled = encode(tokenizer, text)
    rows = per_token(model, ids, labelled)
    if not rows:
        return dict.fromkeys(["loss", "min-k", "min-k-plus-plus", "zlib", "dc-pdd",
                              "reference", "recall"], math.nan)
    ls = [r[0] for r in rows]
    zs = [(r[0] - r[1]) / r[2] for r in rows]
    out = {}
    if compat == "open-unlearning":
        out["loss"] = -sum(ls) / sum(labelled)      # labels != -100, before the shift
        kept = ls[:-1] if labelled[-1] else ls      # the last labelled token is dropped
        kept_z = zs[:-1] if labelled[-1] else zs
        out["min-k"] = -lowest_mean(kept, k) if kept else math.nan
        out["min-k-plus-plus"] = -lowest_mean(kept_z, k) if kept_z else math.nan
    else:
        out["loss"] = -float(np.mean(ls))
        out["min-k"] = -lowest_mean(ls, k)
        out["min-k-plus-plus"] = -lowest_mean(zs, k)
    scored_text = text if isinstance(text, str) else text[1]
    out["zlib"] = out["loss"] / len(zlib.compress(scored_text.encode("utf-8")))
    if frequencies is not None:
        seen, terms = set(), []
        for l_t, _, _, token in rows:
            if token in seen:
                continue
            seen.add(token)
            terms.append(min(math.exp(l_t) * math.log(1 / frequencies[token]), a))
        out["dc-pdd"] = -float(np.mean(terms))
    if reference is not None:
        ref = per_token(reference, ids, labelled)
        out["reference"] = out["loss"] - (-float(np.mean([r[0] for r in ref])))
    if prefix_text is not None:
        out["recall"] = recall_authors(model, tokenizer, text, prefix_text)
    return out


def recall_authors(model, tokenizer, text, shots):
    """ReCaLL as the authors' ``get_conditional_ll`` / ``get_ll`` compute it, negated.

    The shots joined with nothing between them, encoded with the tokenizer's template; the
    text encoded likewise and appended; labels -100 on the prefix only, so the text's
    first token is scored from the prefix's last one; ``LL(x)`` from the text alone (its
    first token unscored). Returns ``-(LL(x | prefix) / LL(x))``. A (prompt, answer) pair
    labels its answer only, in both passes.
    """
    prefix = tokenizer("".join([shots] if isinstance(shots, str) else shots))["input_ids"]
    ids, labelled = encode(tokenizer, text)
    # After a prefix, every token of a plain text has a predecessor: all are labels.
    after = [True] * len(ids) if isinstance(text, str) else labelled

    def labels(marks):
        return [t if lab else -100 for t, lab in zip(ids, marks, strict=True)]

    x = torch.tensor([list(prefix) + ids])
    cond_labels = torch.tensor([[-100] * len(prefix) + labels(after)])
    alone, alone_labels = torch.tensor([ids]), torch.tensor([labels(labelled)])
    with torch.no_grad():
        cond = float(model(input_ids=x, labels=cond_labels).loss)
        loss = float(model(input_ids=alone, labels=alone_labels).loss)
    return -((-cond) / (-loss))


def gradnorm(model, tokenizer, text, p=2):
    """One backward pass for this text alone, in evaluation mode."""
    ids, labelled = encode(tokenizer, text)
    model.eval()
    model.zero_grad(set_to_none=True)
    x = torch.tensor([ids])
    logits = model(input_ids=x).logits[0].float()
    log_p = torch.log_softmax(logits[:-1], dim=-1)
    token = log_p.gather(-1, x[0, 1:, None])[:, 0]
    mask = torch.tensor(labelled[1:], dtype=torch.float32)
    loss = -(token * mask).sum() / mask.sum()
    loss.backward()
    norms = [torch.linalg.vector_norm(w.grad.double().flatten(), ord=p).item()
             for w in model.parameters() if w.requires_grad]
    model.zero_grad(set_to_none=True)
    return float(np.mean(norms))
