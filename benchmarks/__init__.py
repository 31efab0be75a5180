"""Benchmarks: ``python -m benchmarks.bench_<area> [--quick]``; ratios against a baseline run in the same process."""
