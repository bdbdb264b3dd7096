"""``SummaryWriter``: torch.utils.tensorboard's writer API, writing TensorBoard event files directly.

No ``tensorboard``/protobuf import: messages are encoded by hand (messages.py, plugins.py) and framed
as TFRecords (event_file.py). Writing is asynchronous as in torch: each ``add_*`` queues an event, a
background thread writes it and flushes the file every ``flush_secs`` seconds; ``flush()`` makes all
added events readable on disk; ``close()`` (or leaving a ``with`` block) flushes and closes every file.
"""
import os
import time

import numpy as np

from . import embedding, hparams, images, messages, summaries
from .convert import make_np
from .event_file import EventFileWriter


class FileWriter:
    """One event file in ``log_dir``; adds serialized ``Summary``/``Event`` messages to it."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self):
        """The directory the event file is in."""
        return self.event_writer.get_logdir()

    def add_summary(self, summary, global_step=None, walltime=None):
        """Wrap a ``Summary`` in an ``Event`` (current time unless ``walltime``) and queue it. ``summary``
        is serialized bytes, or a protobuf message (as tensorboard's own summary ops make) to serialize."""
        if hasattr(summary, "SerializeToString"):
            summary = summary.SerializeToString()
        self.add_event(summary=summary, step=global_step, walltime=walltime)

    def add_event(self, step=None, walltime=None, **fields):
        """Queue an ``Event`` with the given fields (see ``messages.event``)."""
        wall_time = time.time() if walltime is None else walltime
        self.event_writer.add_event(messages.event(wall_time, int(step) if step is not None else 0, **fields))

    def flush(self):
        """Write every queued event to disk."""
        self.event_writer.flush()

    def close(self):
        """Flush and close the event file."""
        self.event_writer.close()


class SummaryWriter:
    """Writes scalars, histograms, images, text, hparams, PR curves and embeddings for TensorBoard.

    ``log_dir`` defaults to runs/<Mon DD_HH-MM-SS>_<hostname><comment>; ``purge_step`` marks the events
    at and after that step of an earlier run in the same directory as discarded (a SessionLog START).
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        if not log_dir:
            import socket
            from datetime import datetime
            log_dir = os.path.join("runs", datetime.now().strftime("%b%d_%H-%M-%S") + "_"
                                   + socket.gethostname() + comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self._projector_entries = []
        self._get_file_writer()
        self.default_bins = summaries.default_bins()

    def _get_file_writer(self):
        """The writer of log_dir's event file, reopened (as a new file) after ``close()``."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                self.file_writer.add_event(step=self.purge_step, file_version="brain.Event:2")
                self.file_writer.add_event(step=self.purge_step, session_log=messages.SESSION_LOG_START)
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        """The directory event files are written to."""
        return self.log_dir

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        """One scalar; ``new_style`` writes it as a tensor for the scalars plugin instead."""
        summary = summaries.scalar(tag, scalar_value, new_style=new_style, double_precision=double_precision)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Several scalars on one chart: each goes, under ``main_tag``, to its own event file in the
        sub-directory <log_dir>/<main_tag with '/' as '_'>_<tag>."""
        walltime = time.time() if walltime is None else walltime
        base = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            sub_dir = base + "/" + main_tag.replace("/", "_") + "_" + tag
            writer = self.all_writers.get(sub_dir)
            if writer is None:
                writer = FileWriter(sub_dir, self.max_queue, self.flush_secs, self.filename_suffix)
                self.all_writers[sub_dir] = writer
            writer.add_summary(summaries.scalar(main_tag, value), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        """A histogram of ``values``; ``bins`` as numpy.histogram's, or 'tensorflow' for TF's edges."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(summaries.histogram(tag, values, bins, max_bins), global_step,
                                            walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,
                          global_step=None, walltime=None):
        """A histogram from precomputed statistics and right bucket edges with their counts."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        summary = summaries.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """One image (layout CHW, HWC or HW; floats in [0, 1], uint8 in [0, 255])."""
        self._get_file_writer().add_summary(summaries.image(tag, img_tensor, dataformats), global_step,
                                            walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        """A batch of images, tiled into one grid image (8 per row)."""
        self._get_file_writer().add_summary(summaries.image(tag, img_tensor, dataformats), global_step,
                                            walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """A matplotlib figure (or list of figures, tiled) rendered to an image; needs matplotlib."""
        if isinstance(figure, list):
            array = np.stack([images.figure_to_chw(f, close) for f in figure])
            self.add_image(tag, array, global_step, walltime, dataformats="NCHW")
        else:
            self.add_image(tag, images.figure_to_chw(figure, close), global_step, walltime, dataformats="CHW")

    def add_audio(self, tag, snd_tensor, global_step=None, sample_rate=44100, walltime=None):
        """A mono audio clip, values in [-1, 1]."""
        self._get_file_writer().add_summary(summaries.audio(tag, snd_tensor, sample_rate), global_step,
                                            walltime)

    def add_tensor(self, tag, tensor, global_step=None, walltime=None):
        """A whole tensor (float32/64, integer or bool) as a TensorProto."""
        self._get_file_writer().add_summary(summaries.tensor(tag, tensor), global_step, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """A (markdown) string for the text plugin, under <tag>/text_summary."""
        self._get_file_writer().add_summary(summaries.text(tag, text_string), global_step, walltime)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None):
        """Hyperparameters and their metrics for the hparams plugin, in the sub-run <log_dir>/<run_name>
        (the current time by default), with each metric also written there as a scalar."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        exp, ssi, sei = hparams.summaries(hparam_dict, metric_dict, hparam_domain_discrete)
        run_dir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=run_dir) as run_writer:
            for summary in (exp, ssi, sei):
                run_writer.file_writer.add_summary(summary, global_step)
            for k, v in metric_dict.items():
                run_writer.add_scalar(k, v, global_step)

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127, weights=None,
                     walltime=None):
        """A precision-recall curve of ``predictions`` (in [0, 1]) against binary ``labels``."""
        summary = summaries.pr_curve(tag, labels, predictions, num_thresholds, weights)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_pr_curve_raw(self, tag, true_positive_counts, false_positive_counts, true_negative_counts,
                         false_negative_counts, precision, recall, global_step=None, num_thresholds=127,
                         weights=None, walltime=None):
        """A precision-recall curve from precomputed counts (``weights`` is unused, as in torch)."""
        table = np.stack([np.asarray(x) if isinstance(x, (list, tuple)) else make_np(x)
                          for x in (true_positive_counts, false_positive_counts, true_negative_counts,
                                    false_negative_counts, precision, recall)])
        summary = summaries.pr_curve_from_table(tag, table, min(num_thresholds, 127))
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_custom_scalars(self, layout):
        """The custom-scalars layout: {category: {chart: ['Multiline', tags] or ['Margin', [v, lo, hi]]}}."""
        self._get_file_writer().add_summary(summaries.custom_scalars(layout))

    def add_custom_scalars_multilinechart(self, tags, category="default", title="untitled"):
        """A custom-scalars layout with one multiline chart of ``tags``."""
        self.add_custom_scalars({category: {title: ["Multiline", tags]}})

    def add_custom_scalars_marginchart(self, tags, category="default", title="untitled"):
        """A custom-scalars layout with one margin chart of ``tags`` = [value, lower, upper]."""
        if len(tags) != 3:
            raise ValueError(f"Expected 3 tags, got {len(tags)}.")
        self.add_custom_scalars({category: {title: ["Margin", tags]}})

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None, tag="default",
                      metadata_header=None):
        """An embedding (N x D) for the projector: tsv files under <log_dir>/<step>/<tag>/ and an entry
        in <log_dir>/projector_config.pbtxt; optional per-point labels and NCHW thumbnail images."""
        mat = make_np(mat)
        global_step = 0 if global_step is None else global_step
        subdir = f"{str(global_step).zfill(5)}/{embedding.quote_tag(tag)}"
        log_dir = self._get_file_writer().get_logdir()
        save_path = os.path.join(log_dir, subdir)
        if os.path.isdir(save_path):
            print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
        elif os.path.exists(save_path):
            raise NotADirectoryError(f"Path: `{save_path}` exists, but is a file. Cannot proceed.")
        else:
            os.makedirs(save_path)
        if metadata is not None:
            if mat.shape[0] != len(metadata):
                raise ValueError("#labels should equal with #data points")
            embedding.write_metadata(metadata, save_path, metadata_header)
        sprite_dim = None
        if label_img is not None:
            label_img = make_np(label_img)
            if mat.shape[0] != label_img.shape[0]:
                raise ValueError("#images should equal with #data points")
            embedding.write_sprite(label_img, save_path)
            sprite_dim = [label_img.shape[3], label_img.shape[2]]
        if mat.ndim != 2:
            raise ValueError("mat should be 2D, where mat.size(0) is the number of data points")
        embedding.write_tensors(mat, save_path)
        self._projector_entries.append(embedding.embedding_pbtxt(
            f"{tag}:{str(global_step).zfill(5)}", f"{subdir}/tensors.tsv",
            None if metadata is None else f"{subdir}/metadata.tsv",
            None if label_img is None else f"{subdir}/sprite.png", sprite_dim))
        with open(os.path.join(log_dir, "projector_config.pbtxt"), "wb") as f:
            f.write("".join(self._projector_entries).encode("utf-8"))

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """Not supported: torch builds the graph from a TorchScript trace, which the engine does not have."""
        raise NotImplementedError("add_graph is not supported: the engine has no TorchScript tracer to build "
                                  "a graph from")

    def flush(self):
        """Write every pending event of every event file to disk."""
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self):
        """Flush and close every event file; adding again later opens new files. A second call is a no-op."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
