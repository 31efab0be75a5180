"""djb2 over UTF-16 code units (spec §2.3) on 2 KB strings: numpy ``djb2_hex`` vs the plain loop.

Run: ``python -m benchmarks.bench_djb2`` (or ``--quick``). Reports hashes per second for
``agentscope.hashing.djb2_hex`` (vectorised) and ``djb2_hex_reference`` (plain loop) on the same
strings in the same process, their ratio, and checks both agree. Target (issue 2): >= 100k
hashes/s for the numpy version.
"""

from __future__ import annotations

import argparse
import random
import time

from agentscope.hashing import djb2_hex, djb2_hex_reference


def strings(count: int, length: int = 2048, seed: int = 7) -> list[str]:
    """``count`` random strings of ``length`` characters (ASCII, some BMP and astral characters)."""
    rng = random.Random(seed)
    alphabet = [chr(c) for c in range(32, 127)] * 20 + ["é", "中", "—", "😀", "𝄞"]
    return ["".join(rng.choices(alphabet, k=length)) for _ in range(count)]


def rate(fn: object, data: list[str], min_seconds: float) -> float:
    """Hashes per second of ``fn`` over ``data``, repeating until ``min_seconds`` have passed."""
    assert callable(fn)
    done = 0
    start = time.perf_counter()
    while True:
        for s in data:
            fn(s)
        done += len(data)
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return done / elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer strings, shorter runs")
    args = parser.parse_args(argv)
    data = strings(200 if args.quick else 2000)
    seconds = 0.5 if args.quick else 2.0
    mismatches = sum(djb2_hex(s) != djb2_hex_reference(s) for s in data[:200])
    units = sum(len(s.encode("utf-16-le")) for s in data) // (2 * len(data))
    fast = rate(djb2_hex, data, seconds)
    plain = rate(djb2_hex_reference, data[: max(20, len(data) // 20)], seconds)
    print(f"{len(data)} strings of 2048 characters (mean {units} UTF-16 units); results agree: {mismatches == 0}")
    print(f"numpy djb2_hex          {fast:>12,.0f} hashes/s")
    print(f"plain loop (reference)  {plain:>12,.0f} hashes/s")
    print(f"ratio numpy / plain     {fast / plain:>12.1f}x")
    print(f"target >= 100,000 hashes/s: {'met' if fast >= 100_000 else 'NOT met'}")


if __name__ == "__main__":
    main()
