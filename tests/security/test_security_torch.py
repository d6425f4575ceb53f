"""Torch model files: weights load without unpickling anything unless the caller opts in."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from privaudit.targets import load_torch_model, save_torch_model
from privaudit.training import TorchMLPRecipe


class Payload:
    """Unpickling this object writes the marker file (a __reduce__ payload)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.write_text, (self.marker, "ran"))


def _net() -> Any:
    return torch.nn.Linear(3, 2)


@pytest.mark.parametrize("how", ["torch.save-dict", "torch.save-object", "plain-pickle"])
def test_a_reduce_payload_is_refused_without_allow_pickle(tmp_path, how):
    marker = tmp_path / "PWNED"
    path = tmp_path / "model.pt"
    state = dict(_net().state_dict())
    if how == "torch.save-dict":
        torch.save({**state, "extra": Payload(marker)}, path)
    elif how == "torch.save-object":
        torch.save(Payload(marker), path)
    else:
        path.write_bytes(pickle.dumps(Payload(marker)))
    assert not marker.exists()
    with pytest.raises(ValueError, match="Refusing to load"):
        load_torch_model(path, _net)
    assert not marker.exists()


@pytest.mark.parametrize("allow_pickle", [True, 1, "yes"])
def test_the_old_opt_in_is_refused_before_the_file_is_read(tmp_path, allow_pickle):
    """The payload is real (the control proves it runs when unpickled); the loader never
    unpickles it, whatever the caller asks."""
    marker = tmp_path / "PWNED"
    path = tmp_path / "model.pt"
    torch.save(Payload(marker), path)
    with pytest.raises(ValueError, match="'allow_pickle' parameter"):
        load_torch_model(path, _net, allow_pickle=allow_pickle)
    assert not marker.exists()
    torch.load(path, weights_only=False)  # control: unpickled by hand, the payload runs
    assert marker.exists()


def test_safetensors_round_trip_and_a_damaged_header(tmp_path):
    net = _net()
    path = tmp_path / "model.safetensors"
    save_torch_model(net, path)
    loaded = load_torch_model(path, _net)
    torch.testing.assert_close(loaded.weight, net.weight)
    raw = path.read_bytes()
    path.write_bytes(raw[:8] + b"{" + b"x" * 40)  # looks like safetensors, is not
    with pytest.raises(ValueError, match="not a readable safetensors file"):
        load_torch_model(path, _net)


FAST = {"epochs": 1, "batch_size": 16}


def _recipe_file(tmp_path: Path) -> tuple[Any, Path]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    recipe = TorchMLPRecipe((4,), **FAST)
    path = tmp_path / "m.safetensors"
    recipe.save(recipe.train(X, y, random_state=0), path)
    return recipe, path


def test_a_pickle_in_the_torch_cache_is_never_unpickled(tmp_path):
    recipe, path = _recipe_file(tmp_path)
    marker = tmp_path / "PWNED"
    path.write_bytes(pickle.dumps(Payload(marker)))
    with pytest.raises(ValueError, match="not a readable safetensors file"):
        recipe.load(path)
    assert not marker.exists()


def test_a_forged_torch_cache_header_gives_a_clear_error(tmp_path):
    from safetensors.torch import load_file, save_file

    recipe, path = _recipe_file(tmp_path)
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as fh:
        meta = fh.metadata()
    key, = meta
    header = json.loads(meta[key])
    header["classes"] = {"values": [0, 1], "dtype": "O"}  # object labels: refused
    save_file(load_file(str(path)), str(path), metadata={key: json.dumps(header)})
    with pytest.raises(ValueError, match="damaged header"):
        recipe.load(path)
