"""Slow, obviously correct reference implementations of privaudit.metrics.

Straight from the definitions: loops over thresholds and pairs, no sorting tricks. The
tests compare the fast implementations against these on random inputs with heavy ties.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats


def roc_points(labels, scores):
    """(fpr, tpr) of "member when score >= t" for t = inf and every distinct score."""
    labels = np.asarray(labels)
    scores = np.asarray(scores, dtype=float)
    members = scores[labels == 1]
    non_members = scores[labels == 0]
    points = [(0.0, 0.0, math.inf)]
    for t in sorted(set(scores.tolist()), reverse=True):
        tpr = sum(1 for x in members if x >= t) / len(members)
        fpr = sum(1 for x in non_members if x >= t) / len(non_members)
        points.append((fpr, tpr, t))
    return points


def auc(labels, scores):
    """P(member score > non-member score) + P(tie) / 2, by a double loop over pairs."""
    labels = np.asarray(labels)
    scores = np.asarray(scores, dtype=float)
    total = 0.0
    pairs = 0
    for m in scores[labels == 1]:
        for o in scores[labels == 0]:
            total += 1.0 if m > o else 0.5 if m == o else 0.0
            pairs += 1
    return total / pairs


def tpr_at_fpr(labels, scores, fpr):
    return max(tpr for f, tpr, _ in roc_points(labels, scores) if f <= fpr)


def advantage(labels, scores):
    return max(tpr - f for f, tpr, _ in roc_points(labels, scores))


def effective_epsilon(labels, scores, min_count=10):
    """TAPAS's loop (BinaryLabelInferenceAttackSummary.effective_epsilon), with
    privaudit's documented changes: 0/0 thresholds skipped, result clipped at 0."""
    labels = np.asarray(labels)
    scores = np.asarray(scores, dtype=float)
    n = len(scores)
    k = 0 if min_count == 0 else max(min(min_count, int(0.1 * n)), 1)
    kept = np.sort(scores)[k : n - k]
    best = 1.0
    for t in np.unique(kept):
        tp = np.mean(scores[labels == 1] >= t)
        fp = np.mean(scores[labels == 0] >= t)
        if (fp == 0 and tp > 0) or (tp == 1 and fp < 1):
            return math.inf
        if fp > 0:
            best = max(best, tp / fp)
        if tp < 1:
            best = max(best, (1 - fp) / (1 - tp))
    return math.log(best)


def clopper_pearson(k, n, confidence):
    """Two-sided exact interval by inverting the binomial tails with a root finder."""
    alpha = 1 - confidence
    low = 0.0 if k == 0 else optimize.brentq(
        lambda p: stats.binom.sf(k - 1, n, p) - alpha / 2, 0.0, 1.0, xtol=1e-15
    )
    high = 1.0 if k == n else optimize.brentq(
        lambda p: stats.binom.cdf(k, n, p) - alpha / 2, 0.0, 1.0, xtol=1e-15
    )
    return low, high


def wilson(k, n, confidence):
    """The p with |k/n - p| = z sqrt(p (1 - p) / n), found by a root finder."""
    z = stats.norm.ppf((1 + confidence) / 2)
    p_hat = k / n

    def gap(p):
        return abs(p_hat - p) - z * math.sqrt(p * (1 - p) / n)

    # Brackets start just off p_hat, where the gap is negative (it is 0 at p_hat = 0, 1).
    low = 0.0 if k == 0 else optimize.brentq(gap, 0.0, p_hat - 1e-12, xtol=1e-15)
    high = 1.0 if k == n else optimize.brentq(gap, p_hat + 1e-12, 1.0, xtol=1e-15)
    return low, high


def epsilon_bounds(tp, n_pos, fp, n_neg, confidence, tails=2):
    """Jagielski-style bounds at one threshold, from scipy's exact binomial intervals."""
    level = 1 - 2 * (1 - confidence) / tails  # two-sided level giving the wanted tail
    tpr = stats.binomtest(tp, n_pos).proportion_ci(level, method="exact")
    fpr = stats.binomtest(fp, n_neg).proportion_ci(level, method="exact")

    def log_ratio(a, b):
        if a == 0:
            return -math.inf
        return math.inf if b == 0 else math.log(a / b)

    low = max(0.0, log_ratio(tpr.low, fpr.high), log_ratio(1 - fpr.high, 1 - tpr.low))
    high = max(0.0, log_ratio(tpr.high, fpr.low), log_ratio(1 - fpr.low, 1 - tpr.high))
    return low, high


def stratified_bootstrap(metric, labels, scores, n_resamples, confidence, seed):
    """Percentile bootstrap with the documented draws: members then non-members, one
    (n_resamples, group size) integer array per group (single chunk: small n only)."""
    labels = np.asarray(labels)
    scores = np.asarray(scores, dtype=float)
    rng = np.random.default_rng(seed)
    members = np.flatnonzero(labels == 1)
    non_members = np.flatnonzero(labels == 0)
    draw_m = members[rng.integers(0, len(members), size=(n_resamples, len(members)))]
    draw_o = non_members[rng.integers(0, len(non_members), size=(n_resamples, len(non_members)))]
    values = []
    for r in range(n_resamples):
        idx = np.concatenate([draw_m[r], draw_o[r]])
        values.append(metric(labels[idx], scores[idx]))
    alpha = 1 - confidence
    low, high = np.quantile(values, [alpha / 2, 1 - alpha / 2])
    return metric(labels, scores), low, high
