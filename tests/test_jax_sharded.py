"""sample / greedy / verify_tree (and the GPU path) under jit with logits sharded over the vocabulary and the batch.

Runs in a subprocess with 8 host CPU devices, so the device count never depends on which
test module imported jax first.
"""

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import os
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    from xgr2.jax import DraftTree, greedy, sample, verify_tree
    from xgr2.jax._dense import dense_greedy, dense_sample
    assert jax.device_count() == 8
    rng = np.random.default_rng(0)
    B, V = 8, 4096
    logits = rng.normal(size=(B, V)).astype(np.float32) * 2
    allowed = rng.random((B, V)) < 0.3
    bitmask = np.packbits(allowed, axis=-1, bitorder="little").view("<u4").view(np.int32)
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("batch", "vocab"))
    shardings = {
        "vocab": NamedSharding(mesh, P(None, ("batch", "vocab"))),
        "batch": NamedSharding(mesh, P(("batch", "vocab"), None)),
        "both": NamedSharding(mesh, P("batch", "vocab")),
    }
    key = jax.random.key(0)
    kw = [dict(), dict(temperature=0.7, top_k=20), dict(top_p=0.8), dict(min_p=0.1, top_p=0.95)]
    for name, sh in shardings.items():
        x = jax.device_put(logits, sh)
        m = jax.device_put(bitmask, NamedSharding(mesh, P(sh.spec[0], None)))
        assert (np.asarray(greedy(x, m)) == np.asarray(greedy(logits, bitmask))).all(), name
        for k in kw:
            got = np.asarray(jax.jit(lambda key, x, m: sample(key, x, m, **k))(key, x, m))
            want = np.asarray(sample(key, logits, bitmask, **k))
            assert (got == want).all(), (name, k, got, want)
        # The GPU path (xgr2.jax._dense), which a GPU mesh would take, partitions too.
        t, mp = jnp.full((B,), 0.8, jnp.float32), jnp.full((B,), 0.05, jnp.float32)
        for fn, args in ((dense_greedy, (None,)), (lambda *a: dense_sample(key, *a), (t, mp, None))):
            got = np.asarray(jax.jit(fn)(x, m, *args))
            assert (got == np.asarray(jax.jit(fn)(logits, bitmask, *args))).all(), (name, "dense")
    # verify_tree with [B, N, V] logits sharded over the vocabulary
    N = 4
    tl = rng.normal(size=(B, N, V)).astype(np.float32)
    tm = np.broadcast_to(bitmask[:, None], (B, N, bitmask.shape[1])).copy()
    tree = DraftTree.from_parents(np.tile([-1, 0, 0, 1], (B, 1)), rng.integers(0, V, (B, N)))
    x = jax.device_put(tl, NamedSharding(mesh, P(None, None, ("batch", "vocab"))))
    for method in ("greedy", "speculative"):
        got = verify_tree(key, x, tm, tree, method=method)
        want = verify_tree(key, tl, tm, tree, method=method)
        for a, b in zip(got, want):
            assert (np.asarray(a) == np.asarray(b)).all(), method
    print("OK")
    """
)


def test_sharded_matches_unsharded():
    env = dict(os.environ)
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    import xgr2

    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(xgr2.__file__))] + sys.path
    )
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd="/", capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and "OK" in out.stdout, out.stderr[-3000:]
