#!/usr/bin/env python3
"""Compare two calibra run stores (or report folders) for behaviour changes.

    python3 scripts/dev/compare_run_stores.py BEFORE_DIR AFTER_DIR     (pip install cbor2)

Every file present in both must be byte-identical, except two kinds whose bytes carry no result:
- feature `.safetensors` files, whose metadata header is written in hash-map order: equal when their
  metadata values and every tensor's dtype, shape and bytes are equal;
- burn checkpoints (`*.bpk`), which hold burn's random per-process parameter ids: equal when every
  tensor and scalar is equal once each id is replaced by its parameter name.
Files present on one side only are listed. Exit code 0 when nothing differs otherwise, 1 when it does.
"""
import json
import os
import struct
import sys

import cbor2


def safetensors_content(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    body = data[8 + n :]
    meta = header.pop("__metadata__", None)
    tensors = {k: (v["dtype"], v["shape"], body[v["data_offsets"][0] : v["data_offsets"][1]]) for k, v in header.items()}
    return meta, tensors


def burn_record_content(path):
    data = open(path, "rb").read()
    if data[:4] != b"NRUB":
        raise ValueError(f"{path}: not a burn record (no NRUB magic)")
    (n,) = struct.unpack("<I", data[6:10])
    header = cbor2.loads(data[10 : 10 + n])
    tensors = header["tensors"]
    end = max((v["data_offsets"][1] for v in tensors.values()), default=0)
    body = data[len(data) - end :]
    names = header.get("metadata") or {}

    def name(key):
        if not names:
            return key
        pid, rest = key.split(".", 1)
        return names[pid] + "." + rest

    content = {name(k): (v["dtype"], tuple(v["shape"]), body[v["data_offsets"][0] : v["data_offsets"][1]]) for k, v in tensors.items()}
    scalars = {name(k): v for k, v in (header.get("scalars") or {}).items()}
    return content, scalars, sorted(names.values())


def files(root):
    out = set()
    for dirpath, _, filenames in os.walk(root):
        for f in filenames:
            out.add(os.path.relpath(os.path.join(dirpath, f), root))
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    before, after = sys.argv[1:]
    a, b = files(before), files(after)
    counts = {"identical": 0, "safetensors header order only": 0, "burn parameter ids only": 0}
    differ = []
    for rel in sorted(a & b):
        pa, pb = os.path.join(before, rel), os.path.join(after, rel)
        if open(pa, "rb").read() == open(pb, "rb").read():
            counts["identical"] += 1
        elif rel.endswith(".safetensors") and safetensors_content(pa) == safetensors_content(pb):
            counts["safetensors header order only"] += 1
        elif rel.endswith(".bpk") and burn_record_content(pa) == burn_record_content(pb):
            counts["burn parameter ids only"] += 1
        else:
            differ.append(rel)
    for k, v in counts.items():
        print(f"{v:7d} {k}")
    print(f"{len(differ):7d} differ")
    for rel in differ:
        print(f"  differs: {rel}")
    for rel in sorted(a - b):
        print(f"  only in {before}: {rel}")
    for rel in sorted(b - a):
        print(f"  only in {after}: {rel}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
