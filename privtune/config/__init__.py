"""Study configuration files for ``privtune tune`` and ``privtune budget``.

A configuration is a TOML file with the tables ``[estimator]``, ``[search_space]``,
``[data]``, ``[search]``, ``[storage]`` and ``[report]`` (the schema is in
``docs/cli.md``). :func:`load_config` parses and validates the *whole* file
before anything else happens: every unknown key, wrong type, missing file or
unknown estimator class is reported with the dotted name of the key and what was
expected, e.g. ``search.epsilon: expected a float > 0, got "one"``. Nothing is
read from the data files by :func:`load_config` except the CSV header (column
names), and nothing is written anywhere.

:func:`public_sizes` returns the public sizes the privacy plan needs (the
validation size ``m`` and the number of classes) *without reading data values*:
from the configuration, by counting CSV rows, or from the known sizes of
scikit-learn's bundled data sets. :func:`load_data` reads the data for a run.

Layout: ``_schema`` (the error type, constants, one dataclass per table),
``_toml`` (reading TOML; the typed table accessor), ``_validate`` (each table's
checks and :func:`load_config`), ``_data`` (public sizes and data loading).
"""

from __future__ import annotations

from privtune.config._data import load_data, public_sizes, public_train_rows
from privtune.config._schema import (
    BUNDLED_DATASETS,
    ConfigError,
    DataConfig,
    EstimatorConfig,
    ReportConfig,
    SearchConfig,
    StorageConfig,
    TuneConfig,
)
from privtune.config._toml import read_toml
from privtune.config._validate import load_config

__all__ = [
    "BUNDLED_DATASETS",
    "ConfigError",
    "DataConfig",
    "EstimatorConfig",
    "ReportConfig",
    "SearchConfig",
    "StorageConfig",
    "TuneConfig",
    "load_config",
    "load_data",
    "public_sizes",
    "public_train_rows",
    "read_toml",
]
