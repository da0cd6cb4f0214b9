// Which side of each case this commit builds: 0 the base, 1 the head (the known cause).
// benchmarks/cause_gpu.py rewrites this file in the commit that injects the causes.
#define HEAD_DRAM 0
#define HEAD_COALESCING 0
#define HEAD_SPILLS 0
#define HEAD_OCC_REGS 0
#define HEAD_OCC_SMEM 0
#define HEAD_WAVES 0
#define HEAD_INSTRUCTIONS 0
#define HEAD_BANK_CONFLICTS 0
#define HEAD_SECOND_KERNEL 0
#define HEAD_ATOMIC 0
