"""Fetch the wheels the GPU machine lacks and cannot download (it has no network): mpi4py and MPICH, which
engine.distributed needs for its NCCL backend's rendezvous, for CPython 3.10 to 3.13 on x86-64 Linux.

    python scripts/device_wheels.py [--dest .device_wheels]

The folder (about 20 MB, ignored by git) travels to the GPU machine with the device tool's ``carry``, and
``python scripts/gpu_check.py --wheels .device_wheels`` installs from it, offline, before the tests.
"""
import argparse
import subprocess
import sys

PACKAGES = ("mpi4py", "mpich")
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
#: the Linux platform tags the wheels carry (pip takes only the tags it is given)
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", default=".device_wheels")
    args = parser.parse_args()
    for python in PYTHONS:
        platforms = [option for tag in PLATFORMS for option in ("--platform", tag)]
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                        *platforms, "--python-version", python, "--dest", args.dest, *PACKAGES], check=True)
    print(f"wheels for CPython {', '.join(PYTHONS)} in {args.dest}")


if __name__ == "__main__":
    main()
