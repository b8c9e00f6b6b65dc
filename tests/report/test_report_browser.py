"""Render the HTML report in headless Chromium and check the screenshot is a real page."""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

from privtune.report import TuningReport

CHROMIUM = "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else shutil.which("chromium")

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed")]


def _screenshot(html_path, png_path, profile_dir) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile_dir}", f"--screenshot={png_path}", "--window-size=1200,2000",
           f"file://{html_path}"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("method", ["noisy-ucb", "gp-ucb"])
def test_html_renders_in_chromium(searches, tmp_path, method):
    matplotlib_image = pytest.importorskip("matplotlib.image")
    html_path = tmp_path / f"report_{method}.html"
    png_path = tmp_path / f"report_{method}.png"
    TuningReport.from_search(searches[method]).to_html(html_path)
    proc = _screenshot(html_path, png_path, tmp_path / "profile")
    assert png_path.exists(), f"no screenshot (rc={proc.returncode}): {proc.stderr[-2000:]}"
    img = matplotlib_image.imread(png_path)
    assert img.shape[:2] == (2000, 1200)
    rgb = np.round(img[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    colours = np.unique(rgb, axis=0)
    assert len(colours) > 50, "the screenshot is (nearly) blank"
    # the dark header band is drawn, and most of the page is light background
    assert (img[5:60, :, :3].mean() < 0.25) and (img[..., :3].mean() > 0.7)
    # the guarantee badge colour is present: green for unconditional, amber for conditional
    target = np.array([0x15, 0x80, 0x3D] if method == "noisy-ucb" else [0xB4, 0x53, 0x09])
    assert (np.abs(rgb[: 200 * 1200].astype(int) - target).sum(axis=1) < 30).any()
