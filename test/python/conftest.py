# Eight emulated CPU devices for the JAX interop test (set before JAX is
# imported; harmless when JAX is absent).
import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
