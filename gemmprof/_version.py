"""gemmprof's version, in a module of its own so that every stage can record it without importing the package's
public functions (gemmprof.load, gemmprof.to_dataframe), which sit above all of them."""

__version__ = "0.1.0"
