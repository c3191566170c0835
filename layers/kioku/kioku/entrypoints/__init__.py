"""Entry-point glue shared by the Lambda handlers: Function URL events in, responses out.

Importing it checks, before any handler imports a compiled wheel, that the layer was built for the
machine it runs on: a layer for the other Architecture fails every PyNaCl import with an error that
names neither, so the function refuses to start with one that does.
"""

import os

ARCHITECTURES = {"aarch64": "arm64", "x86_64": "x86_64"}
"""uname's machine → the template's Architecture."""


class LayerBuiltForAnotherMachine(RuntimeError):
    """The layer's wheels are for another instruction set than the function's."""


def refuse_a_layer_built_for_another_machine(package_dir: str, running_on: str) -> None:
    # layers/kioku/Makefile writes the marker; a source checkout (tests, make run) has none
    try:
        with open(os.path.join(package_dir, "built-for-machine")) as marker:
            built_for = marker.read().strip()
    except FileNotFoundError:
        return
    if built_for != running_on:
        wanted = ARCHITECTURES.get(running_on, running_on)
        raise LayerBuiltForAnotherMachine(
            f"kioku's layer was built for {built_for} ({ARCHITECTURES.get(built_for, built_for)}) but this "
            f"function runs on {running_on} (Architecture={wanted}), so its compiled dependencies cannot "
            f"load: build for the stack's Architecture (`make build ARCH={wanted}`, or save "
            f"Architecture={wanted} in samconfig.toml's parameter_overrides) and deploy again"
        )


refuse_a_layer_built_for_another_machine(os.path.dirname(os.path.dirname(__file__)), os.uname().machine)
