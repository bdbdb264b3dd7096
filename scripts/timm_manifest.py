"""Write ``flowvision/weights/timm_manifest.json``: the published weights of the timm families.

    python scripts/timm_manifest.py --results /path/to/pytorch-image-models/results
    python scripts/timm_manifest.py --results ... --modules hgnet twins   # only these families' records

For every model registered by ``flowvision.models.timm_families``, and for the torchvision models in
``TORCHVISION_LAYOUT`` (whose timm namesakes have their layout and computation), each of timm's pretrained tags
becomes a record, whatever its head: ImageNet-1k classifiers, ImageNet-21k/12k classifiers (their class names,
WordNet lemmas as timm lists them, are written beside the manifest: ``CATEGORY_FILES``), CLIP and SigLIP
embedding projections, and image encoders with no head (``num_classes`` 0). A record holds the hub URL of its
``model.safetensors`` (or, for timm's oldest weights, the URL of its ``.pth`` in timm's GitHub releases), the
preprocessing of timm's pretrained config (resize to ``floor(size / crop_pct)``, center crop ``size``), the
parameter count of timm's model with that head, the smallest input our model takes, and the metrics and GMACs
timm publishes in its repository's ``results`` folder (ImageNet-1k top-1/top-5 at the config's input size; none
when timm has no row there). timm's default tag is what ``pretrained=True`` loads, and its class count is the
model's default when it is built without weights, as in timm. timm publishes no hashes: a hub download checks
the sha256 the hub states, a release file the sha256 prefix in its name.
Needs timm (a test dependency) and a checkout of timm's repository for ``--results``.
"""
import argparse
import csv
import gzip
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


# class names of the heads timm trains on ImageNet subsets, by class count (timm's ``infer_imagenet_subset``); other
# heads (embeddings, no head, other label sets) have none
CATEGORY_FILES = {1000: "imagenet1k_categories.txt", 11221: "imagenet21k_miil_categories.txt.gz",
                  11821: "imagenet12k_categories.txt.gz", 21841: "imagenet22k_categories.txt.gz",
                  21842: "imagenet22k_ms_categories.txt.gz", 21843: "imagenet21k_goog_categories.txt.gz"}


# The widest embedding projection among timm's weights (CLIP, SigLIP, PE: 384 to 1280) and the smallest label set
# (11221 classes) leave this gap: a wider head classifies.
EMBEDDING_MAX_WIDTH = 4096


def head_kind(num_classes):
    """What a head of ``num_classes`` outputs: 'classes' (logits), 'embedding' (a CLIP-style image embedding, the
    projection its text tower was trained against) or 'none' (pooled features: an image encoder)."""
    if num_classes == 0:
        return "none"
    return "classes" if num_classes in CATEGORY_FILES or num_classes > EMBEDDING_MAX_WIDTH else "embedding"


def write_category_files(directory):
    """The class names of timm's ImageNet subsets (``CATEGORY_FILES`` but ImageNet-1k's, which is torchvision's
    list), one per line, gzip-compressed without a timestamp so a rerun writes the same bytes."""
    from timm.data import ImageNetInfo
    from timm.data.imagenet_info import infer_imagenet_subset

    for num_classes, file_name in CATEGORY_FILES.items():
        if num_classes == 1000:
            continue
        info = ImageNetInfo(infer_imagenet_subset({"num_classes": num_classes}))
        text = "".join(info.index_to_description(i) + "\n" for i in range(num_classes))
        with open(os.path.join(directory, file_name), "wb") as f:
            f.write(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))


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


# Models of any input size with more parameters than this (Sapiens2's 5B ViT; the next largest, regnety_2560, has
# 1.3B) are sized on timm's model on the meta device, whose layers ours has (the family's parity tests): whole,
# ours would not fit in memory.
ON_TIMM_META_ABOVE = 2_000_000_000


def _timm_runs_at(model, size):
    """Whether timm's ``model`` (on the meta device) takes a (1, 3, size, size) image."""
    import torch

    try:
        with torch.no_grad():
            model(torch.zeros(1, 3, size, size, device="meta"))
    except (RuntimeError, ValueError, AssertionError):
        return False
    return True


def _min_size(model_name, cfg, num_params):
    """The smallest square input the model takes: its fixed size, else the first size that runs, counting up on
    our model, or timm's for the largest (not a bisection: DLA takes 31 and 32 pixels but not 33, as its pooled and
    strided paths must meet)."""
    if cfg.fixed_input_size:
        return list(cfg.input_size[1:])
    if num_params > ON_TIMM_META_ABOVE:
        import timm
        import torch

        with torch.device("meta"):
            model = timm.create_model(model_name, pretrained=False).eval()
        runs_at = _timm_runs_at
    else:
        model = _built_without_draws(model_name)
        runs_at = _runs_at
    size = next(size for size in range(1, cfg.input_size[-1] + 1) if runs_at(model, size))
    return [size, size]


def _built_without_draws(model_name):
    """Our model ``model_name`` in eval mode, its parameters left as allocated: drawing torch's random streams took
    minutes for regnety_1280's 644M parameters, and only whether the model runs matters here."""
    import flowvision.models as models
    from engine.ops import creation

    host_fill = creation._host_fill
    creation._host_fill = lambda fill, array, generator: array
    try:
        return models.create_model(model_name).eval()
    finally:
        creation._host_fill = host_fill


# Hub owners whose repos hold timm's own state_dict in ``model.safetensors``. Other repos named by timm's configs
# (Florence-2, MobileCLIP, ViTamin, ...) hold their authors' checkpoints, which timm converts with a filter function
# on load: their tags get no record.
TIMM_LAYOUT_OWNERS = ("timm", "munehiro-k", "naver-ai")


def _has_timm_layout(cfg):
    """Whether the tag's file is a timm state_dict we can load as it is: on the hub from the owners above, or in
    timm's GitHub releases (named with their hash; other URLs are the authors' own checkpoints)."""
    if cfg.hf_hub_id:
        return cfg.hf_hub_id.split("/")[0] in TIMM_LAYOUT_OWNERS and not cfg.hf_hub_filename
    return bool(re.fullmatch(r"https://github\.com/.*-[0-9a-f]{8,}\.pth", cfg.url or ""))


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
        "head": head_kind(cfg.num_classes),
        "metrics": ({"ImageNet-1K": {"acc@1": float(top["top1"]), "acc@5": float(top["top5"])}}
                    if top and cfg.num_classes == 1000 else {}),
        "gflops": gmacs.get((model, size)),
        "file_size_mb": None,
        "min_size": min_size,
        "recipe": f"https://huggingface.co/{cfg.hf_hub_id}" if cfg.hf_hub_id else cfg.url,
        "preprocessing": {"resize_size": math.floor(size / cfg.crop_pct), "crop_size": size,
                          "interpolation": cfg.interpolation, "mean": list(cfg.mean), "std": list(cfg.std)},
        "categories": CATEGORY_FILES.get(cfg.num_classes),
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
        cfgs = [cfg for cfg in cfgs if _has_timm_layout(cfg)]
        if not cfgs:
            continue
        default = get_pretrained_cfg(model).tag  # timm's, unless its file is another layout: then the first served
        default = default if default in [cfg.tag for cfg in cfgs] else cfgs[0].tag
        cfgs.sort(key=lambda cfg: cfg.tag != default)
        min_size = _min_size(model, cfgs[0], _num_params(model, 0))
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
    write_category_files(os.path.dirname(args.output))
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print(f"{len(manifest['models'])} models, {sum(len(e['weights']) for e in manifest['models'].values())} "
          f"weights -> {args.output}")


if __name__ == "__main__":
    main()
