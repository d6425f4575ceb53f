"""Building blocks of crafted skops files, shared by the security tests.

A skops file is a zip archive whose ``schema.json`` names, for every object, the module,
the class and the loader skops uses to rebuild it: editing that file is all an attacker
needs to make a loader import and call something else.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any


def json_node(value: Any) -> dict[str, Any]:
    if isinstance(value, list):
        return {"__class__": "list", "__module__": "builtins", "__loader__": "ListNode",
                "content": [json_node(v) for v in value]}
    return {"__class__": type(value).__name__, "__module__": "builtins",
            "__loader__": "JsonNode", "content": json.dumps(value), "is_json": True}


def tuple_node(*items: Any) -> dict[str, Any]:
    return {"__class__": "tuple", "__module__": "builtins", "__loader__": "TupleNode",
            "content": [json_node(i) for i in items]}


def empty_dict_node() -> dict[str, Any]:
    return {"__class__": "dict", "__module__": "builtins", "__loader__": "DictNode",
            "content": {}, "key_types": {"__class__": "list", "__module__": "builtins",
                                         "__loader__": "ListNode", "content": []}}


def call_node(target: str, *args: Any, loader: str = "LossNode") -> dict[str, Any]:
    """A node that makes skops call ``target(*args)`` while it loads."""
    module, _, name = target.rpartition(".")
    node = {"__class__": name, "__module__": module, "__loader__": loader}
    if loader == "ConstructorFromReduceNode":
        node["content"] = tuple_node(*args)
    else:  # LossNode / ReduceNode: constructor(*args), then the (empty) state
        node["__reduce__"] = {"args": tuple_node(*args)}
        node["content"] = empty_dict_node()
    return node


def ref_node(target: str, loader: str = "FunctionNode") -> dict[str, Any]:
    """A node that makes skops import ``target`` (a reference, not a call)."""
    module, _, name = target.rpartition(".")
    return {"__class__": name, "__module__": module, "__loader__": loader}


def hide_in_param(path: Path, payload: dict[str, Any], param: str = "C") -> None:
    """Replace the top-level estimator's parameter ``param`` in the skops file by ``payload``."""
    with zipfile.ZipFile(path) as zf:
        files = {n: zf.read(n) for n in zf.namelist()}
    schema = json.loads(files["schema.json"])
    schema["content"]["content"][param] = payload
    files["schema.json"] = json.dumps(schema).encode()
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
