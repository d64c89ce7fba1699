"""PJRT runtime: devices, executables and the compiled-model object."""
