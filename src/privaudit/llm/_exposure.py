"""Secret spaces, the log-perplexity of a filled canary format, and exposure.

Carlini et al., "The Secret Sharer" (USENIX Security 2019): a canary is a format with a
secret slot filled with a secret drawn at random from a space ``R``; the model's
log-perplexity of the filled format ranks every candidate secret, and the inserted one's
exposure is ``log2 |R| - log2 rank`` (their Definition 3), equal to ``-log2 P_t[Px(t) <=
Px(secret)]`` (their Section 4.2), which the distribution-fit estimate approximates for
spaces too large to enumerate. Nothing here imports torch at module level.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privaudit._optional import import_optional
from privaudit._validation import check_int, check_random_state, param_error
from privaudit.exceptions import DegenerateInputWarning
from privaudit.llm._extraction import common_prefix_length

__all__ = ["SLOT", "Exposure", "SecretSpace", "exposure", "exposures",
           "secret_log_perplexity", "split_format"]

#: The secret slot of a canary format.
SLOT = "{secret}"
#: Spaces up to this size are enumerated by ``method="auto"``; larger ones are fitted.
MAX_ENUMERATE = 100_000
_LN2 = math.log(2.0)


def split_format(format: str, *, func: str) -> tuple[str, str]:
    """``format``'s text before and after its one secret slot ``{secret}``."""
    if not isinstance(format, str) or format.count(SLOT) != 1:
        raise param_error("format", func, f"a string with exactly one {SLOT!r} slot", format,
                          error=TypeError if not isinstance(format, str) else ValueError)
    prefix, suffix = format.split(SLOT)
    return prefix, suffix


@dataclass(frozen=True)
class SecretSpace:
    """Every secret of ``length`` symbols of ``alphabet``, joined by ``separator``.

    ``SecretSpace(tuple("0123456789"), 9)`` is the paper's nine-digit space (|R| = 10^9);
    a list of whole candidate secrets is ``SecretSpace(candidates, 1)``. Candidates are
    numbered in mixed radix (the first symbol most significant), so the space is never
    materialised unless enumerated.
    """

    alphabet: tuple[str, ...]
    length: int
    separator: str = ""

    def __post_init__(self) -> None:
        func = "SecretSpace"
        symbols = self.alphabet
        if isinstance(symbols, str) or not isinstance(symbols, Sequence) or not symbols:
            raise param_error("alphabet", func, "a non-empty sequence of strings", symbols)
        if not all(isinstance(s, str) for s in symbols) or len(set(symbols)) != len(symbols):
            raise param_error("alphabet", func, "distinct strings", symbols)
        object.__setattr__(self, "alphabet", tuple(symbols))
        check_int(self.length, param="length", func=func, low=1)
        if not isinstance(self.separator, str):
            raise param_error("separator", func, "a string", self.separator, error=TypeError)

    @classmethod
    def digits(cls, length: int) -> SecretSpace:
        """Secrets of ``length`` decimal digits ("000" to "999" for length 3)."""
        return cls(tuple("0123456789"), length)

    @property
    def size(self) -> int:
        """|R|, the number of candidate secrets."""
        return len(self.alphabet) ** self.length

    def secret(self, index: int) -> str:
        """The candidate numbered ``index`` (mixed radix over the alphabet)."""
        base, symbols = len(self.alphabet), []
        for _ in range(self.length):
            index, digit = divmod(int(index), base)
            symbols.append(self.alphabet[digit])
        return self.separator.join(reversed(symbols))

    def secrets(self, indices: Any) -> list[str]:
        """The candidates numbered ``indices``."""
        return [self.secret(i) for i in indices]

    def enumerate(self) -> list[str]:
        """Every candidate, in index order."""
        return self.secrets(range(self.size))

    def sample(self, n: int, random_state: Any = None, *, replace: bool = False) -> list[str]:
        """``n`` candidates drawn uniformly (``random_state``).

        Without replacement unless ``replace`` or the space has more than 2^62 secrets
        (then one uniform draw per symbol, with replacement: repeats are negligible).
        """
        rng = check_random_state(random_state, func="SecretSpace.sample")
        if replace or self.size > 2**62:
            # Beyond int64 the indices come from one draw per symbol (uniform too).
            digits = rng.integers(0, len(self.alphabet), size=(n, self.length))
            return [self.separator.join(self.alphabet[d] for d in row) for row in digits]
        if n > self.size:
            raise param_error("n", "SecretSpace.sample", f"at most the space's size "
                              f"{self.size} (without replacement)", n)
        return self.secrets(rng.choice(self.size, size=n, replace=False))

    def __contains__(self, secret: object) -> bool:
        if not isinstance(secret, str):
            return False
        if self.separator:
            parts = secret.split(self.separator)
            return len(parts) == self.length and all(p in self.alphabet for p in parts)
        return self._splits(secret, self.length)

    def _splits(self, text: str, remaining: int) -> bool:
        """Whether ``text`` is ``remaining`` alphabet symbols joined (no separator)."""
        if remaining == 0:
            return text == ""
        return any(text.startswith(s) and self._splits(text[len(s):], remaining - 1)
                   for s in self.alphabet if s)


def _prefix_tokens(tokenizer: Any, prefix: str) -> list[int]:
    return list(tokenizer(prefix)["input_ids"])


def _prefix_terms(model: Any, prefix_ids: list[int], pad: int) -> np.ndarray:
    """``C[k]``: -log2 p of the prefix's tokens 1..k-1 alone (``C[0] = C[1] = 0``)."""
    terms = np.zeros(max(len(prefix_ids), 1) + 1)
    if len(prefix_ids) >= 2:
        terms[2:len(prefix_ids) + 1] = np.cumsum(
            -_token_log_probs(model, [prefix_ids], pad)[0] / _LN2)
    return terms


def _token_log_probs(model: Any, rows: list[list[int]], pad_id: int) -> Any:
    """Log p(x_i | x_<i) in nats (float64 numpy) of each right-padded row's tokens 1.."""
    torch = import_optional("torch", extra="llm", purpose="Scoring canaries")
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for b, row in enumerate(rows):
        ids[b, :len(row)] = torch.as_tensor(row, dtype=torch.long)
        mask[b, :len(row)] = 1
    device = next(model.parameters()).device
    out = model(input_ids=ids.to(device), attention_mask=mask.to(device))
    logits = out.logits if hasattr(out, "logits") else out[0]
    # At least float32 whatever the model's dtype (float64 kept: the reference tests).
    logits = logits[:, :-1].to(torch.promote_types(logits.dtype, torch.float32))
    picked = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None].to(device))[..., 0]
    return picked.double().cpu().numpy()


def secret_log_perplexity(model: Any, tokenizer: Any, format: str,
                          secrets: Sequence[str], *, batch_size: int = 64,
                          per_token: bool = False) -> np.ndarray:
    r"""Log-perplexity (bits) of each secret in ``format``, given the format's prefix.

    ``Px(s) = -\sum_i \log_2 p(x_i | x_{<i})`` over the tokens of the filled format from
    the prefix's last token on (the secret, the text after the slot, and the prefix's last
    token, which a byte-level BPE merges into the secret's first token for some secrets:
    "is" "Ġ" + "123" is tokenized "is" "Ġ1" "23"). The Secret Sharer ranks the
    log-perplexity of the whole filled format (Definition 2); the prefix's other tokens
    are the same for every candidate and add the same amount, so the ranks, hence
    exposure, are the same, and leaving them out keeps the float error of their sum
    from breaking ties between candidates. (A secret whose tokenization changes the
    prefix before its last token is scored as its whole text minus the prefix's tokens
    alone: the same constant is removed from every candidate.) Computed directly in batches of
    ``batch_size`` (one forward pass each, log-softmax in at least float32) rather than
    through :func:`~privaudit.llm.score_texts`, whose LOSS is a per-token mean over the
    whole text: candidates of different token counts would be ranked by a different
    quantity than the paper's sum.

    Parameters
    ----------
    model, tokenizer : causal LM and its tokenizer
        The model is run without gradients in evaluation mode (its mode restored).
    format : str
        The canary format, with one ``{secret}`` slot.
    secrets : sequence of str
    batch_size : int, default=64
    per_token : bool, default=False
        Also return the number of scored tokens of each secret (a second array).

    Returns
    -------
    numpy.ndarray of float64 (and of int with ``per_token``)
    """
    torch = import_optional("torch", extra="llm", purpose="Scoring canaries")
    func = "secret_log_perplexity"
    prefix, suffix = split_format(format, func=func)
    check_int(batch_size, param="batch_size", func=func, low=1)
    prefix_ids = _prefix_tokens(tokenizer, prefix)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    rows = [list(tokenizer(prefix + s + suffix)["input_ids"]) for s in secrets]
    # Scored from the prefix's last token on (the anchor): a byte-level BPE merges the
    # prefix's trailing space into the secret's first token for some secrets and not
    # others ("are" "Ġ" "g" "reen" but "are" "Ġred"), so that token is the secret's.
    anchor = max(len(prefix_ids) - 1, 1)
    starts = np.array([max(1, min(common_prefix_length(r, prefix_ids), anchor)) for r in rows])
    values = np.empty(len(rows))
    counts = np.array([len(r) for r in rows]) - anchor
    training = model.training
    model.eval()
    try:
        with torch.no_grad():
            prefix_terms = _prefix_terms(model, prefix_ids, pad)
            for start in range(0, len(rows), batch_size):
                chunk = rows[start:start + batch_size]
                log_p = _token_log_probs(model, chunk, pad)
                for j, row in enumerate(chunk):
                    first = starts[start + j]               # log_p[i] scores token i + 1
                    own = -log_p[j, first - 1:len(row) - 1].sum() / _LN2
                    # A secret that re-tokenizes the prefix before the anchor: its own
                    # tokens from there on, minus the prefix's (full Px minus C[anchor]).
                    values[start + j] = own + prefix_terms[first] - prefix_terms[anchor]
    finally:
        model.train(training)
    return (values, counts) if per_token else values


@dataclass(frozen=True)
class Exposure:
    """A canary's exposure and how it was measured.

    Attributes
    ----------
    exposure : float
        Bits; in ``[0, log2 |R|]``.
    rank : float
        Exact: the number of candidates whose log-perplexity is at most the secret's
        (the secret included: ties count against it). Fitted: ``|R|`` times the fitted
        probability, a real number.
    space_size : int
    log_perplexity : float
        The secret's, in bits (:func:`secret_log_perplexity`).
    method : str
        ``"exact"`` or ``"fit"``.
    n_scored : int
        Candidates scored (|R| when exact, the sample's size when fitted).
    """

    exposure: float
    rank: float
    space_size: int
    log_perplexity: float
    method: str
    n_scored: int


def exact_exposure(secret_value: float, candidate_values: np.ndarray, size: int) -> float:
    """``log2 |R| - log2 rank``, the rank counting candidates at or below the secret."""
    rank = int(np.count_nonzero(candidate_values <= secret_value))
    return math.log2(size) - math.log2(max(rank, 1))


def fitted_exposure(secret_values: Any, sample_values: np.ndarray, size: int) -> Any:
    """``-log2 F(Px(secret))``, ``F`` the skew-normal fitted to the sample (Section 4.3).

    One fit for every value of ``secret_values`` (a float or an array: the same shape
    back). Capped at ``log2 |R|`` (a rank is at least 1). NaN, with a warning, when the
    sample's log-perplexities are all equal (no distribution to fit).
    """
    from scipy import stats

    points = np.asarray(secret_values, dtype=float)
    if np.ptp(sample_values) == 0:
        warnings.warn("exposure: the sampled candidates' log-perplexities are all equal; "
                      "the distribution fit is undefined. Returning NaN.",
                      DegenerateInputWarning, stacklevel=3)
        out = np.full(points.shape, np.nan)
    else:
        shape, loc, scale = stats.skewnorm.fit(sample_values)
        log_cdf = stats.skewnorm.logcdf(points, shape, loc, scale)
        out = np.minimum(-log_cdf / _LN2, math.log2(size))
    return float(out) if out.ndim == 0 else out


def exposure(model: Any, tokenizer: Any, format: str, secret: str,
             space: SecretSpace, *, method: str = "auto", n_samples: int = 10_000,
             batch_size: int = 64, random_state: Any = None) -> Exposure:
    """The exposure of ``secret`` in ``format`` among every candidate of ``space``.

    Carlini et al. (2019), Definition 3: ``exposure = log2 |R| - log2 rank(secret)``, the
    rank by :func:`secret_log_perplexity` over all candidates of ``R``. Ties: the secret
    is ranked after every candidate of equal log-perplexity (rank = candidates at or below
    it), so a tie never raises exposure; this is the paper's ``-log2 P_t[Px(t) <=
    Px(secret)]`` (Section 4.2) exactly.

    Parameters
    ----------
    model, tokenizer : causal LM and its tokenizer
    format : str
        With one ``{secret}`` slot.
    secret : str
        The inserted secret; must be a candidate of ``space``.
    space : SecretSpace
    method : {"auto", "exact", "fit"}, default="auto"
        ``"exact"`` scores every candidate (batched); ``"fit"`` scores ``n_samples``
        candidates drawn uniformly (``random_state``) and fits a skew-normal to their
        log-perplexities (Section 4.3, "Approximation by distribution modeling");
        ``"auto"`` is exact up to 100,000 candidates.
    n_samples : int, default=10,000
        Candidates drawn for the fit (at most |R|: drawn without replacement).
    batch_size : int, default=64
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    Exposure

    References
    ----------
    .. [1] Carlini, N., Liu, C., Erlingsson, U., Kos, J. and Song, D. (2019). The Secret
       Sharer: Evaluating and testing unintended memorization in neural networks. USENIX
       Security.
    """
    return exposures(model, tokenizer, format, [secret], space, method=method,
                     n_samples=n_samples, batch_size=batch_size,
                     random_state=random_state)[0]


def exposures(model: Any, tokenizer: Any, format: str, secrets: Sequence[str],
              space: SecretSpace, *, method: str = "auto", n_samples: int = 10_000,
              batch_size: int = 64, random_state: Any = None) -> list[Exposure]:
    """:func:`exposure` of several secrets of one format: one enumeration (or sample)."""
    func = "exposure"
    split_format(format, func=func)
    _check_space(space, func)
    for secret in secrets:
        if not isinstance(secret, str) or secret not in space:
            raise param_error("secret", func, "a candidate of the secret space", secret)
    if method not in ("auto", "exact", "fit"):
        raise param_error("method", func, "'auto', 'exact' or 'fit'", method)
    check_int(n_samples, param="n_samples", func=func, low=2)
    if method == "auto":
        method = "exact" if space.size <= MAX_ENUMERATE else "fit"
    if method == "exact":
        candidates = space.enumerate()
        values = secret_log_perplexity(model, tokenizer, format, candidates,
                                       batch_size=batch_size)
        # Each secret's value from the same pass as the others' (a lone pass may differ
        # in the last bit and break a tie).
        where = {c: i for i, c in reversed(list(enumerate(candidates)))}
        own = values[[where[s] for s in secrets]]
        return [Exposure(exact_exposure(v, values, space.size),
                         float(np.count_nonzero(values <= v)), space.size, float(v),
                         method, len(values)) for v in own]
    own = secret_log_perplexity(model, tokenizer, format, list(secrets),
                                batch_size=batch_size)
    sample = space.sample(min(n_samples, space.size), random_state)
    values = secret_log_perplexity(model, tokenizer, format, sample, batch_size=batch_size)
    fitted = fitted_exposure(own, values, space.size)
    return [Exposure(float(e), space.size * 2.0 ** -float(e), space.size, float(v), method,
                     len(values)) for e, v in zip(fitted, own, strict=True)]


def _check_space(space: Any, func: str) -> None:
    if not isinstance(space, SecretSpace):
        raise param_error("space", func, "a SecretSpace", space, error=TypeError)

