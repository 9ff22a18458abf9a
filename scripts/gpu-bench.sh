#!/usr/bin/env bash
# GPU benchmark of `vat bench` on a headless machine with a real GPU (no display; a Vulkan driver
# present): builds the `vat` binary in release and runs the GPU section offscreen at 100k and 1M
# instances (VAT and bone mode, CPU and GPU culling, the CPU-skinning baseline at 100k), the
# impostor tier, the compressed tier's decode cost (the humanoid as packed64 and as skin-residual,
# alternated), plus the renderer-free CPU section at 1k..1M, writing JSON. Sized to finish in under
# 7 minutes.
#
# Usage: scripts/gpu-bench.sh [OUT_DIR]          (default: ./gpu-bench-out)
# Environment (optional):
#   GPU_INSTANCES   counts of the GPU section            (default 100000,1000000)
#   GPU_FRAMES      measured frames per GPU configuration (default 30)
#   CPU_INSTANCES   counts of the CPU section            (default 1000,10000,100000,1000000)
#   CPU_FRAMES      measured frames per CPU configuration (default 120)
#   SIZE            offscreen target                      (default 1920x1080)
#   BASELINE_MAX    largest count of the CPU-skinning baseline (default 100000)
#   BUDGET_S        wall-clock limit of the whole run, seconds (default 400)
#   VAT_BIN         a prebuilt release `vat` to run instead of building one (a device machine
#                   without a Rust toolchain gets the binary built elsewhere)
#   VULKAN          1 (default) also runs the GPU section through vat-vulkan (`--backend vulkan`)
#
# `vat bench` picks a real GPU (discrete, then integrated) over the CPU driver when both exist; the
# adapter it used is in the JSON ("adapter"). It fails (non-zero) when no Vulkan adapter exists.
set -euo pipefail

cd "$(dirname "$0")/.."
OUT_DIR="${1:-gpu-bench-out}"
GPU_INSTANCES="${GPU_INSTANCES:-100000,1000000}"
GPU_FRAMES="${GPU_FRAMES:-30}"
CPU_INSTANCES="${CPU_INSTANCES:-1000,10000,100000,1000000}"
CPU_FRAMES="${CPU_FRAMES:-120}"
SIZE="${SIZE:-1920x1080}"
BASELINE_MAX="${BASELINE_MAX:-100000}"
BUDGET_S="${BUDGET_S:-400}"
START=$(date +%s)

mkdir -p "$OUT_DIR"
command -v vulkaninfo >/dev/null && vulkaninfo --summary > "$OUT_DIR/vulkaninfo.txt" 2>&1 || true
command -v nvidia-smi >/dev/null && nvidia-smi > "$OUT_DIR/nvidia-smi.txt" 2>&1 || true

if [ -n "${VAT_BIN:-}" ]; then
    VAT="$VAT_BIN"
else
    echo "building vat (release)..." >&2
    cargo build --release --locked -p vat-cli 2>&1 | tail -n 3 >&2
    VAT=target/release/vat
fi
VULKAN="${VULKAN:-1}"

left() { echo $(( BUDGET_S - ($(date +%s) - START) )); }

# 1. GPU section at 100k and 1M (the CPU section kept to one small count here).
echo "GPU section: $GPU_INSTANCES instances, $GPU_FRAMES frames, $SIZE ($(left) s left)" >&2
timeout "$(left)" "$VAT" bench --instances 1000 --frames 100 \
    --gpu-instances "$GPU_INSTANCES" --gpu-frames "$GPU_FRAMES" --size "$SIZE" \
    --baseline-max "$BASELINE_MAX" --baseline-frames 5 --baseline-budget 20 \
    --json --out "$OUT_DIR/gpu.json" > /dev/null

# 1b. The same GPU section through the ash backend (no CPU-skinning baseline: it is wgpu only).
if [ "$VULKAN" = 1 ]; then
    echo "GPU section, vat-vulkan: $GPU_INSTANCES instances ($(left) s left)" >&2
    timeout "$(left)" "$VAT" bench --instances 1000 --frames 100 --backend vulkan \
        --gpu-instances "$GPU_INSTANCES" --gpu-frames "$GPU_FRAMES" --size "$SIZE" \
        --baseline-max 0 --json --out "$OUT_DIR/gpu-vulkan.json" > /dev/null || echo "vulkan section failed" >&2
fi

# 1c. The impostor tier (issue 33): far crowds as cards against the same at the last mesh LOD.
echo "impostor section: $GPU_INSTANCES instances ($(left) s left)" >&2
timeout "$(left)" "$VAT" bench --impostors --gpu-instances "$GPU_INSTANCES" --gpu-frames "$GPU_FRAMES" \
    --size "$SIZE" --json --out "$OUT_DIR/impostors.json" > /dev/null || echo "impostor section failed" >&2

# 1d. The compressed tier (issue 34): the same humanoid baked as packed64 and as skin-residual,
# benched alternately (two rounds) with the static crowd and GPU culling; the ratio of their "vat"
# rows' GPU times is the format's decode cost. The .vat files go to a temporary folder.
echo "compressed tier: $GPU_INSTANCES instances ($(left) s left)" >&2
BAKED=$(mktemp -d)
trap 'rm -rf "$BAKED"' EXIT
"$VAT" bake --procgen humanoid --out "$BAKED/packed64.vat" > "$OUT_DIR/compressed-bake.txt"
"$VAT" bake --procgen humanoid --format skin-residual --out "$BAKED/skin-residual.vat" >> "$OUT_DIR/compressed-bake.txt"
for round in 1 2; do
    for format in packed64 skin-residual; do
        timeout "$(left)" "$VAT" bench "$BAKED/$format.vat" --instances 1000 --frames 3 --warmup 1 \
            --scenario static --culling gpu --gpu-instances "$GPU_INSTANCES" --gpu-frames "$GPU_FRAMES" \
            --size "$SIZE" --baseline-max 0 --json --out "$OUT_DIR/compressed-$format-$round.json" > /dev/null \
            || echo "compressed tier ($format, round $round) failed" >&2
    done
done

# 2. The renderer-free CPU section at every count (no GPU), with the baseline.
echo "CPU section: $CPU_INSTANCES instances, $CPU_FRAMES frames ($(left) s left)" >&2
timeout "$(left)" "$VAT" bench --instances "$CPU_INSTANCES" --frames "$CPU_FRAMES" \
    --baseline-max "$BASELINE_MAX" --no-gpu --json --out "$OUT_DIR/cpu.json" > /dev/null

echo "done in $(( $(date +%s) - START )) s: $OUT_DIR/gpu.json $OUT_DIR/gpu-vulkan.json $OUT_DIR/impostors.json $OUT_DIR/compressed-*.json $OUT_DIR/cpu.json" >&2
