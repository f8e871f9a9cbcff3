"""What histogram and image summaries store, computed from the NumPy values as TF 2 does:
histogram buckets, and images converted to uint8 (``tf.image.convert_image_dtype`` with
saturation)."""
import numpy as np

DEFAULT_BUCKET_COUNT = 30


def histogram_buckets(values, bucket_count=DEFAULT_BUCKET_COUNT):
    """A float64 array of shape ``[k, 3]``: rows ``(left edge, right edge, count)``.

    ``k`` is ``bucket_count`` (a negative count counts as 0).  The buckets split ``[min, max]``
    into equal widths, the last one closed; empty data gives ``k`` all-zero rows, and data of
    one value gives ``k`` buckets whose edges are that value, all of the count in the last.
    Values that are NaN (or that make the width NaN) are counted in no bucket, as in TF.
    """
    count = max(0, int(bucket_count))
    data = np.asarray(values).astype(np.float64).ravel()
    if data.size == 0 or count == 0:
        return np.zeros((count, 3), np.float64)
    low, high = data.min(), data.max()
    if low == high:
        counts = np.zeros(count, np.float64)
        counts[-1] = data.size
        edges = np.full(count, high)
        return np.stack([edges, edges, counts], axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):   # inf and NaN data, silently
        width = (high - low) / count
        index = np.minimum(np.floor((data - low) / width), count - 1)
        edges = low + np.arange(count + 1) * width
    index = index[index >= 0]               # NaN compares False: counted nowhere
    counts = np.bincount(index.astype(np.int64), minlength=count).astype(np.float64)
    edges[0], edges[-1] = low, high         # exact ends, whatever the rounding (or 0 * inf)
    return np.stack([edges[:-1], edges[1:], counts], axis=1)


def image_as_uint8(images):
    """Pixel values as uint8, as ``tf.image.convert_image_dtype(images, tf.uint8,
    saturate=True)``: floats scaled from [0, 1] (clipped, NaN as 0), wider integers shifted
    down and narrower ones scaled up from their [0, MAX] range (negative values clip to 0)."""
    images = np.asarray(images)
    kind = images.dtype.kind
    if images.dtype == np.uint8:
        return images
    if kind == "f":
        scaled = images * images.dtype.type(255.5)
        return np.nan_to_num(np.clip(scaled, 0, 255), nan=0.0).astype(np.uint8)
    if kind not in "iu":
        raise TypeError(f"image dtype must be floating point or integer, got {images.dtype}.")
    top = int(np.iinfo(images.dtype).max) + 1
    if top > 256:
        scaled = images // (top // 256)
    else:
        scaled = images.astype(np.int64) * (256 // top)
    return np.clip(scaled, 0, 255).astype(np.uint8)
