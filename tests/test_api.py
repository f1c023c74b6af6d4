"""The names and parameters that lessons, labs and graders rely on (fixed by the cost-models issue)."""

import inspect

import pytest

from course_lib import collectives, compute, parallelism, units

FIXED = [
    (compute.gemm_flops, ["m", "n", "k"]),
    (compute.training_flops, ["params", "tokens"]),
    (compute.transformer_flops_per_iteration, ["batch", "seq_len", "layers", "hidden", "vocab", "recompute"]),
    (collectives.comm_time, ["phases", "latency_s", "payload_bytes", "bandwidth_bytes_per_s"]),
    (collectives.ring_allreduce_time, ["ranks", "payload_bytes", "bandwidth_bytes_per_s", "latency_s"]),
    (
        collectives.collective_time,
        ["op", "ranks", "payload_bytes", "bandwidth_bytes_per_s", "latency_s", "algorithm", "reduce_s_per_byte"],
    ),
    (collectives.busbw_factor, ["op", "ranks"]),
    (parallelism.global_batch, ["micro_batch", "grad_accum_steps", "data_parallel"]),
    (parallelism.zero_model_state_bytes, ["params", "data_parallel", "stage", "optimizer_bytes_per_param"]),
    (
        parallelism.activation_bytes_per_layer,
        ["seq_len", "micro_batch", "hidden", "heads", "tensor_parallel", "sequence_parallel", "recompute"],
    ),
    (parallelism.pipeline_bubble_fraction, ["stages", "microbatches", "virtual_stages"]),
]


@pytest.mark.parametrize("function, parameters", FIXED, ids=lambda x: getattr(x, "__name__", ""))
def test_fixed_signatures(function, parameters):
    assert list(inspect.signature(function).parameters) == parameters


def test_fixed_defaults():
    assert inspect.signature(compute.transformer_flops_per_iteration).parameters["recompute"].default is True
    assert inspect.signature(collectives.collective_time).parameters["algorithm"].default == "ring"
    assert inspect.signature(parallelism.zero_model_state_bytes).parameters["optimizer_bytes_per_param"].default == 12
    defaults = inspect.signature(parallelism.activation_bytes_per_layer).parameters
    assert (
        defaults["tensor_parallel"].default,
        defaults["sequence_parallel"].default,
        defaults["recompute"].default,
    ) == (1, False, "none")


def test_fixed_unit_names():
    for name in ("KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB", "US", "MS"):
        assert name in units.__all__


def test_every_module_lists_existing_names():
    from course_lib import budget, hardware, simulate

    for module in (units, hardware, compute, collectives, simulate, parallelism, budget):
        for name in module.__all__:
            assert hasattr(module, name), (module.__name__, name)


def test_the_packages_reexport_each_modules_names_once():
    """``parallelism`` and ``budget`` hold one concept per module; ``parallelism.X`` and ``budget.X`` reach every name
    of their modules, and no two modules export the same name (a star import would silently keep the last)."""
    import importlib
    import pkgutil

    from course_lib import budget

    for package in (parallelism, budget):
        assert len(package.__all__) == len(set(package.__all__)), package.__name__
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            for name in module.__all__:
                assert name in package.__all__ and getattr(package, name) is getattr(module, name), (module, name)
