"""Writes a test case's inputs and float64 references for kiln-run."""
import os

import numpy as np


def save_cases(out, inputs, refs):
    """OUT/NAME.npy for each input as given, OUT/ref_NAME.npy for each
    reference rounded to f32 (what kiln-run --compare reads)."""
    for k, v in inputs.items():
        np.save(os.path.join(out, k + ".npy"), v)
    for k, v in refs.items():
        np.save(os.path.join(out, "ref_" + k + ".npy"), np.asarray(v).astype(np.float32))
