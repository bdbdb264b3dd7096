"""The model zoo tables, generated from the registry and the weights manifest.

    python scripts/model_table.py            # write both tables
    python scripts/model_table.py --check    # exit 1 when either is not current

``docs/models.md`` has one row per family module: its models (aliases left out), the weight tags they publish
and the best published metric (ImageNet-1K acc@1 for classifiers, Kinetics-400 acc@1 for video classifiers, box
mAP for detectors, mIoU for segmentation, the lowest end-point error for optical flow, with its dataset).
README.md's summary has one row per task: its families, and how many models it has and how many have weights.
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README, PAGE = os.path.join(ROOT, "README.md"), os.path.join(ROOT, "docs", "models.md")
BEGIN, END = "<!-- model zoo: scripts/model_table.py -->", "<!-- end of model zoo -->"
PAGE_TITLE = ("# Model zoo\n\nEvery family module, its models, their weight tags and the best published metric\n"
              "(written by `python scripts/model_table.py`). `flowvision models [PATTERN...] --pretrained` lists\n"
              "each model's tags with acc@1/acc@5 and parameters.\n")
# the task of a model, from the package of its entrypoint: classifiers live in flowvision.models and its
# timm_families, as do the image encoders (whose default weights give features or a CLIP-style embedding)
_TASKS = (("segmentation", "semantic segmentation"), ("detection", "object detection"),
          ("video", "video classification"), ("optical_flow", "optical flow"),
          ("quantization", "int8 image classification"), ("", "image classification"))
_ENCODING = "image encoding (features, CLIP-style embeddings)"
_ROWS = ("image classification", _ENCODING, "int8 image classification", "optical flow", "video classification",
         "object detection", "semantic segmentation")
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


def _families():
    """``{module: [model names]}`` for every family module, aliases left out."""
    sys.path.insert(0, ROOT)
    from flowvision.models import list_models, list_modules
    from flowvision.models.registry import model_alias_of

    return {module: [n for n in list_models(module=module) if not model_alias_of(n)] for module in list_modules()}


def table():
    """docs/models.md's table, one row per family module."""
    lines = ["| family | models | weights | best published |", "| --- | --- | --- | --- |"]
    for module, names in _families().items():
        lines.append(f"| {module} | {', '.join(names)} | {_tags(names)} | {_best(names)} |")
    return "\n".join(lines)


def _task(name):
    from flowvision.models import model_entrypoint
    from flowvision.models.weights import get_model_weights, list_pretrained

    package = model_entrypoint(name).__module__
    task = next(task for part, task in _TASKS if f".{part}." in package or not part)
    if task == "image classification" and name in list_pretrained():
        head = get_model_weights(name).DEFAULT.value.record.get("head", "classes")
        return task if head == "classes" else _ENCODING
    return task


def summary():
    """README.md's table, one row per task."""
    from flowvision.models import list_pretrained

    by_task = {task: ([], []) for task in _ROWS}
    for module, names in _families().items():
        for name in names:
            families, models = by_task[_task(name)]
            if module not in families:
                families.append(module)
            models.append(name)
    pretrained = set(list_pretrained())
    lines = ["| task | families | models | with weights |", "| --- | --- | ---: | ---: |"]
    for task, (families, models) in by_task.items():
        with_weights = sum(name in pretrained for name in models)
        lines.append(f"| {task} | {', '.join(families)} | {len(models)} | {with_weights} |")
    return "\n".join(lines)


def readme_table(path=README):
    """The table between the markers in README.md."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


def page():
    """The whole of docs/models.md."""
    return f"{PAGE_TITLE}\n{table()}\n"


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def write(readme=README, models_page=PAGE):
    """Write both tables: README.md's between its markers, docs/models.md whole."""
    text = _read(readme)
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    readme_text = f"{head}{BEGIN}\n{summary()}\n{END}{tail}"
    page_text = page()
    with open(readme, "w", encoding="utf-8") as f:  # both written once both are made: a failure leaves the old ones
        f.write(readme_text)
    with open(models_page, "w", encoding="utf-8") as f:
        f.write(page_text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with README.md's and docs/models.md's tables")
    args = parser.parse_args()
    if args.check:
        same = readme_table() == summary() and os.path.exists(PAGE) and _read(PAGE) == page()
        print("the model tables are current" if same else "the model tables are stale: run scripts/model_table.py")
        return 0 if same else 1
    write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
