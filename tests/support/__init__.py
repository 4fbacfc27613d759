"""What the test modules share: helpers imported by name, and fixtures registered as plugins.

Helpers (import what you use, by name)::

    from support.paths import DATA, ROOT
    from support.answers import MAX_ABS_DIFF, MEAN_ABS_DIFF, assert_error, flatten_probabilities
    from support.servers import ADAPTER_COMMAND, SEMIF_SERVE, free_port, running_adapters, running_server, server_env, stop_process
    from support.aws import REGION, client_error, make_fake_gguf, patch_sessions
    from support.fake_engines import CrashingEngine, GateEngine, RoundEngine
    from support.dockerfile import dockerfile_base
    from support.faults import walk_decode_faults

Fixtures need no import: `tests/conftest.py` registers the `fixtures_*` modules (and `markers`, which
sets the tier markers) through `pytest_plugins`. `tests/` is the import root (`pythonpath` in
pyproject.toml), so `support` is importable from every test module and from a kernel or subprocess
that puts `tests/` on `sys.path`.
"""
