"""The DP-SGD loop of :class:`~privaudit.dp.OpacusRecipe` (torch and Opacus, imported lazily).

Imported only by ``OpacusRecipe.__call__``; torch and opacus are imported inside the
functions, through :func:`privaudit._optional.import_optional`.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._optional import import_optional
from privaudit._validation import param_error
from privaudit.dp._canaries import CanarySet

__all__ = ["append_dirac_rows", "flat_parameters", "train_dp_sgd"]


def _torch() -> Any:
    return import_optional("torch", extra="dp", purpose="Training with DP-SGD (OpacusRecipe)")


def flat_parameters(net: Any) -> NDArray[np.float64]:
    """The parameters of ``net`` as one float64 vector, in ``net.parameters()`` order."""
    return np.concatenate([p.detach().double().reshape(-1).numpy() for p in net.parameters()])


def append_dirac_rows(params: list[Any], coordinates: NDArray[np.int64], norm: float) -> None:
    """Append one per-example gradient row per sampled Dirac canary to every ``grad_sample``.

    Canary ``j`` (flat coordinate ``c``) gets the row ``norm * e_c``: zero everywhere but
    on ``c``. A parameter that received no data this step (empty Poisson batch) starts
    from zero rows, so Opacus still clips, sums and adds its noise.
    """
    torch = _torch()
    offset = 0
    for p in params:
        size = p.numel()
        existing = getattr(p, "grad_sample", None)
        if isinstance(existing, list):
            existing = torch.cat(existing, dim=0)
        if existing is None:
            existing = torch.zeros((0, *p.shape), dtype=p.dtype)
        rows = torch.zeros((coordinates.size, size), dtype=p.dtype)
        inside = (coordinates >= offset) & (coordinates < offset + size)
        where = np.flatnonzero(inside)
        rows[torch.from_numpy(where), torch.from_numpy(coordinates[where] - offset)] = norm
        p.grad_sample = torch.cat([existing, rows.reshape(-1, *p.shape)], dim=0)
        offset += size


def _standardise(net: Any, X: NDArray[np.float32]) -> None:
    torch = _torch()
    mean = X.astype(np.float64).mean(axis=0)
    std = X.astype(np.float64).std(axis=0)
    std[std == 0] = 1.0
    net.mean.copy_(torch.from_numpy(mean.astype(np.float32)))
    net.scale.copy_(torch.from_numpy(std.astype(np.float32)))


def _private(recipe: Any, net: Any, n_examples: int, sigma: float, noise_seed: int) -> tuple[
        Any, Any]:
    """Opacus's GradSampleModule and DPOptimizer for ``net`` (sampling done by the caller)."""
    torch = _torch()
    opacus = import_optional("opacus", extra="dp", purpose="Training with DP-SGD (OpacusRecipe)")
    data = torch.utils.data.TensorDataset(torch.zeros(n_examples, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=max(1, round(
        n_examples * recipe.sample_rate)))
    engine = opacus.PrivacyEngine(accountant="rdp", secure_mode=False)
    optimizer = torch.optim.SGD(net.parameters(), lr=recipe.learning_rate)
    module, optimizer, _ = engine.make_private(
        module=net, optimizer=optimizer, data_loader=loader, noise_multiplier=sigma,
        max_grad_norm=recipe.max_grad_norm, poisson_sampling=False, loss_reduction="mean",
        noise_generator=torch.Generator().manual_seed(noise_seed))
    # The mis-accounted run: less noise than the accountant was told (the claims are
    # computed from sigma by the recipe, not from the optimizer).
    optimizer.noise_multiplier = sigma * recipe.noise_scale
    # Opacus divides the noisy sum by the EXPECTED batch size: q * (examples + canaries).
    optimizer.expected_batch_size = recipe.sample_rate * n_examples
    return module, optimizer


def train_dp_sgd(recipe: Any, X: NDArray[np.float32], y: NDArray[Any], classes: NDArray[Any],
                 canaries: CanarySet, sigma: float, seeds: list[int]) -> tuple[
                     Any, NDArray[np.float64], NDArray[np.float64]]:
    """Train the recipe's network with DP-SGD; return it and its flat parameters before/after.

    ``seeds``: initialisation, Poisson sampling, noise. ``X`` holds the data, then the
    included input-space canaries; dirac-gradient canaries are indices past ``len(X)`` of
    the same Poisson sampler.
    """
    torch = _torch()
    dirac = canaries.kind == "dirac-gradient"
    n_data = X.shape[0] - (0 if dirac else len(canaries))
    coords = np.asarray(canaries.coordinates if dirac else np.zeros(0), dtype=np.int64)
    old_threads = torch.get_num_threads()
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        # Opacus's reminders that do not apply: secure_mode is off on purpose (seeded,
        # reproducible noise), and the inputs need no gradient.
        warnings.filterwarnings("ignore", message="Secure RNG turned off")
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        torch.manual_seed(seeds[0])
        torch.set_num_threads(recipe.num_threads)
        try:
            net = recipe._build(X.shape[1], classes.size)
            _check_coordinates(coords, net)
            _standardise(getattr(net, "net", net), X[:n_data])  # inside the Dirac slots
            initial = flat_parameters(net)
            module, optimizer = _private(recipe, net, X.shape[0] + coords.size, sigma, seeds[2])
            _epochs(recipe, module, optimizer, X, np.searchsorted(classes, y), coords, seeds[1])
            net = module.to_standard_module().eval()
        finally:
            torch.set_num_threads(old_threads)
    for p in net.parameters():
        p.grad = None
    net.classes_ = classes
    getattr(net, "net", net).classes_ = classes
    return net, initial, flat_parameters(net)


def _epochs(recipe: Any, module: Any, optimizer: Any, X: NDArray[np.float32],
            y_idx: NDArray[np.intp], coords: NDArray[np.int64], sampling_seed: int) -> None:
    """The DP-SGD steps: Opacus's Poisson sampler over the examples and the Dirac canaries.

    Index ``i < len(X)`` is an example (data or input-space canary), ``len(X) + j`` the
    Dirac canary ``j``: both are sampled with the same rate in the same draw.
    """
    torch = _torch()
    from torch.nn import functional as F

    sampler_module = import_optional("opacus.utils.uniform_sampler", extra="dp",
                                     purpose="Training with DP-SGD (OpacusRecipe)")
    n = X.shape[0]
    sampler = sampler_module.UniformWithReplacementSampler(
        num_samples=n + coords.size, sample_rate=recipe.sample_rate,
        generator=torch.Generator().manual_seed(sampling_seed))
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y_idx.astype(np.int64))
    params = [p for p in module.parameters() if p.requires_grad]
    module.train()
    for _ in range(recipe.epochs):
        for indices in sampler:
            idx = np.asarray(indices, dtype=np.int64)
            rows = torch.from_numpy(idx[idx < n])
            optimizer.zero_grad(set_to_none=True)
            if rows.numel():
                F.cross_entropy(module(Xt[rows]), yt[rows]).backward()
            if coords.size or not rows.numel():  # an empty batch still gets its noise
                append_dirac_rows(params, coords[idx[idx >= n] - n], recipe.max_grad_norm)
            optimizer.step()


def _check_coordinates(coords: NDArray[np.int64], net: Any) -> None:
    n_parameters = sum(p.numel() for p in net.parameters())
    if coords.size and (coords.min() < 0 or coords.max() >= n_parameters):
        raise param_error("canaries", "OpacusRecipe", f"dirac-gradient coordinates in "
                          f"[0, {n_parameters}) (the network's flat parameters)",
                          f"<coordinates up to {int(coords.max())}>")
