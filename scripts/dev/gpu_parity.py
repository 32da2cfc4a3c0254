#!/usr/bin/env python3
"""wgpu against the CPU backend through the calibra binary alone, for a GPU machine (issue #16; run by
scripts/dev/gpu_check.sh). Python standard library only.

    python3 scripts/dev/gpu_parity.py CALIBRA_BIN WORK_DIR [--device wgpu]

1. Features: `calibra features --split all` of 32 synthetic images on `cpu` and on DEVICE, for every
   encoder family and format with a fixture in the repository (the shipped tiny checkpoints, and
   crates/calibra-models/tests/fixtures: ViT, DeiT, DINOv2 with and without registers, CLIP, SigLIP,
   ViT-MAE, timm ViTs, OpenCLIP, transformers and timm ResNets). Fixtures without a
   preprocessor_config.json are copied to WORK_DIR with a ViTImageProcessor config of their image size
   (mean/std 0.5), since `calibra features` needs one. The largest |difference| of each is printed; more
   than 1e-4 fails.
2. Training: `calibra train` of LoRA (generalist, 200 images) and CoOp (tiny-clip, 200 images) on both
   devices; every metric of every record within 1e-3 (the bounds of tests/cli_devices.rs).
Exit status 1 if any comparison fails or any command fails.
"""
import json
import shutil
import struct
import subprocess
import sys
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "crates/calibra-models/tests/fixtures"
ENCODERS = [
    "checkpoints/generalist", "checkpoints/tiny-clip",
    *(f"crates/calibra-models/tests/fixtures/{d}" for d in [
        "vit", "deit", "dinov2", "dinov2/registers", "clip", "siglip", "siglip_model", "vit_mae",
        "timm/token", "timm/reg4", "timm/avg_fc_norm", "timm/deit3_layerscale", "open_clip/gelu",
        "open_clip/quickgelu", "resnet/hf_bottleneck", "resnet/hf_basic", "resnet/timm_resnet50",
    ]),
]
FEATURE_TOL = 1e-4
METRIC_TOL = 1e-3


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        tail = "\n".join(out.stderr.strip().splitlines()[-3:])
        raise RuntimeError(f"{' '.join(cmd[:2])} failed ({out.returncode}): {tail}")
    return out


def float_tensors(path):
    data = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n:]
    tensors = {}
    for name, t in header.items():
        if t["dtype"] != "F32":
            continue
        a, b = t["data_offsets"]
        values = array("f")
        values.frombytes(body[a:b])
        if sys.byteorder != "little":
            values.byteswap()
        tensors[name] = values
    return tensors


def with_preprocessor(encoder, work):
    src = ROOT / encoder
    if (src / "preprocessor_config.json").exists() or not (src / "config.json").exists():
        return src
    config = json.loads((src / "config.json").read_text())
    side = config.get("vision_config", config).get("image_size", 32)
    dst = work / "encoders" / encoder.replace("/", "_")
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    (dst / "preprocessor_config.json").write_text(json.dumps({
        "image_processor_type": "ViTImageProcessor", "do_resize": True, "size": {"height": side, "width": side},
        "resample": 2, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
        "image_mean": [0.5] * 3, "image_std": [0.5] * 3}))
    return dst


def features(bin_, work, device):
    worst, failed = 0.0, 0
    for encoder in ENCODERS:
        try:
            path = with_preprocessor(encoder, work)
            files = {}
            for dev in ("cpu", device):
                out = work / f"{encoder.replace('/', '_')}.{dev}.safetensors"
                out.unlink(missing_ok=True)
                run([bin_, "features", "--encoder", str(path), "--data", "synth:derm?n=32&size=32", "--split", "all",
                     "--device", dev, "--out", str(out)])
                files[dev] = float_tensors(out)
            diff, count = 0.0, 0
            for name, cpu in files["cpu"].items():
                other = files[device][name]
                assert len(cpu) == len(other), f"{name}: {len(cpu)} vs {len(other)} values"
                for x, y in zip(cpu, other):
                    d = abs(x - y)
                    if not d <= FEATURE_TOL:  # NaN fails too
                        count += 1
                    diff = max(diff, d) if d == d else float("inf")
            status = "ok" if count == 0 else f"FAIL ({count} values over {FEATURE_TOL:g})"
            failed += count > 0
            worst = max(worst, diff)
            print(f"features {encoder}: max |{device} - cpu| = {diff:.2e} over {sum(map(len, files['cpu'].values()))} values: {status}", flush=True)
        except Exception as e:  # one family's failure must not hide the others'
            failed += 1
            print(f"features {encoder}: FAIL {e}", flush=True)
    print(f"features: worst {worst:.2e}, {failed} of {len(ENCODERS)} failed", flush=True)
    return failed


def records(store):
    out = {}
    for line in (store / "runs.jsonl").read_text().splitlines():
        r = json.loads(line)
        out[f"{r['regime']} {r['condition']} {r['calibrator']}"] = r["metrics"]
    return out


def training(bin_, work, device):
    failed = 0
    cases = {
        "lora": ["--encoder", str(ROOT / "checkpoints/generalist"), "--regime", "lora", "--lr", "1e-3"],
        "coop": ["--encoder", str(ROOT / "checkpoints/tiny-clip"), "--regime", "coop"],
    }
    for name, args in cases.items():
        try:
            stores = {}
            for dev in ("cpu", device):
                store = work / f"train_{name}_{dev}"
                shutil.rmtree(store, ignore_errors=True)
                run([bin_, "train", *args, "--data", "synth:derm?n=200&size=32", "--epochs", "1", "--perturbations", "jpeg",
                     "--severities", "1", "--calibrators", "none,temperature", "--device", dev, "--out", str(store)])
                stores[dev] = records(store)
            assert stores["cpu"].keys() == stores[device].keys(), "different records"
            worst, bad = 0.0, []
            for key, metrics in stores["cpu"].items():
                for metric, a in metrics.items():
                    b = stores[device][key].get(metric)
                    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
                        continue
                    d = abs(a - b)
                    worst = max(worst, d)
                    if not d <= METRIC_TOL:
                        bad.append(f"{key} {metric}: {b} vs {a}")
            failed += bool(bad)
            print(f"train {name}: {len(stores['cpu'])} records, worst metric |{device} - cpu| = {worst:.2e}: "
                  f"{'ok' if not bad else 'FAIL ' + '; '.join(bad[:3])}", flush=True)
        except Exception as e:
            failed += 1
            print(f"train {name}: FAIL {e}", flush=True)
    return failed


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    bin_, work = sys.argv[1], Path(sys.argv[2])
    device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "wgpu"
    work.mkdir(parents=True, exist_ok=True)
    failed = features(bin_, work, device) + training(bin_, work, device)
    print(f"gpu parity: {'all passed' if failed == 0 else f'{failed} failed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
