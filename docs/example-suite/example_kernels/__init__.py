"""An example kernelwatch suite (docs/suites.md)."""
