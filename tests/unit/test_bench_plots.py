"""The PNG plots exist, are images of the expected size, and have the data lines drawn in them."""

import numpy as np
import pytest
from matplotlib import image

from tests.unit.bench_synthetic import CPU_SWEEP
from vllm_eks.bench.plots import LATENCY_PNG, THROUGHPUT_PNG, write_plots
from vllm_eks.bench.results import load_sweep

C0, C1 = np.array([0x1F, 0x77, 0xB4]) / 255, np.array([0xFF, 0x7F, 0x0E]) / 255  # matplotlib's first two line colours


def _pixels_of(img, colour):
    return np.argwhere(np.abs(img[..., :3] - colour).max(axis=-1) < 0.02)


@pytest.fixture(scope="module")
def plots(tmp_path_factory):
    out = tmp_path_factory.mktemp("plots")
    return write_plots(load_sweep([str(CPU_SWEEP)]), out, knee=8, slo_limit=4)


def test_both_files_are_written(plots):
    assert [p.name for p in plots] == [THROUGHPUT_PNG, LATENCY_PNG]
    for p in plots:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 10_000


@pytest.mark.parametrize("name, shape", [(THROUGHPUT_PNG, (450, 700)), (LATENCY_PNG, (450, 1100))])
def test_images_hold_the_data_lines(plots, name, shape):
    img = image.imread(next(p for p in plots if p.name == name))
    assert img.shape[:2] == shape
    assert img[..., :3].std() > 0.05                      # not a blank canvas
    for colour in (C0, C1):                               # p50 / output line and p99 / total line
        px = _pixels_of(img, colour)
        assert len(px) > 200
        rows, cols = px[:, 0], px[:, 1]
        # the line spans most of the plot's width and rises or falls over its height
        assert cols.max() - cols.min() > shape[1] * (0.6 if name == THROUGHPUT_PNG else 0.3)
        assert rows.max() - rows.min() > shape[0] * 0.3
