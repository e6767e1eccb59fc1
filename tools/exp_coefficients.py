"""Derives the coefficients of the CPU kernel's double exp (Exp(VecD) in
cpp/src/ep/cpu/primitive/simd_softmax.inc) and prints its worst relative error on the reduced
interval, next to the Taylor series it replaced. Needs mpmath (not a dependency of oneflite).

    python tools/exp_coefficients.py [--degree 11]

exp(r) for r in [-ln2/2, ln2/2] is evaluated as 1 + r + r^2 q(r), q a polynomial of degree
`degree` - 2: a Chebyshev fit of (exp(r) - 1 - r) / r^2 in 50 digits, each coefficient then
rounded to double, as the kernel holds them. The error printed is that of the rounded
polynomial, evaluated exactly, against exp, over 4001 evenly spaced r: the kernel's own rounding
adds to it (tests/cpp/simd_softmax_check.cpp checks the sum, within 1 ulp).
"""

from __future__ import annotations

import argparse
import math

import mpmath as mp


def fit(degree: int) -> list[float]:
    """q's coefficients, highest power first, rounded to double."""
    half = mp.log(2) / 2

    def q(r):
        return mp.mpf(1) / 2 if r == 0 else (mp.exp(r) - 1 - r) / r**2

    return [float(c) for c in mp.chebyfit(q, [-half, half], degree - 1)]


def worst_error(evaluate) -> mp.mpf:
    half = mp.log(2) / 2
    points = (-half + 2 * half * i / 4000 for i in range(4001))
    return max(abs(evaluate(r) - mp.exp(r)) / mp.exp(r) for r in points)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--degree", type=int, default=11, help="the polynomial's degree in r")
    args = parser.parse_args()
    mp.mp.dps = 50
    coefficients = fit(args.degree)

    def fitted(r):
        q = mp.mpf(0)
        for c in coefficients:
            q = q * r + mp.mpf(c)
        return 1 + r + r * r * q

    def taylor12(r):
        return sum(r**k / math.factorial(k) for k in range(13))

    for power, c in zip(range(args.degree, 1, -1), coefficients):
        print(f"c{power:<2} = {c!r}")
    unit = mp.mpf(2) ** -53
    for name, evaluate in ((f"fit, degree {args.degree}", fitted), ("Taylor to r^12", taylor12)):
        error = worst_error(evaluate)
        in_units = mp.nstr(error / unit, 3)
        print(f"{name}: worst relative error {mp.nstr(error, 3)} ({in_units} x 2^-53)")


if __name__ == "__main__":
    main()
