"""``flowvision classify`` with a video classifier: each file a clip (an animated GIF's frames), its top-k
Kinetics classes equal to torchvision's on served weights; short clips and still images refused in one line."""
import numpy as np
import pytest
import torch
import torchvision
from cli_runner import check_error, run_cli
from PIL import Image
from weights_server import serving_checkpoint

# a whole video model served and run: outside the quick subset
pytestmark = pytest.mark.slow


def _write_gif(path, frames):
    """(T, H, W, 3) uint8 frames as an animated GIF (its palette shifts colours: expectations read the file)."""
    images = [Image.fromarray(frame) for frame in frames]
    images[0].save(path, save_all=True, append_images=images[1:], duration=40, loop=0)


def _frames(seed, count):
    """Smooth random frames (GIF's palette keeps them nearly intact)."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, (count, 6, 8, 3)).astype(np.uint8)
    return np.stack([np.asarray(Image.fromarray(f).resize((64, 48), Image.BILINEAR)) for f in base])


@pytest.fixture(scope="module")
def served_mc3(tmp_path_factory):
    """mc3_18 with random weights and norms, served under the manifest's file name."""
    torch.manual_seed(0)
    reference = torchvision.models.video.mc3_18().eval()
    with torch.no_grad():
        for module in reference.modules():
            if isinstance(module, torch.nn.BatchNorm3d):
                module.running_mean.uniform_(-0.1, 0.1)
                module.running_var.uniform_(0.5, 1.5)
        reference.fc.weight.mul_(50)  # clear gaps between the top classes
    with serving_checkpoint(tmp_path_factory.mktemp("video"), reference, "mc3_18", "KINETICS400_V1",
                            "mc3_18-a90a0ba3.pth") as (server, _):
        yield reference


def _expected(reference, path, k):
    """torchvision's top-k (class indices, probabilities) on the clip as read back from ``path``."""
    with Image.open(path) as image:
        frames = []
        for i in range(image.n_frames):
            image.seek(i)
            frames.append(np.asarray(image.convert("RGB")))
    clip = torch.from_numpy(np.stack(frames)).permute(0, 3, 1, 2)
    x = torchvision.models.video.MC3_18_Weights.KINETICS400_V1.transforms()(clip)
    with torch.no_grad():
        logits = reference(x[None]).double()[0]
    top, indices = logits.topk(k + 1)
    assert (top[:-1] - top[1:]).min() > 1e-3, "the reference's top-k is too close to call"
    return indices[:k].tolist(), torch.softmax(logits, 0)[indices[:k]].tolist()


def test_classify_clips_as_torchvision(served_mc3, capsys, tmp_path):
    paths = [str(tmp_path / "a.gif"), str(tmp_path / "b.gif")]
    _write_gif(paths[0], _frames(0, 5))
    _write_gif(paths[1], _frames(1, 3))  # another length: classified on its own
    code, out, err = run_cli(capsys, "classify", *paths, "--model", "mc3_18", "--topk", "3", "--device", "cpu")
    assert code == 0, err
    categories = torchvision.models.video.MC3_18_Weights.KINETICS400_V1.meta["categories"]
    blocks = out.split("\n")[1:]
    for path in paths:
        lines = blocks[blocks.index(path) + 2:blocks.index(path) + 5]
        got = [(int(line.split()[2]), float(line.split()[1]), " ".join(line.split()[3:])) for line in lines]
        indices, values = _expected(served_mc3, path, 3)
        assert [g[0] for g in got] == indices
        assert max(abs(g[1] - v) for g, v in zip(got, values)) < 1e-4
        assert [g[2] for g in got] == [categories[i] for i in indices]


def test_short_clips_are_one_line(served_mc3, capsys, tmp_path):
    still = tmp_path / "still.png"
    Image.fromarray(_frames(2, 1)[0]).save(still)
    code, out, err = run_cli(capsys, "classify", str(still), "--model", "mc3_18", "--device", "cpu")
    assert code == 0, err  # one frame is a clip for mc3_18 (no minimum length)
    check_error(run_cli(capsys, "classify", str(still), "--model", "s3d", "--weights", "KINETICS400_V1"), 4,
                r"cannot classify '.*still\.png': the model needs clips of at least 14 frames, this one has 1")
