#!/usr/bin/env bash
# The GPU check of issue #16, run once on a lent GPU machine (the device tool), from the repository root.
#
# What it runs, in this order, each stage under its own time limit and a deadline for the whole:
#  1. the device: nvidia-smi, the Vulkan loader and NVIDIA's Vulkan driver, `calibra train --device wgpu`'s
#     device check on a shipped tiny checkpoint;
#  2. round 1 of the LoRA step benchmark at 224 px, batch 32, on the first shape of GPU_CHECK_SHAPES
#     (default ViT-B/16, then CLIP and SigLIP vision, DINOv2): burn on wgpu
#     (crates/calibra-train/benches/lora_step.rs, LORA_BENCH_DEVICE=wgpu) then torch + peft on CUDA
#     (crates/calibra-train/benches/peers/lora_step_peer.py, float32, sdpa attention), same GPU;
#  3. wgpu against the CPU backend on the real GPU (scripts/dev/gpu_parity.py, through the calibra binary:
#     every family's features within 1e-4, and `calibra train` LoRA and CoOp records within 1e-3);
#  4. a kernel profile of burn's step on the first shape: cubecl's profiling logger (a `cubecl.toml` in a
#     scratch directory), summed by kernel into kernel_profile.txt by scripts/dev/kernel_profile.py;
#  5. the other shapes, burn then torch; round 2 of the first shape in the other order (torch first), and
#     burn once more with CUBECL_AUTOTUNE_LEVEL=minimal; with
#     GPU_CHECK_REFERENCES=1 also torch with bf16 autocast and with eager attention (calibra has neither
#     mixed precision nor a fused attention);
#  6. `calibra train --device wgpu` end to end: a ViT-B/16-shaped encoder on 640 JPEGs at 224 px.
# GPU memory in use is sampled every 200 ms throughout (gpu_memory.csv, with stage markers in stages.log).
#
# Inputs, built on a machine with Rust (none is on the GPU machine) and carried in `.gpu/` (git-ignored),
# xz-compressed so that they fit the device tool's 64 MiB:
#   cargo build --release --features wgpu --bin calibra
#   cargo bench -p calibra-train --features wgpu --bench lora_step --no-run
#   strip, then xz -6 -c <each binary> > .gpu/{calibra,lora_step}.xz
# and the Vulkan loader as Debian packages in `.gl/` (the device tool's README says how).
#
# Run: the device tool, command `bash scripts/dev/gpu_check.sh`, carry [".gl", ".gpu"]. Logs land in $OUT.
# It unpacks those packages into / and writes under /tmp: run it only on a throwaway machine.
# Results (2026-12-04, H200): benches/RESULTS.md, "On a GPU" (first run) and "On a GPU again" (autotune, fusion).
set -u
OUT="${OUT:-/tmp/gpu_check}"
mkdir -p "$OUT"
start=$SECONDS
DEADLINE="${GPU_CHECK_DEADLINE:-500}"  # seconds; a stage that would start later is skipped
STEPS="${GPU_CHECK_STEPS:-10}"
SHAPES="${GPU_CHECK_SHAPES:-vitb clipb siglipb dinov2b}"
FIRST_SHAPE="${SHAPES%% *}"

stage() { echo "== [$((SECONDS - start)) s] $*" | tee -a "$OUT/stages.log"; }
# time_left NAME [LATEST]: whether a stage may start now (before LATEST seconds, default the deadline).
time_left() { [ $((SECONDS - start)) -lt "${2:-$DEADLINE}" ] || { stage "skipped (too late to start): $1"; return 1; }; }

stage "setup"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
if [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && ! ls /usr/share/vulkan/icd.d/*nvidia* >/dev/null 2>&1; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-<system>}; loader: $(ldconfig -p | grep -c libvulkan) libvulkan entries"
mkdir -p /tmp/gpu_bin
for b in calibra lora_step; do
  xz -dc ".gpu/$b.xz" > "/tmp/gpu_bin/$b" && chmod +x "/tmp/gpu_bin/$b" || echo "missing .gpu/$b.xz"
done
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,clocks.max.sm,power.draw,temperature.gpu \
  --format=csv | tee "$OUT/nvidia_smi.csv"
echo "cargo on this machine: $(command -v cargo || echo none) (the cuda feature cannot be built without it and network)"
nproc; python3 -c 'import torch, peft, transformers; print("torch", torch.__version__, "peft", peft.__version__, "transformers", transformers.__version__)'
nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv,noheader -lms 200 > "$OUT/gpu_memory.csv" 2>/dev/null &
sampler=$!

stage "device check: calibra train --device wgpu (tiny checkpoint, 64 images at 32 px)"
timeout 120 /tmp/gpu_bin/calibra train --encoder checkpoints/scratch --data 'synth:derm?n=64&size=32' --regime lora \
  --epochs 1 --device wgpu --calibrators none --out /tmp/device_check 2>&1 | tail -5

burn_round() {  # shape
  time_left "burn wgpu $1" || return
  stage "burn wgpu LoRA step $1 ($STEPS steps${CUBECL_AUTOTUNE_LEVEL:+, CUBECL_AUTOTUNE_LEVEL=$CUBECL_AUTOTUNE_LEVEL})"
  LORA_BENCH_DEVICE=wgpu LORA_BENCH_SHAPE=$1 LORA_BENCH_STEPS=$STEPS timeout 200 /tmp/gpu_bin/lora_step 2>&1 \
    | tee -a "$OUT/bench.log" | tail -3
  stage "burn done"
}
torch_round() {  # shape precision attention
  time_left "torch $1 $2 $3" || return
  stage "torch + peft cuda LoRA step $1 ($STEPS steps, $2, $3)"
  PYTHONUNBUFFERED=1 timeout 120 python3 crates/calibra-train/benches/peers/lora_step_peer.py "$1" "$STEPS" "$3" cuda "$2" 2>&1 \
    | tee -a "$OUT/bench.log" | tail -3
  stage "torch done"
}

burn_round "$FIRST_SHAPE"
torch_round "$FIRST_SHAPE" fp32 sdpa

if time_left "parity" 300; then
  stage "wgpu vs cpu on the GPU: features of every family, LoRA and CoOp training"
  timeout 180 python3 scripts/dev/gpu_parity.py /tmp/gpu_bin/calibra /tmp/parity --device wgpu 2>&1 \
    | tee "$OUT/gpu_parity.log" | tail -25
fi

# Where burn's step spends GPU time: cubecl's profiling logger times every kernel (it waits for each, so
# this run's step time is not a speed measurement) and prints one line per kernel to stdout, between the
# bench's step markers (LORA_BENCH_MARK_STEPS); the first 3 steps (autotune and burn-fusion's first
# blocks are still being tuned there) are left out.
if time_left "kernel profile" 330; then
  stage "kernel profile of burn's LoRA step $FIRST_SHAPE (steps 4 and 5)"
  mkdir -p /tmp/profile && printf '[profiling.logger]\nlevel = "basic"\nstdout = true\n' > /tmp/profile/cubecl.toml
  (cd /tmp/profile && LORA_BENCH_MARK_STEPS=1 LORA_BENCH_DEVICE=wgpu LORA_BENCH_SHAPE=$FIRST_SHAPE LORA_BENCH_STEPS=4 \
    timeout 150 /tmp/gpu_bin/lora_step > /tmp/profile/stream.log 2>&1; tail -1 /tmp/profile/stream.log)
  python3 scripts/dev/kernel_profile.py /tmp/profile/stream.log --from-step 4 > "$OUT/kernel_profile.txt" 2>&1
  head -45 "$OUT/kernel_profile.txt"
  xz -6 -c /tmp/profile/stream.log > "$OUT/kernel_stream.log.xz" 2>/dev/null
  stage "profile done"
fi

for shape in ${SHAPES#"$FIRST_SHAPE"}; do
  burn_round "$shape"
  torch_round "$shape" fp32 sdpa
done

torch_round "$FIRST_SHAPE" fp32 sdpa
burn_round "$FIRST_SHAPE"
# cubecl's smallest autotune search (fewer candidate kernels compiled and timed in the warm-up step)
CUBECL_AUTOTUNE_LEVEL=minimal burn_round "$FIRST_SHAPE"
if [ "${GPU_CHECK_REFERENCES:-0}" = 1 ]; then
  torch_round "$FIRST_SHAPE" bf16 sdpa
  torch_round "$FIRST_SHAPE" fp32 eager
fi

# calibra train end to end on the GPU: a ViT-B/16-shaped encoder (random, seed 0) on 640 JPEGs at 224 px
#    read from disk (512 train: 16 steps of 32), LoRA with crop-flip; progress lines stamped as they arrive.
if time_left "calibra train e2e" 400; then
  stage "calibra train --device wgpu, ViT-B/16, 640 JPEGs at 224 px"
  timeout 60 /tmp/gpu_bin/calibra data export 'synth:derm?n=640&size=224' --out /tmp/derm224 2>&1 | tail -1
  timeout 60 /tmp/gpu_bin/calibra pretrain --name vitb16-random --out /tmp/enc --hidden 768 --layers 12 --heads 12 \
    --mlp 3072 --patch 16 --image-size 224 --seed 0 2>&1 | tail -1
  timeout 240 /tmp/gpu_bin/calibra train --encoder /tmp/enc/vitb16-random --data imagefolder:/tmp/derm224 --regime lora \
    --epochs 1 --batch-size 32 --augment crop-flip --device wgpu --out /tmp/e2e 2>&1 \
    | python3 -u -c 'import sys, time; t0 = time.monotonic(); [print(f"{time.monotonic() - t0:8.2f} {l}", end="") for l in sys.stdin]' \
    | tee "$OUT/e2e.log" | grep -E "step|epoch|images|records" | tail -12
fi

kill "$sampler" 2>/dev/null
stage "finished"
echo "peak GPU memory in use (MiB): $(awk -F', ' '{gsub(/ MiB/,"",$2); if ($2+0>m) m=$2+0} END {print m}' "$OUT/gpu_memory.csv")"
grep -h "LoRA step" "$OUT/bench.log"
