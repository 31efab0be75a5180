"""Benchmarks: each ``bench_<area>.py`` reports speed as ratios against a baseline run in the same process."""
