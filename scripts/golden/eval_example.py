#!/usr/bin/env python3
"""Golden point CRS of examples/run_records.jsonl from the numpy oracle benches/peers/eval_peer.py.

Writes tests/golden/eval_example.json: encoders and their CRS (all seeds once, frozen regime, panel-built
anchors, default weights), independently of calibra's Rust code. tests/cli_eval.rs compares
`calibra eval`'s evaluation.json with it (1e-12). Deterministic: no random draws enter the point CRS.
Run: CALIBRA_GOLDEN_VENV=/work/pyenv/golden scripts/golden/venv.sh python scripts/golden/eval_example.py
"""

import importlib.util
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location("eval_peer", os.path.join(ROOT, "benches", "peers", "eval_peer.py"))
peer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peer)

records = peer.read_records(os.path.join(ROOT, "examples", "run_records.jsonl"))
result = peer.evaluate(records, replicates=1, seed=0)
out = {"source": "examples/run_records.jsonl", "encoders": result["encoders"], "crs": result["crs"]}
with open(os.path.join(ROOT, "tests", "golden", "eval_example.json"), "w") as fh:
    json.dump(out, fh, indent=1)
    fh.write("\n")
