"""The fast objective evaluation is dex-retargeting's objective: same values, same gradients, same results."""

import numpy as np
import pytest

from hand_description import dex, paths
from hand_retarget.retarget import RetargetConfig, Retargeter


@pytest.fixture(scope="module")
def desc():
    return dex.load()


@pytest.mark.parametrize("method", ["dexpilot", "vector"])
def test_value_and_gradient_match_dex_retargeting(desc, method):
    urdf = str(paths.dex_urdf_path())
    orig = Retargeter(desc, urdf, RetargetConfig(method=method, fast_objective=False))
    fast = Retargeter(desc, urdf, RetargetConfig(method=method))
    oa, ob = orig._seq.optimizer, fast._seq.optimizer
    n = len(oa.idx_pin2target)
    rng = np.random.default_rng(5)
    for k in range(15):
        q = desc.couple(rng.uniform(desc.lower, desc.upper))
        ref = orig.reference(desc.landmarks(q) * rng.uniform(0.8, 1.2)).astype(np.float32)
        if k % 3 == 0:   # a pinch: DexPilot projects the thumb-index vector
            ref[0] *= 0.3
        last = rng.uniform(-0.3, 0.8, n).astype(np.float32)
        f_orig = type(oa).get_objective_function(oa, ref, np.array([]), last)
        f_fast = ob.get_objective_function(ref, np.array([]), last)
        for _ in range(3):
            x = rng.uniform(-0.3, 1.0, n)
            ga, gb = np.zeros(n), np.zeros(n)
            va, vb = f_orig(x, ga), f_fast(x, gb)
            assert vb == pytest.approx(va, rel=1e-9, abs=1e-12)
            assert np.allclose(gb, ga, rtol=1e-8, atol=1e-12)
            assert f_fast(x, np.zeros(0)) == pytest.approx(va, rel=1e-9)   # value-only calls (no gradient)


def test_same_retargeting_results_on_a_motion(desc):
    urdf = str(paths.dex_urdf_path())
    orig = Retargeter(desc, urdf, RetargetConfig(fast_objective=False))
    fast = Retargeter(desc, urdf, RetargetConfig())
    rng = np.random.default_rng(2)
    qa, qb = np.zeros(20), desc.couple(rng.uniform(desc.lower, desc.upper))
    for s in np.linspace(0.0, 1.0, 25):
        lm = desc.landmarks(desc.couple(qa + s * (qb - qa)))
        assert np.allclose(fast.retarget(lm), orig.retarget(lm), atol=1e-5)
