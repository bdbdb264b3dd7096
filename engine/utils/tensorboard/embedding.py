"""The projector plugin's files for ``add_embedding``: tensors.tsv, metadata.tsv, sprite.png in
<log_dir>/<step, 5 digits>/<tag>/, and projector_config.pbtxt (protobuf text format) in log_dir, laid
out as torch's writer lays them out."""
import math
import os

import numpy as np

from . import images


def quote_tag(tag):
    """The tag as a directory name: '%', '/' and '\\' percent-encoded."""
    return tag.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")


def write_tensors(mat, save_path):
    """One row of ``mat`` per line, tab-separated, each value as Python's str of it."""
    with open(os.path.join(save_path, "tensors.tsv"), "wb") as f:
        for row in mat:
            f.write(("\t".join(str(v.item()) for v in row) + "\n").encode("utf-8"))


def write_metadata(metadata, save_path, metadata_header=None):
    """Labels one per line, or with a header a tab-separated table."""
    if metadata_header:
        if len(metadata_header) != len(metadata[0]):
            raise ValueError("len of header must be equal to the number of columns in metadata")
        lines = ["\t".join(str(e) for e in row) for row in [metadata_header] + list(metadata)]
    else:
        lines = [str(x) for x in metadata]
    with open(os.path.join(save_path, "metadata.tsv"), "wb") as f:
        f.write(("\n".join(lines) + "\n").encode("utf-8"))


def write_sprite(label_img, save_path):
    """The NCHW images (values in [0, 1]) tiled into a square PNG, ceil(sqrt(N)) per row."""
    nrow = math.ceil(label_img.shape[0] ** 0.5)
    grid = images.make_grid(label_img, ncols=nrow).transpose(1, 2, 0)
    square = np.zeros((grid.shape[1], grid.shape[1], 3))
    square[:grid.shape[0]] = grid
    png = images.encode_png(np.uint8((square * 255).clip(0, 255)))
    with open(os.path.join(save_path, "sprite.png"), "wb") as f:
        f.write(png)


_ESCAPES = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord('"'): '\\"', ord("'"): "\\'",
            ord("\\"): "\\\\"}


def _quoted(s):
    """A text-format string literal: UTF-8 bytes, C escapes, octal for the non-printable ones."""
    body = "".join(_ESCAPES.get(b) or (chr(b) if 32 <= b < 127 else "\\%03o" % b) for b in s.encode("utf-8"))
    return '"' + body + '"'


def embedding_pbtxt(tensor_name, tensor_path, metadata_path=None, sprite_path=None, sprite_dim=None):
    """One ``embeddings { ... }`` entry of projector_config.pbtxt (fields in field-number order)."""
    lines = ["embeddings {", f"  tensor_name: {_quoted(tensor_name)}"]
    if metadata_path is not None:
        lines.append(f"  metadata_path: {_quoted(metadata_path)}")
    if sprite_path is not None:
        lines += ["  sprite {", f"    image_path: {_quoted(sprite_path)}"]
        lines += [f"    single_image_dim: {d}" for d in sprite_dim]
        lines.append("  }")
    lines += [f"  tensor_path: {_quoted(tensor_path)}", "}"]
    return "\n".join(lines) + "\n"
