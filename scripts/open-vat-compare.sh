#!/usr/bin/env bash
# vat-bevy against bevy_open_vat (the existing Bevy VAT plugin, 0.20.0, on the same Bevy 0.20.1), two
# processes, the same scene (benches/open-vat-compare/README.md): frame time of
#   - open_vat           bevy_open_vat, one entity per character, the exported LOD 0 mesh;
#   - vat_bevy           vat-bevy with its LODs (one VatCrowd);
#   - vat_bevy --single-lod  vat-bevy at LOD 0 only: the same triangles as open_vat;
# at each count of characters, then a markdown table (median and p90 ms, and the ratios).
#
# The asset: the procedural humanoid baked by `vat bake` into humanoid.vat, and that same file
# exported by `vat export-openvat --target bevy --format exr16 --normals packed` (bevy_open_vat reads
# the normals from the position texture's lower half and its clip rows 0-based; the export includes
# the cap attachment's columns, as vat-bevy draws the caps), into a scratch folder.
#
# Usage: scripts/open-vat-compare.sh [WORK_DIR]      (default: a new folder under /tmp)
# Environment (optional):
#   INSTANCES          counts of characters               (default "1000 10000")
#   FRAMES             measured frames per run            (default 10)
#   WARM_UP            frames rendered before measuring   (default 3)
#   CARGO_TARGET_DIR   build folder                       (default /work/target-bevy, a warm Bevy build)
#   SKIP_BUILD         1: use the binaries already in $CARGO_TARGET_DIR/release
#   EXTRA              more arguments for every run (e.g. "--msaa 1" or "--size 320x180")
#
# Frame time = wall time of one `App::update` (pipelined rendering off, pipelines compiled
# synchronously) plus the wait for the device to go idle after it, so the GPU's work is inside it,
# identically for both plugins. On the software Vulkan driver (lavapipe) the "GPU" is the same
# CPU cores: compare the columns of one run, not runs on different machines.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
WORK="${1:-$(mktemp -d /tmp/open-vat-compare.XXXXXX)}"
INSTANCES="${INSTANCES:-1000 10000}"
FRAMES="${FRAMES:-10}"
WARM_UP="${WARM_UP:-3}"
EXTRA="${EXTRA:-}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/work/target-bevy}"
BIN="$CARGO_TARGET_DIR/release"
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)

if [ "${SKIP_BUILD:-0}" != 1 ]; then
    # Bevy 0.20 declares rust-version 1.97.1; the toolchain is 1.95.
    echo "building vat-cli (release)..." >&2
    cargo build --release --ignore-rust-version -p vat-cli 2>&1 | tail -n 2 >&2
    echo "building open_vat and vat_bevy (release)..." >&2
    (cd benches/open-vat-compare && cargo build --release --ignore-rust-version --locked --bins 2>&1 | tail -n 2 >&2)
fi

# The asset: one bake, exported for bevy_open_vat.
"$BIN/vat" bake --out "$WORK/humanoid.vat" > "$WORK/bake.log" 2>&1 || { cat "$WORK/bake.log" >&2; exit 1; }
rm -rf "$WORK/openvat"
"$BIN/vat" export-openvat "$WORK/humanoid.vat" --out "$WORK/openvat" --target bevy --format exr16 --normals packed \
    > "$WORK/export.log" 2>&1 || { cat "$WORK/export.log" >&2; exit 1; }
grep -E "LOD triangles" "$WORK/bake.log" >&2 || true
head -n 1 "$WORK/export.log" >&2

RESULTS="$WORK/results.txt"
: > "$RESULTS"
run() { # name, binary, instances, extra arguments...
    local name=$1 bin=$2 n=$3
    shift 3
    echo "running $name at $n (frames $FRAMES, warm-up $WARM_UP)..." >&2
    local line
    # shellcheck disable=SC2086 # EXTRA is a list of arguments.
    line=$("$BIN/$bin" --instances "$n" --frames "$FRAMES" --warm-up "$WARM_UP" --assets "$WORK" "$@" $EXTRA \
        2> "$WORK/$name-$n.log" | grep '^RESULT') || { tail -n 20 "$WORK/$name-$n.log" >&2; exit 1; }
    echo "$line" | sed "s/^RESULT /RESULT label=$name /" >> "$RESULTS"
    echo "  $line" >&2
}
for n in $INSTANCES; do
    run open_vat open_vat "$n"
    run vat_bevy vat_bevy "$n"
    run vat_bevy_single_lod vat_bevy "$n" --single-lod
done

field() { # line, key
    echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}
adapter=$(grep -ho '^open_vat: adapter [^;]*' "$WORK"/open_vat-*.log | head -n 1 | sed 's/^open_vat: adapter //')
echo
echo "Frame time, ms (median / p90 of $FRAMES frames after $WARM_UP of warm-up), $(nproc) CPU cores, adapter: ${adapter:-?}${EXTRA:+, extra arguments: $EXTRA}"
echo
echo "| characters | bevy_open_vat | vat-bevy, LODs | vat-bevy, single LOD | open_vat / vat LODs | open_vat / vat single LOD | main-pass triangles (open_vat / vat LODs / vat single) |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for n in $INSTANCES; do
    o=$(grep "label=open_vat .*instances=$n " "$RESULTS")
    v=$(grep "label=vat_bevy .*instances=$n " "$RESULTS")
    s=$(grep "label=vat_bevy_single_lod .*instances=$n " "$RESULTS")
    om=$(field "$o" median_ms) vm=$(field "$v" median_ms) sm=$(field "$s" median_ms)
    printf '| %s | %s / %s | %s / %s | %s / %s | %.2fx | %.2fx | %s / %s / %s |\n' "$n" \
        "$om" "$(field "$o" p90_ms)" "$vm" "$(field "$v" p90_ms)" "$sm" "$(field "$s" p90_ms)" \
        "$(awk -v a="$om" -v b="$vm" 'BEGIN { print a / b }')" "$(awk -v a="$om" -v b="$sm" 'BEGIN { print a / b }')" \
        "$(field "$o" main_triangles)" "$(field "$v" main_triangles)" "$(field "$s" main_triangles)"
done
echo
echo "(ratios > 1: vat-bevy is faster; the goal at equal triangles is >= 1.3x.) Logs and results: $WORK"
