"""A small CUDA suite whose kernels a benchmark makes slower and faster, commit by commit."""
