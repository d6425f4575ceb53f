"""Read back a W&B offline run from its ``run-<id>.wandb`` file (no server, no wandb API).

The file is a LevelDB log (wandb's ``datastore``): a 7-byte header (``:W&B``, magic, version),
then 32 KiB blocks of records, each ``crc32 (4) | length (2) | type (1) | data``, a record
split over blocks as FIRST, MIDDLE..., LAST; each whole record is a
``wandb_internal_pb2.Record`` protobuf.
"""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path
from typing import Any

_BLOCK, _HEADER, _RECORD_HEADER = 32768, 7, 7
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def _payloads(data: bytes) -> list[bytes]:
    assert data[:4] == b":W&B", "not a W&B run file"
    out, pending, pos = [], b"", _HEADER
    while pos + _RECORD_HEADER <= len(data):
        room = _BLOCK - pos % _BLOCK
        if room < _RECORD_HEADER:  # the block's tail is padding
            pos += room
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + _RECORD_HEADER])
        chunk = data[pos + _RECORD_HEADER:pos + _RECORD_HEADER + length]
        pos += _RECORD_HEADER + length
        if kind == 0 and length == 0:
            continue
        pending = chunk if kind in (_FULL, _FIRST) else pending + chunk
        if kind in (_FULL, _LAST):
            out.append(pending)
    return out


def _records(path: Path, pb: Any, wait: float = 10.0) -> list[Any]:
    """The run's records, once its ``exit`` record is on disk (the writer may lag)."""
    deadline = time.monotonic() + wait
    while True:
        records = []
        for payload in _payloads(path.read_bytes()):
            record = pb.Record()
            record.ParseFromString(payload)
            records.append(record)
        if any(r.WhichOneof("record_type") == "exit" for r in records):
            return records
        assert time.monotonic() < deadline, f"{path} has no exit record"
        time.sleep(0.2)


def read_offline_run(run_dir: Path) -> dict[str, Any]:
    """``{"history": [row, ...], "summary", "config", "artifacts": [(name, type), ...]}``."""
    from wandb.proto import wandb_internal_pb2 as pb

    (path,) = Path(run_dir).glob("run-*.wandb")
    out: dict[str, Any] = {"history": [], "summary": {}, "config": {}, "artifacts": []}
    records = _records(path, pb)
    for record in records:
        kind = record.WhichOneof("record_type")
        if kind == "history":
            out["history"].append({i.key or "/".join(i.nested_key): json.loads(i.value_json)
                                   for i in record.history.item})
        elif kind == "summary":
            out["summary"].update({i.key or "/".join(i.nested_key): json.loads(i.value_json)
                                   for i in record.summary.update})
        elif kind == "artifact":
            out["artifacts"].append((record.artifact.name, record.artifact.type))
        elif kind == "config":
            out["config"].update({i.key or "/".join(i.nested_key): json.loads(i.value_json)
                                  for i in record.config.update})
    return out
