"""The witness tests' cuttable proxy is the HIL one (hil/cuttable_proxy.py), shared with the pit."""

from hil.cuttable_proxy import CuttableProxy

__all__ = ["CuttableProxy"]
