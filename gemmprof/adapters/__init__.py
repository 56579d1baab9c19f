"""Adapters for external tools (Nsight Compute, Nsight Systems): their files in, typed records out."""
