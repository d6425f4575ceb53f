"""A built-in DP-SGD training function: Opacus's PrivacyEngine on an MLP or a small CNN.

Opacus and torch are imported inside the methods (``pip install 'privaudit[dp]'``), so
importing :mod:`privaudit.dp` costs nothing where they are missing.
"""

from __future__ import annotations

import functools
import numbers
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._optional import import_optional
from privaudit._validation import check_random_state, param_error
from privaudit.dp._canaries import CanarySet
from privaudit.dp._protocol import DPTrainingRun

__all__ = ["ACCOUNTANTS", "OpacusRecipe"]

#: The Opacus accountants a recipe can report claims from.
ACCOUNTANTS = ("rdp", "prv", "gdp")


def _opacus(module: str = "opacus") -> Any:
    return import_optional(module, extra="dp", purpose="Training with DP-SGD (OpacusRecipe)")


def _real(value: Any, param: str, *, low: float = 0.0, high: float = np.inf,
          low_open: bool = True, high_open: bool = True) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    if ok:
        ok = (value > low if low_open else value >= low) and (
            value < high if high_open else value <= high)
    if not ok:
        left, right = "(" if low_open else "[", ")" if high_open else "]"
        raise param_error(param, "OpacusRecipe", f"a real number in {left}{low}, {high}{right}",
                          value)
    return float(value)


def _positive_ints(value: Any, param: str) -> tuple[int, ...]:
    items = (value,) if isinstance(value, numbers.Integral) else value
    if (not isinstance(items, Sequence) or isinstance(items, str) or any(
            isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1 for v in items)):
        raise param_error(param, "OpacusRecipe", "a positive integer or a sequence of them",
                          value)
    return tuple(int(v) for v in items)


class OpacusRecipe:
    """DP-SGD with Opacus's ``PrivacyEngine``, callable as a DP audit's training function.

    ``recipe(dataset, canaries, *, random_state) -> DPTrainingRun``: trains on
    ``dataset = (features, labels)`` plus the included ``canaries`` (input-space ones
    appended to the data; dirac-gradient ones as extra per-example gradients), and reports
    the accountants' claimed epsilon at ``delta``.

    Parameters
    ----------
    architecture : {"mlp", "cnn"}, default="mlp"
        privaudit's torch networks: :class:`~privaudit.training.TorchMLPRecipe`'s MLP
        (``hidden``) or :class:`~privaudit.training.TorchCNNRecipe`'s CNN
        (``image_shape``, ``channels``, ``hidden[0]``). Both standardise their inputs with
        the mean and standard deviation of ``dataset``'s features (never the canaries'):
        treat them as public, or pass standardised features.
    noise_multiplier : float, optional
        sigma of DP-SGD. ``0`` trains without DP: no noise, clipping kept (so that the only
        difference from the private runs is the noise), and ``claimed_epsilon = {}``.
    target_epsilon : float, optional
        Instead of ``noise_multiplier``: sigma from Opacus's ``get_noise_multiplier`` for
        this epsilon at ``delta`` over the run's steps, with ``calibration_accountant``
        (what ``make_private_with_epsilon`` does).
    delta : float, default=1e-5
    max_grad_norm : float, default=1.0
        Per-example clipping norm C.
    epochs : int, default=4
        Passes: ``epochs * int(1 / sample_rate)`` steps.
    sample_rate : float, default=0.01
        Poisson sampling rate q of every example and every dirac-gradient canary.
    learning_rate : float, default=2.0
        Plain SGD (no momentum, no weight decay: the update is the noisy mean gradient).
    hidden : int or sequence of int, default=(64,)
    accountants : sequence of {"rdp", "prv", "gdp"}, default=("rdp", "prv")
        Whose claimed epsilon to report.
    noise_scale : float in (0, 1], default=1.0
        Train with ``noise_scale * sigma`` while the accountants are told sigma: the
        "mis-accounted" run that a correct audit must refute. Applied after
        ``make_private`` to the optimizer's ``noise_multiplier``; the claims are computed
        from sigma, not from the optimizer.
    calibration_accountant : str, default="prv"
        The accountant that turns ``target_epsilon`` into sigma (the tightest one: its
        claim is the one an audit can come closest to).
    image_shape : (int, int, int), default=(1, 8, 8)
        ``cnn`` only.
    channels : sequence of int, default=(8, 16)
        ``cnn`` only.
    dirac_slots : int, default=0
        Add this many parameters the data never moves (see :meth:`dirac_coordinates`):
        dirac-gradient canaries drawn among them compete with the noise alone. 0: the
        network's own parameters only.
    num_threads : int, default=1
        torch threads while training (one thread: bit-identical runs).

    Notes
    -----
    Every draw comes from ``random_state``: three seeds for the initialisation, the
    Poisson sampling (Opacus's ``UniformWithReplacementSampler``) and the noise (Opacus's
    ``noise_generator``; secure_mode off). The same seed gives the same parameters.

    A dirac-gradient canary is an extra example: it is sampled with the same Poisson rate
    as the data, and when sampled its per-example gradient ``max_grad_norm * e_j`` is
    appended to every parameter's ``grad_sample`` before Opacus clips, sums and adds
    noise; the expected batch size counts the included canaries. Putting it in every step
    instead would break the accountant's sampling assumption (Steinke et al. 2023, Sec. 6;
    Nasr et al. 2023, Sec. 4.2).

    How tight a one-run audit of the final model can be depends on the training: over T
    steps at sample rate q, an included Dirac canary moves its coordinate by
    ``q sqrt(T) / sigma`` noise standard deviations on average, which approaches the
    Gaussian-DP mu of the claim only as q -> 1, and only if the data does not move the
    coordinate too. For a white-box audit near the claim, use a large ``sample_rate``
    and ``dirac_slots`` (q = 0.8, 25 steps: 86% of the idealised ceiling of Steinke et
    al.'s bound at epsilon = 8 with 1,000 canaries on TV16; q = 0.5: 77%;
    benchmarks/bench_dp_audit.py); at q = 0.01 the same audit finds almost nothing,
    though the claim is the same.

    References
    ----------
    .. [1] Abadi, M. et al. "Deep Learning with Differential Privacy." CCS 2016.
    .. [2] Yousefpour, A. et al. "Opacus: User-Friendly Differential Privacy Library in
       PyTorch." 2021.
    .. [3] Steinke, T., Nasr, M., Jagielski, M. "Privacy Auditing with One (1) Training
       Run." NeurIPS 2023.
    """

    def __init__(self, architecture: str = "mlp", *, noise_multiplier: float | None = None,
                 target_epsilon: float | None = None, delta: float = 1e-5,
                 max_grad_norm: float = 1.0, epochs: int = 4, sample_rate: float = 0.01,
                 learning_rate: float = 2.0, hidden: int | Sequence[int] = (64,),
                 accountants: Sequence[str] = ("rdp", "prv"), noise_scale: float = 1.0,
                 calibration_accountant: str = "prv",
                 image_shape: Sequence[int] = (1, 8, 8), channels: Sequence[int] = (8, 16),
                 dirac_slots: int = 0, num_threads: int = 1) -> None:
        func = "OpacusRecipe"
        if architecture not in ("mlp", "cnn"):
            raise param_error("architecture", func, "'mlp' or 'cnn'", architecture)
        if (noise_multiplier is None) == (target_epsilon is None):
            raise param_error("noise_multiplier", func, "given, or target_epsilon given "
                              "(exactly one of them)", noise_multiplier)
        self.architecture = architecture
        self.noise_multiplier = None if noise_multiplier is None else _real(
            noise_multiplier, "noise_multiplier", low_open=False)
        self.target_epsilon = None if target_epsilon is None else _real(
            target_epsilon, "target_epsilon")
        self.delta = _real(delta, "delta", high=1.0)
        self.max_grad_norm = _real(max_grad_norm, "max_grad_norm")
        self.epochs = _positive_ints(epochs, "epochs")[0]
        self.sample_rate = _real(sample_rate, "sample_rate", high=1.0, high_open=False)
        self.learning_rate = _real(learning_rate, "learning_rate")
        self.hidden = _positive_ints(hidden, "hidden")
        self.accountants = self._check_accountants(accountants, "accountants")
        self.calibration_accountant = self._check_accountants(
            (calibration_accountant,), "calibration_accountant")[0]
        self.noise_scale = _real(noise_scale, "noise_scale", high=1.0, high_open=False)
        self.image_shape = _positive_ints(image_shape, "image_shape")
        self.channels = _positive_ints(channels, "channels")
        self.dirac_slots = 0 if dirac_slots == 0 else _positive_ints(
            dirac_slots, "dirac_slots")[0]
        self.num_threads = _positive_ints(num_threads, "num_threads")[0]
        self._sigma: float | None = None

    @staticmethod
    def _check_accountants(names: Any, param: str) -> tuple[str, ...]:
        if isinstance(names, str) or not isinstance(names, Sequence) or not names or any(
                n not in ACCOUNTANTS for n in names):
            raise param_error(param, "OpacusRecipe", f"a non-empty sequence of {ACCOUNTANTS}",
                              names)
        return tuple(names)

    def __repr__(self) -> str:
        keys = ("architecture", "noise_multiplier", "target_epsilon", "delta",
                "max_grad_norm", "epochs", "sample_rate", "learning_rate", "hidden",
                "noise_scale")
        return f"OpacusRecipe({', '.join(f'{k}={getattr(self, k)!r}' for k in keys)})"

    # ------------------------------------------------------------------ model
    @property
    def n_steps(self) -> int:
        """Optimizer steps of one run: ``epochs * int(1 / sample_rate)`` (Opacus's count)."""
        return self.epochs * int(1 / self.sample_rate)

    def _build(self, n_features: int, n_classes: int) -> Any:
        """The network (privaudit's MLP or CNN), wrapped with the Dirac slots if any."""
        from privaudit.training import TorchCNNRecipe, TorchMLPRecipe

        if self.architecture == "mlp":
            net = TorchMLPRecipe(hidden=self.hidden).build_network(n_features, n_classes)
        else:
            if len(self.image_shape) != 3 or int(np.prod(self.image_shape)) != n_features:
                raise param_error("image_shape", "OpacusRecipe", f"(channels, height, width) "
                                  f"holding the {n_features} features of a record",
                                  self.image_shape)
            net = TorchCNNRecipe(image_shape=self.image_shape, channels=self.channels,
                                 hidden=self.hidden[0]).build_network(n_features, n_classes)
        if not self.dirac_slots:
            return net
        from privaudit.dp._nets import DiracSlotNet

        return DiracSlotNet(net, self.dirac_slots)

    def _network_size(self, dataset: tuple[Any, Any]) -> int:
        X, y = dataset
        n_features = int(np.asarray(X).reshape(len(X), -1).shape[1])
        net = self._build(n_features, int(np.unique(np.asarray(y)).size))
        return int(sum(p.numel() for p in net.parameters()))

    def n_parameters(self, dataset: tuple[Any, Any]) -> int:
        """Flat parameter count of the network for ``dataset`` (for dirac-gradient canaries)."""
        return self._network_size(dataset)

    def dirac_coordinates(self, dataset: tuple[Any, Any]) -> NDArray[np.int64]:
        """The flat indices of the Dirac slots (the last ``dirac_slots`` parameters).

        Pass them as ``make_canaries(..., parameter_indices=...)``: a Dirac canary on a
        coordinate the data moves competes with the data's gradients as well as the
        noise, which weakens the audit (never invalidates it).
        """
        total = self._network_size(dataset)
        return np.arange(total - self.dirac_slots, total, dtype=np.int64)

    # ------------------------------------------------------------------ privacy
    def sigma(self) -> float:
        """The noise multiplier the accountants are told (from ``target_epsilon`` if given).

        For ``target_epsilon``: the root in sigma of ``epsilon(sigma) = target_epsilon`` for
        ``calibration_accountant`` over :attr:`n_steps` steps, by Brent's method from a
        central-limit guess (sigma within 0.2%: the claim within about 1% of the target;
        the run reports the accountant's exact claim at that sigma). Opacus's
        ``get_noise_multiplier`` bisects to the same root with about three times as many
        evaluations of the slow PRV accountant. The result is kept for later calls.
        """
        if self.noise_multiplier is not None:
            return self.noise_multiplier
        if self._sigma is None:
            self._sigma = _calibrate(self.calibration_accountant, self.target_epsilon,
                                     self.delta, self.sample_rate, self.n_steps)
        return self._sigma

    def claimed_epsilon(self, sigma: float, n_steps: int) -> dict[str, float]:
        """Each accountant's epsilon at ``delta`` for ``n_steps`` steps at ``sigma``."""
        if sigma == 0:
            return {}
        return {name: _epsilon(name, sigma, self.delta, self.sample_rate, n_steps)
                for name in self.accountants}

    # ------------------------------------------------------------------ training
    def __call__(self, dataset: tuple[Any, Any], canaries: CanarySet, *,
                 random_state: Any) -> DPTrainingRun:
        """Train one DP-SGD model on ``dataset`` and the included ``canaries``.

        Returns
        -------
        DPTrainingRun
            The network (evaluation mode, ``classes_`` set), the canary ids, the claims,
            the flat parameters before and after, and the CPU seconds.
        """
        from privaudit.dp._opacus_loop import train_dp_sgd

        start = time.process_time()
        sigma = self.sigma()
        seeds = check_random_state(random_state, func="OpacusRecipe").integers(
            0, 2**62, size=3)
        X, y, classes = _prepare(dataset, canaries)
        net, initial, final = train_dp_sgd(self, X, y, classes, canaries, sigma,
                                           [int(s) for s in seeds])
        return DPTrainingRun(
            model=net, canary_ids=np.asarray(canaries.ids).copy(),
            claimed_epsilon=self.claimed_epsilon(sigma, self.n_steps), delta=self.delta,
            noise_multiplier=sigma, initial_parameters=initial, final_parameters=final,
            learning_rate=self.learning_rate, n_steps=self.n_steps,
            train_seconds=time.process_time() - start)


@functools.lru_cache(maxsize=256)
def _epsilon(accountant: str, sigma: float, delta: float, sample_rate: float,
             n_steps: int) -> float:
    """Opacus's ``accountant`` epsilon at ``delta`` for ``n_steps`` Poisson-sampled steps.

    Cached: the calibration's last evaluation is the run's claim.
    """
    create_accountant = _opacus("opacus.accountants").create_accountant
    acc = create_accountant(accountant)
    acc.history = [(float(sigma), float(sample_rate), int(n_steps))]
    with warnings.catch_warnings():
        # RDP at a small sigma: "optimal order is the largest alpha" (a looser, valid claim).
        warnings.filterwarnings("ignore", message="Optimal order", category=UserWarning)
        # PRV at sample_rate 1 takes log(0) on a branch np.where discards.
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        return float(acc.get_epsilon(delta=delta))


def _clt_sigma(target: float, delta: float, sample_rate: float, n_steps: int) -> float:
    """A first guess of sigma: the central limit theorem for DP-SGD (Bu, Dong, Long, Su 2020).

    ``mu = q sqrt(T (exp(1 / sigma^2) - 1))`` (their Thm. 5) with ``mu = gdp_mu(target,
    delta)`` (Dong, Roth, Su 2022, Cor. 2.13), solved for sigma.
    """
    from privaudit.metrics import gdp_mu

    ratio = gdp_mu(target, delta) / (sample_rate * np.sqrt(n_steps))
    return float(1.0 / np.sqrt(np.log1p(ratio**2)))


def _calibrate(accountant: str, target: float | None, delta: float, sample_rate: float,
               n_steps: int) -> float:
    """The sigma at which ``accountant`` claims ``target`` (Brent's method, rtol 2e-3).

    The bracket grows by factors of 1.25 around the central-limit guess
    (:func:`_clt_sigma`), so the slow PRV accountant is evaluated about six times; every
    evaluation is cached (:func:`_epsilon`).
    """
    from scipy.optimize import brentq

    goal = float(target or 0)

    def excess(sigma: float) -> float:
        return _epsilon(accountant, float(sigma), delta, sample_rate, n_steps) - goal

    guess = _clt_sigma(goal, delta, sample_rate, n_steps)
    low, high = guess / 1.1, guess * 1.1
    while excess(high) > 0:
        low, high = high, high * 1.25
    while excess(low) < 0 and low > 1e-3:
        low, high = low / 1.25, low
    return float(brentq(excess, low, high, rtol=2e-3))


def _prepare(dataset: Any, canaries: CanarySet) -> tuple[NDArray[np.float32], NDArray[Any],
                                                          NDArray[Any]]:
    """Features and labels of the data (input-space canaries appended), and the classes."""
    func = "OpacusRecipe"
    if not isinstance(dataset, tuple) or len(dataset) != 2:
        raise param_error("dataset", func, "a pair (features, labels)",
                          f"<{type(dataset).__name__}>", error=TypeError)
    X = np.asarray(dataset[0], dtype=np.float32)
    y = np.asarray(dataset[1])
    if X.ndim < 2 or X.shape[0] == 0 or y.shape != (X.shape[0],):
        raise param_error("dataset", func, "features (n, d) and one label per record",
                          f"<shapes {X.shape} and {y.shape}>")
    X = X.reshape(X.shape[0], -1)
    classes = np.unique(y)
    if canaries.kind != "dirac-gradient" and len(canaries):
        if not np.isin(canaries.labels, classes).all():
            raise param_error("canaries", func, "labels among the dataset's classes",
                              f"<labels {sorted(set(np.asarray(canaries.labels).tolist()))}>")
        X = np.concatenate([X, np.asarray(canaries.features, dtype=np.float32).reshape(
            len(canaries), -1)])
        y = np.concatenate([y, np.asarray(canaries.labels, dtype=y.dtype)])
    return np.ascontiguousarray(X), y, classes
