#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests scripts/compare_device_output.py, which gpu-check.sh uses to compare each example's
output on CUDA devices with its output on CPU devices: it runs here, without a GPU, so that a
mistake in it does not first show on a lent GPU machine.

Usage: compare_device_output_test.py ROOT (the repository root)
"""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else "."
SCRIPT = os.path.join(ROOT, "scripts", "compare_device_output.py")
ERROR_EXAMPLE = os.path.join(ROOT, "examples", "error_handling", "expected_output.txt")


def compare(cpu, cuda):
    """(exit status, output) of the script on the two texts."""
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for name, text in (("cpu.txt", cpu), ("cuda.txt", cuda)):
            paths.append(os.path.join(folder, name))
            with open(paths[-1], "w", encoding="utf-8") as f:
                f.write(text)
        done = subprocess.run([sys.executable, SCRIPT, *paths], capture_output=True, text=True,
                              check=False)
        return done.returncode, done.stdout


class CompareDeviceOutput(unittest.TestCase):
    def test_device_names_and_column_widths_aside(self):
        cpu = "device   | value\n-------- | -----\ncpu:0    | 1\n"
        cuda = "device    | value\n--------- | -----\ncuda:0    | 1\n"
        self.assertEqual(compare(cpu, cuda), (0, "equal (device names and column widths aside)\n"))

    def test_floats_within_the_tolerance(self):
        status, out = compare("loss 0.5000000\n", "loss 0.5000031\n")
        self.assertEqual(status, 0)
        self.assertIn("equal within 1e-05: 1 numbers differ", out)
        self.assertEqual(compare("loss 0.50\n", "loss 0.51\n")[0], 1)

    def test_counts_and_indices_must_be_equal(self):
        status, out = compare("steps 100000\n", "steps 100001\n")
        self.assertEqual(status, 1)
        self.assertIn("differs: '100000' (cpu, line 1) against '100001' (cuda, line 1)", out)

    def test_a_missing_line_differs(self):
        status, out = compare("a\nb\n", "a\n")
        self.assertEqual((status, out), (1, "differs: 2 tokens on cpu, 1 on cuda\n"))

    def test_each_platforms_advice_for_more_devices(self):
        with open(ERROR_EXAMPLE, encoding="utf-8") as f:
            cpu = f.read()
        advice = "(spmd::initialize({.cpu_devices = 16}) or SPMD_CPU_DEVICES=16)"
        self.assertIn(advice, cpu)
        cuda = cpu.replace(advice, "(SPMD_CUDA_DEVICES_PER_GPU=16 puts 16 spmd devices on each of "
                                   "the 1 GPU)").replace("cpu:", "cuda:")
        self.assertEqual(compare(cpu, cuda)[0], 0)
        # Only the advice: the counts before it are still compared.
        self.assertEqual(compare(cpu, cuda.replace("Number of devices 8", "Number of devices 9"))[0],
                         1)


if __name__ == "__main__":
    unittest.main()
