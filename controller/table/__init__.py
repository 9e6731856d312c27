"""The table: a facade (`controller.table.table.Table`) over collaborators, one per concern.

Import from the modules themselves (`controller.table.table`, `.machine`, `.state`, ...);
this package re-exports nothing, so importing one part never runs the others.
"""
