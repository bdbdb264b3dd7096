"""The README's performance rows: the headline cases copied from docs/performance.md.

    python scripts/headline_rows.py            # print the rows
    python scripts/headline_rows.py --write    # put them into README.md (bench.py --markdown does this too)
    python scripts/headline_rows.py --check    # exit 1 when README.md's rows are not the page's

The headline cases are the ones the developers' guide judges speed work by: resnet50 inference,
lraspp segmentation and a resnet50 training step, each as PyTorch eager vs ours.
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "docs", "performance.md")
README = os.path.join(ROOT, "README.md")
BEGIN, END = "<!-- headline rows: docs/performance.md -->", "<!-- end of headline rows -->"
HEADLINE_CASES = ("resnet50 eager b8", "resnet50 graph b8", "lraspp_mobilenet_v3_large graph",
                  "resnet50 train step graph")
HEADER = "| case | PyTorch ms | ours ms | ours/PyTorch |\n| --- | ---: | ---: | ---: |"


def rows(page=PAGE):
    """The markdown table of the headline cases found in the performance page, in HEADLINE_CASES order."""
    with open(page, encoding="utf-8") as f:
        found = {line.split(" | ", 1)[0][2:]: line for line in f.read().splitlines() if line.startswith("| ")}
    return "\n".join([HEADER] + [found[case] for case in HEADLINE_CASES if case in found])


def readme_rows(path=README):
    """The table between the markers in README.md."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


def write(page=PAGE, path=README):
    """Replace the README's rows with the page's."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    before, rest = text.split(BEGIN, 1)
    after = rest.split(END, 1)[1]
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{before}{BEGIN}\n{rows(page)}\n{END}{after}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="update README.md")
    action.add_argument("--check", action="store_true", help="compare with README.md's rows")
    args = parser.parse_args()
    if args.write:
        write()
    elif args.check:
        same = readme_rows() == rows()
        print("README.md's performance rows are current" if same else "README.md's performance rows are stale: "
              "run `python scripts/headline_rows.py --write`")
        return 0 if same else 1
    else:
        print(rows())
    return 0


if __name__ == "__main__":
    sys.exit(main())
