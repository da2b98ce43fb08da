"""A JAX training loop: JAX's own stax MLP and Adam, 30 jitted steps on random data.

    rooflint profile -- python examples/apps/jax_mlp.py

Its kernels are XLA's (fusions, Triton GEMM fusions, cuBLAS GEMMs), and its first step
compiles while XLA's autotuner times candidate kernels on the GPU, which the profile leaves
out. tests/fixtures/trace/h100-jax-mlp-trace.json is its trace on an H100 (kernels only).
"""
import jax
import jax.numpy as jnp
from jax.example_libraries import optimizers, stax

init, apply = stax.serial(stax.Dense(4096), stax.Relu, stax.Dense(4096), stax.Relu,
                          stax.Dense(10), stax.LogSoftmax)
key = jax.random.PRNGKey(0)
_, params = init(key, (-1, 1024))
opt_init, opt_update, get_params = optimizers.adam(1e-3)
state = opt_init(params)
x = jax.random.normal(key, (8192, 1024))
y = jax.nn.one_hot(jax.random.randint(key, (8192,), 0, 10), 10)


def loss(p, x, y):
    return -jnp.mean(jnp.sum(apply(p, x) * y, axis=1))


@jax.jit
def step(i, state, x, y):
    value, grads = jax.value_and_grad(loss)(get_params(state), x, y)
    return opt_update(i, grads, state), value


for i in range(30):
    state, value = step(i, state, x, y)
print("loss", float(value))
