"""The README's model zoo table, generated from the registry and the weights manifest.

    python scripts/model_table.py            # print the table
    python scripts/model_table.py --check    # exit 1 when README.md's table is not this one

One row per family module: its models (aliases left out), the weight tags they publish and the best
published metric (ImageNet-1K acc@1 for classifiers, Kinetics-400 acc@1 for video classifiers, box mAP for
detectors, mIoU for segmentation, the lowest end-point error for optical flow, with its dataset).
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN, END = "<!-- model zoo: scripts/model_table.py -->", "<!-- end of model zoo -->"
# the metric a family's weights are best known by, in the manifest's metric names, and which value is the best
_METRICS = (("acc@1", "acc@1 {:.1f}", max), ("box_map", "box mAP {:.1f}", max), ("miou", "mIoU {:.1f}", max),
            ("epe", "epe {:.2f}", min))
# datasets named after the metric: those not implied by it (acc@1 is ImageNet-1K's unless said), and every
# dataset of an end-point error (Sintel's passes and splits differ widely)
_NAMED_DATASETS = ("Kinetics-400",)
_ALWAYS_NAMED = ("epe",)


def _best(names):
    """The best published headline metric among the models ``names``, formatted, or '-'."""
    from flowvision.models import get_model_weights, list_pretrained

    for key, text, best in _METRICS:
        values = [(metrics[key], dataset) for name in names if name in list_pretrained()
                  for member in get_model_weights(name) for dataset, metrics in member.meta["_metrics"].items()
                  if key in metrics]
        if values:
            value, dataset = best(values)
            named = dataset in _NAMED_DATASETS or key in _ALWAYS_NAMED
            return text.format(value) + (f" ({dataset})" if named else "")
    return "-"


# a family with more tags than this (timm's publish one per recipe) shows their count; `flowvision models` lists them
_MAX_TAGS = 4


def _tags(names):
    from flowvision.models import get_model_weights, list_pretrained

    tags = sorted({tag for name in names if name in list_pretrained() for tag in get_model_weights(name).__members__}
                  - {"DEFAULT"})
    return ", ".join(tags) if len(tags) <= _MAX_TAGS else f"{len(tags)} tags"


def table():
    """The markdown table, one row per family module."""
    sys.path.insert(0, ROOT)
    from flowvision.models import list_models, list_modules
    from flowvision.models.registry import model_alias_of

    lines = ["| family | models | weights | best published |", "| --- | --- | --- | --- |"]
    for module in list_modules():
        names = [n for n in list_models(module=module) if not model_alias_of(n)]
        lines.append(f"| {module} | {', '.join(names)} | {_tags(names)} | {_best(names)} |")
    return "\n".join(lines)


def readme_table(path=os.path.join(ROOT, "README.md")):
    """The table between the markers in README.md."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with README.md's table")
    args = parser.parse_args()
    if args.check:
        same = readme_table() == table()
        print("README.md's model table is current" if same else "README.md's model table is stale: "
              "replace it with `python scripts/model_table.py`'s output")
        return 0 if same else 1
    print(table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
