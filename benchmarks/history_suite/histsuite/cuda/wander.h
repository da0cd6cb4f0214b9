// The wandering kernels' injections (histsuite/cuda/wander.cu); benchmarks/history_gpu.py rewrites
// this file in the commits that change them.
#define TILED_SPILL 0
#define SPILL_EXTRA_K 0
#define L2_EXTRA_PASSES 0
