"""JAX interop: the StableHLO text of a lowered JAX function, in the form
`partita import` reads (generic op form, with locations). Imported only
when a JAX object is given, so the package needs JAX only then."""


def lowered_text(lowered):
    """StableHLO text of a jax `Lowered` (what jax.jit(f).lower(...) gives)."""
    if not hasattr(lowered, "compiler_ir"):
        raise TypeError("expected partita IR text or a JAX Lowered object "
                        "(jax.jit(f).lower(*args)), got %s" %
                        type(lowered).__name__)
    module = lowered.compiler_ir("stablehlo")
    return module.operation.get_asm(print_generic_op_form=True,
                                    enable_debug_info=True)


def lower(function, *args):
    """jax.jit(function) lowered for `args` (a function already wrapped by
    jax.jit keeps its shardings)."""
    import jax
    if not hasattr(function, "lower"):
        function = jax.jit(function)
    return lowered_text(function.lower(*args))
