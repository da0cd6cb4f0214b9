#!/usr/bin/env bash
# Builds nvbench (sources at $NVBENCH, fmt's include/ at $FMT, nlohmann/json's single_include/ at
# $JSON: no CMake, no download; NVML and CUPTI off) with copy_bench.cu into $OUT_DIR/copy_bench,
# and with `run` also runs it twice (as is, then KW_SLOWER=1), writing base.json and slower.json
# (with their --jsonbin sample files) into $OUT_DIR.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT_DIR=${OUT_DIR:-$PWD/nvbench-out}
ARCH=${ARCH:-sm_90}
GEN=$OUT_DIR/gen
mkdir -p "$GEN/nvbench/detail" "$GEN/nvbench/internal"
sed -e 's|#cmakedefine NVBENCH_HAS_NVML|/* no NVML */|' -e 's|#cmakedefine NVBENCH_HAS_CUPTI|/* no CUPTI */|' \
  "$NVBENCH/nvbench/config.cuh.in" > "$GEN/nvbench/config.cuh"
cat > "$GEN/nvbench/detail/version.cuh" <<H
#pragma once
#define NVBENCH_VERSION_MAJOR 0
#define NVBENCH_VERSION_MINOR 1
#define NVBENCH_VERSION_PATCH 0
H
cat > "$GEN/nvbench/detail/git_revision.cuh" <<H
#pragma once
#define NVBENCH_GIT_BRANCH "main"
#define NVBENCH_GIT_SHA1 "${NVBENCH_SHA:-unknown}"
#define NVBENCH_GIT_VERSION "${NVBENCH_SHA:0:7}"
H
for doc in cli_help cli_help_axis; do
  { echo '#include <string>'; echo 'namespace  {'; echo "const std::string ${doc}_text ="
    echo "R\"expected($(cat "$NVBENCH/docs/$doc.md"))expected\";"; echo '}'; } > "$GEN/nvbench/internal/$doc.cuh"
done
SRCS=$(sed -n '/^set(srcs/,/^)/p' "$NVBENCH/nvbench/CMakeLists.txt" | grep -E '\.(cu|cxx)$' | tr -d ' ')
OBJS=()
for src in $SRCS json_printer.cu; do
  obj="$OUT_DIR/obj/${src//\//_}.o"; mkdir -p "$OUT_DIR/obj"; OBJS+=("$obj")
  [ -f "$obj" ] && continue
  nvcc -std=c++17 -O2 -arch="$ARCH" -x cu -c "$NVBENCH/nvbench/$src" -o "$obj" \
    -I"$NVBENCH" -I"$GEN" -I"$FMT" -I"$JSON" -DFMT_HEADER_ONLY -DNVBENCH_NO_IMPLICIT_SYSTEM_HEADER &
  while [ "$(jobs -r | wc -l)" -ge "${JOBS:-8}" ]; do wait -n; done
done
wait
nvcc -std=c++17 -O2 -arch="$ARCH" "$HERE/copy_bench.cu" "$NVBENCH/nvbench/main.cu" "${OBJS[@]}" \
  -I"$NVBENCH" -I"$GEN" -I"$FMT" -I"$JSON" -DFMT_HEADER_ONLY -L"${CUDA_HOME:-/usr/local/cuda}/lib64/stubs" -lcuda -o "$OUT_DIR/copy_bench"
echo "built $OUT_DIR/copy_bench"
if [ "${1:-}" = run ]; then
  cd "$OUT_DIR"
  ./copy_bench --jsonbin base.json
  KW_SLOWER=1 ./copy_bench --jsonbin slower.json
fi
