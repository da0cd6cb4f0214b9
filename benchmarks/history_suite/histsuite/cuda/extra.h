// Extra floats each workload's kernel reads from its pad buffer: the injected slowdown.
// benchmarks/history_gpu.py rewrites this file in the commits that change it.
#define EXTRA_W0 0LL
#define EXTRA_W1 0LL
#define EXTRA_W2 0LL
#define EXTRA_W3 0LL
#define EXTRA_W4 0LL
#define EXTRA_W5 0LL
#define EXTRA_W6 0LL
#define EXTRA_W7 0LL
#define EXTRA_W8 0LL
#define EXTRA_W9 0LL
#define EXTRA_W10 0LL
#define EXTRA_W11 0LL
