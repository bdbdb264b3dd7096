"""Reading video files for the video datasets, through PyAV (the ``video`` extra: ``pip install flowvision[video]``).

Frames are numbered in presentation order from 0, as torchvision's datasets number them (they decode with
torchcodec, which needs PyTorch). A clip is decoded from the start of its file up to its last frame: exact for
any frame rate, variable ones included, at the price of decoding the frames before the clip (action-recognition
videos are seconds long).
"""
import numpy as np

_INSTALL = "video datasets read their files with PyAV: pip install av (or pip install flowvision[video])"


def _av():
    """The ``av`` module, or one line saying how to install it."""
    try:
        import av
    except ImportError:
        raise ImportError(_INSTALL) from None
    return av


def frame_count_and_rate(path):
    """(number of video frames, average frames per second or None) of the file at ``path``; (0, None) when it
    has no video stream. Frames are counted by demuxing the video stream's packets (no decoding)."""
    av = _av()
    with av.open(path) as container:
        if not container.streams.video:
            return 0, None
        stream = container.streams.video[0]
        rate = stream.average_rate or stream.guessed_rate
        count = sum(1 for packet in container.demux(stream) if packet.size > 0)
    return count, (float(rate) if rate else None)


def read_frames(path, first, last):
    """Frames ``first`` .. ``last`` (inclusive) of the file at ``path`` as a (T, H, W, 3) uint8 RGB array."""
    av = _av()
    frames = []
    with av.open(path) as container:
        for index, frame in enumerate(container.decode(video=0)):
            if index >= first:
                frames.append(frame.to_ndarray(format="rgb24"))
            if index >= last:
                break
    if len(frames) != last - first + 1:
        raise RuntimeError(f"{path} has {first + len(frames)} frames, clip asked for frames {first} to {last}")
    return np.stack(frames)


def read_audio(path, start_sec, end_sec):
    """The audio samples played from ``start_sec`` up to ``end_sec`` as a (channels, samples) float32 array in
    [-1, 1]; a (1, 0) array when the file has no audio stream."""
    av = _av()
    with av.open(path) as container:
        if not container.streams.audio:
            return np.empty((1, 0), np.float32)
        stream = container.streams.audio[0]
        resampler = av.AudioResampler(format="fltp", layout=stream.layout, rate=stream.rate)
        pieces, offset = [], None
        for frame in container.decode(audio=0):
            for planar in resampler.resample(frame):
                if offset is None:
                    offset = planar.time or 0.0
                pieces.append(planar.to_ndarray())
        for planar in resampler.resample(None):
            pieces.append(planar.to_ndarray())
    if not pieces:
        return np.empty((1, 0), np.float32)
    samples = np.concatenate(pieces, axis=1).astype(np.float32, copy=False)
    begin = max(int(np.ceil((start_sec - offset) * stream.rate - 1e-9)), 0)
    end = max(int(np.ceil((end_sec - offset) * stream.rate - 1e-9)), begin)
    return np.ascontiguousarray(samples[:, begin:end])
