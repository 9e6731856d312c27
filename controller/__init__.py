"""The table controller: the daemon (tabled), its CLI (tablectl) and the display service."""

__version__ = "0.2.0"
