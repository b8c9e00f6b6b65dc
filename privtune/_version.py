"""Single source of the privtune version string."""

__version__ = "0.1.0.dev0"
