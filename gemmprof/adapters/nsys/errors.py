"""The one error every Nsight Systems reader raises for a file it cannot read."""

from gemmprof.errors import InputError


class ReportError(InputError):
    """An Nsight Systems report that cannot be read: truncated, not a report, or without kernels."""
