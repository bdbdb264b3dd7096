"""Write ``flowvision/weights/timm_manifest.json``: the published ImageNet-1k weights of the timm families.

    python scripts/timm_manifest.py --results /path/to/pytorch-image-models/results
    python scripts/timm_manifest.py --results ... --modules hgnet twins   # only these families' records

For every model registered by ``flowvision.models.timm_families``, and for the torchvision models in
``TORCHVISION_LAYOUT`` (whose timm namesakes have their layout and computation), each of timm's pretrained tags
with a 1000-class head becomes a record: the hub URL of its ``model.safetensors`` (or, for timm's oldest weights,
the URL of its ``.pth`` in timm's GitHub releases), the preprocessing of timm's pretrained config (resize to
``floor(size / crop_pct)``, center crop ``size``), the parameter count of timm's model with that head, the smallest
input our model takes, and the metrics and GMACs timm publishes in its repository's ``results`` folder (top-1/top-5
at the config's input size; none when timm has no row there). timm's default tag is what ``pretrained=True``
loads. timm publishes no hashes: a hub download checks the sha256 the hub states, a release file the sha256 prefix
in its name.
Needs timm (a test dependency) and a checkout of timm's repository for ``--results``.
"""
import argparse
import csv
import json
import math
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = os.path.join(ROOT, "flowvision", "weights", "timm_manifest.json")
BENCHMARK = "benchmark-infer-amp-nchw-pt291-cu130-5090.csv"  # timm's newest table with GMACs per input size
# torchvision's models whose timm namesakes have the same state_dict layout and forward (tested in
# tests/flowvision/test_timm_weights.py): their timm tags join torchvision's, which keep the default
TORCHVISION_LAYOUT = ("densenet121", "densenet161", "densenet169", "densenet201", "resnet18", "resnet34", "resnet50",
                      "resnet101", "resnet152", "resnext50_32x4d", "resnext101_32x8d", "resnext101_64x4d",
                      "wide_resnet50_2", "wide_resnet101_2")


def _rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _enum_name(model):
    """``deit_tiny_patch16_224`` -> ``Deit_Tiny_Patch16_224_Weights``."""
    return "_".join(part[:1].upper() + part[1:] for part in model.split("_")) + "_Weights"


def _num_params(model, num_classes):
    """The parameter count of timm's ``model`` with a ``num_classes`` head (built on the meta device)."""
    import timm
    import torch

    with torch.device("meta"):
        built = timm.create_model(model, pretrained=False, num_classes=num_classes)
    return sum(p.numel() for p in built.parameters())


def _runs_at(model, size):
    """Whether ``model`` (ours, in eval mode) takes a (1, 3, size, size) image."""
    import engine

    try:
        with engine.no_grad():
            model(engine.zeros(1, 3, size, size))
    except (RuntimeError, ValueError):
        return False
    return True


def _min_size(model_name, cfg):
    """The smallest square input the model takes: its fixed size, else the first size that runs, counting up on
    our model (not a bisection: DLA takes 31 and 32 pixels but not 33, as its pooled and strided paths must meet)."""
    if cfg.fixed_input_size:
        return list(cfg.input_size[1:])
    import flowvision.models as models

    model = models.create_model(model_name).eval()
    size = next(size for size in range(1, cfg.input_size[-1] + 1) if _runs_at(model, size))
    return [size, size]


def _source(model, cfg):
    """Where a tag's file is, and its hash: the hub's ``model.safetensors`` (the hub states its sha256), or for
    timm's older weights a ``.pth`` in its GitHub releases, whose name ends in a prefix of its sha256 (timm's
    clean_checkpoint.py names them so; torch.hub's download, as ours, checks it)."""
    if cfg.hf_hub_id:
        return {"url": f"https://huggingface.co/{cfg.hf_hub_id}/resolve/main/model.safetensors",
                "file_name": f"{model}.{cfg.tag}.safetensors", "sha256": None, "sha256_is_prefix": False}
    file_name = cfg.url.rsplit("/", 1)[-1]
    prefix = re.fullmatch(r".*-([0-9a-f]{8,})\.pth", file_name)
    if not cfg.url.startswith("https://github.com/") or prefix is None:
        raise ValueError(f"{model}.{cfg.tag}: no hub file and no hash in its file name ({cfg.url})")
    return {"url": cfg.url, "file_name": file_name, "sha256": prefix.group(1), "sha256_is_prefix": True}


def _record(model, cfg, accuracy, gmacs, min_size):
    """The manifest record of one (model, tag)."""
    size = cfg.input_size[-1]
    top = accuracy.get((f"{model}.{cfg.tag}", size))
    return {
        **_source(model, cfg),
        "num_params": _num_params(model, cfg.num_classes),
        "num_classes": cfg.num_classes,
        "metrics": {"ImageNet-1K": {"acc@1": float(top["top1"]), "acc@5": float(top["top5"])}} if top else {},
        "gflops": gmacs.get((model, size)),
        "file_size_mb": None,
        "min_size": min_size,
        "recipe": f"https://huggingface.co/{cfg.hf_hub_id}" if cfg.hf_hub_id else cfg.url,
        "preprocessing": {"resize_size": math.floor(size / cfg.crop_pct), "crop_size": size,
                          "interpolation": cfg.interpolation, "mean": list(cfg.mean), "std": list(cfg.std)},
        "categories": "imagenet1k_categories.txt",
        "license": cfg.license,
    }


def build(results, modules=None, previous=None):
    """The manifest as a dict; with ``modules`` (family module names), only those families' records are built
    and every other record is kept from ``previous``, the current manifest."""
    import timm
    from timm.models import get_pretrained_cfg

    sys.path.insert(0, ROOT)
    import flowvision.models as models

    accuracy = {(r["model"], int(r["img_size"])): r for r in _rows(os.path.join(results, "results-imagenet.csv"))}
    gmacs = {(r["model"], int(r["infer_img_size"])): float(r["infer_gmacs"])
             for r in _rows(os.path.join(results, BENCHMARK))}
    entries = {}
    for model in models.list_models():
        module = models.model_entrypoint(model).__module__
        timm_family = ".timm_families." in module
        if not timm_family and model not in TORCHVISION_LAYOUT:
            continue
        if modules is not None and module.rsplit(".", 1)[-1] not in modules:
            if model in previous["models"]:
                entries[model] = previous["models"][model]
            continue
        cfgs = [get_pretrained_cfg(name) for name in timm.list_pretrained(f"{model}.*")]
        cfgs = [cfg for cfg in cfgs if cfg.num_classes == 1000 and (cfg.hf_hub_id or cfg.url)]
        if not cfgs:
            continue
        default = get_pretrained_cfg(model).tag
        default = default if default in [cfg.tag for cfg in cfgs] else cfgs[0].tag
        cfgs.sort(key=lambda cfg: cfg.tag != default)
        min_size = _min_size(model, cfgs[0])
        weights = {cfg.tag.upper(): _record(model, cfg, accuracy, gmacs, min_size) for cfg in cfgs}
        if timm_family:
            entries[model] = {"weights_enum": _enum_name(model), "default": default.upper(),
                              "pretrained_tag": default.upper(), "weights": weights}
        else:
            entries[model] = {"weights": weights}  # added to torchvision's record
    return {
        "format_version": 1,
        "source": (f"timm {timm.__version__} (its pretrained configs: hub ids, preprocessing, licenses) and the "
                   "results folder of its repository (ImageNet-1k accuracy, GMACs); checkpoints on the Hugging "
                   "Face hub"),
        "sha256_note": ("timm publishes no hashes: for a hub file sha256 is null, and the download is checked "
                        "against the sha256 the hub states for the file (X-Linked-Etag) and its stated size; for a "
                        "release file it is the sha256 prefix in the file's name (sha256_is_prefix)."),
        "license_note": "each record names the license timm's pretrained config gives for those weights.",
        "torchvision_note": ("a model holding only 'weights' is torchvision's: these tags join its torchvision "
                             "record, whose enum, default and pretrained_tag stay torchvision's."),
        "models": entries,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", required=True, help="the results folder of a checkout of timm's repository")
    parser.add_argument("--output", default=OUTPUT)
    parser.add_argument("--modules", nargs="+", help="rebuild only these family modules' records (new families), "
                                                      "keeping the others from the output file")
    args = parser.parse_args(argv)
    previous = None
    if args.modules:
        with open(args.output, encoding="utf-8") as f:
            previous = json.load(f)
    manifest = build(args.results, args.modules, previous)
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print(f"{len(manifest['models'])} models, {sum(len(e['weights']) for e in manifest['models'].values())} "
          f"weights -> {args.output}")


if __name__ == "__main__":
    main()
