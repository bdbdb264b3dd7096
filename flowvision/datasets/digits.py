"""The UCI handwritten digits (8x8, 1797 images), shipped with the package for demos and tests."""
import gzip
import os

import numpy as np

DIGITS_PATH = os.path.join(os.path.dirname(os.path.dirname(__file__)), "assets", "digits.csv.gz")


def load_digits(holdout=0.2, seed=0):
    """((train_images, train_labels), (test_images, test_labels)) as numpy arrays.

    Images are float32 in [0, 1] with shape (N, 1, 8, 8); labels are int64. The split is a
    seeded permutation, so every caller gets the same held-out set.
    """
    with gzip.open(DIGITS_PATH, "rt") as f:
        rows = np.loadtxt(f, delimiter=",", dtype=np.float32)
    images = (rows[:, :64] / 16.0).reshape(-1, 1, 8, 8).astype(np.float32)
    labels = rows[:, 64].astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    split = int(round((1 - holdout) * len(labels)))
    train, test = order[:split], order[split:]
    return (images[train], labels[train]), (images[test], labels[test])
