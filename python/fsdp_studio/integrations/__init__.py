"""Logging from training frameworks into FSDP Studio, each importing its framework only when used:

    from fsdp_studio.integrations.huggingface import FsdpStudioCallback   # Trainer(callbacks=[...])
    from fsdp_studio.integrations.lightning import FsdpStudioLogger       # Trainer(logger=[...])
    from fsdp_studio.integrations.accelerate import FsdpStudioTracker     # Accelerator(log_with=[...])

A framework that does not import raises an ImportError naming the package to install (require below).
"""


def require(module, what):
    """Imports a framework, or says which package the integration needs."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(
            f"fsdp_studio.integrations.{what} needs {module.split('.')[0]} (pip install {module.split('.')[0]}): {e}"
        ) from e
