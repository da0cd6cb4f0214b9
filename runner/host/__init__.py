"""The GPU host: its checks (doctor), its GPU and environment, where its NVIDIA tools are."""
